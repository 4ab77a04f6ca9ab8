"""Tests of ticketdesk.py against the Workspace API mock (the `mock_api` fixture comes from the
workspace-api-mock package's pytest plugin; nothing to import or configure)."""

from __future__ import annotations

import pytest
from ticketdesk import TicketDesk


@pytest.fixture
def desk(mock_api):
    desk = TicketDesk(mock_api.base_url, mock_api.tokens.write, sleep=lambda seconds: None)
    yield desk
    desk.close()


def test_lists_every_open_ticket_across_pages(mock_api, desk):
    added = mock_api.add("tickets", status="pending", subject="Broken kettle")
    tickets = desk.open_tickets(mock_api.workspaces.primary)
    assert added["id"] in {t["id"] for t in tickets}
    assert {t["status"] for t in tickets} <= {"new", "pending"}
    # What the code sent: the filter, and a cursor on every page after the first.
    sent = mock_api.requests(method="GET", path="/v1/tickets")
    assert sent[0].query == {"workspace_id": mock_api.workspaces.primary, "status": "open",
                             "limit": "2"}
    assert all("cursor" in r.query for r in sent[1:])
    assert sent[0].headers["authorization"] != f"Bearer {mock_api.tokens.write}"  # redacted


def test_resolves_a_ticket(mock_api, desk):
    ticket = mock_api.add("tickets", status="new")
    resolved = desk.resolve(ticket["id"])
    assert resolved["status"] == "resolved"
    # The clock is frozen (writes still get strictly increasing milliseconds): exact times.
    assert resolved["resolved_at"] == "2026-11-01T12:00:00.001Z"
    mock_api.clock.advance(3600)
    assert desk.resolve(mock_api.add("tickets", status="new")["id"])["resolved_at"] \
        == "2026-11-01T13:00:00.001Z"


def test_retries_once_after_a_503(mock_api, desk):
    ticket = mock_api.add("tickets", status="new")
    mock_api.fault(method="POST", path="/v1/tickets/{id}/resolve", status=503, count=1)
    assert desk.resolve(ticket["id"])["status"] == "resolved"
    assert [r.status for r in mock_api.requests(method="POST")] == [503, 200]


@pytest.mark.mock_api(rate_limit=3)
def test_backs_off_when_rate_limited(mock_api):
    waits = []
    desk = TicketDesk(mock_api.base_url, mock_api.tokens.write, sleep=waits.append, retries=0)
    for _ in range(3):
        desk.open_tickets(mock_api.workspaces.secondary)
    with pytest.raises(Exception, match="429"):
        desk.open_tickets(mock_api.workspaces.secondary)
    mock_api.clock.advance(60)  # the next window, without sleeping
    desk.open_tickets(mock_api.workspaces.secondary)
    desk.close()


def test_in_process_transport(mock_api):
    desk = TicketDesk(mock_api.base_url, mock_api.tokens.write, transport=mock_api.transport())
    assert desk.open_tickets(mock_api.workspaces.primary)
    desk.close()
