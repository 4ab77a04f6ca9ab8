"""Insights: the conversation automation rate."""

from __future__ import annotations

from .conftest import ALPINE, HARBOR, Factory

START, END = "2030-01-01T00:00:00.000Z", "2030-02-01T00:00:00.000Z"
INSIDE = "2030-01-15T00:00:00.000Z"


def rate(client, **params) -> dict:
    r = client.get("/v1/insights/conversation-automation-rate",
                   params={"workspace_id": HARBOR, **params})
    assert r.status_code == 200, r.text
    return r.json()["data"]


def test_rate_over_a_window(client, make: Factory) -> None:
    assert rate(client, start=START, end=END)["total_conversations"] == 0
    assert rate(client, start=START, end=END)["automation_rate"] == 0
    automated = make.contact()
    make.agent_run(automated["id"], created_at=INSIDE, autopilot_sent=True)
    make.message(automated["id"], created_at=INSIDE)  # the guest's message
    human = make.contact()
    make.agent_run(human["id"], created_at=INSIDE, autopilot_sent=True)
    make.message(human["id"], created_at=INSIDE, direction="outbound", status="sent",
                 sender={"user_id": make.user_id(), "external_id": None, "name": "Maria"})
    copilot = make.contact()
    make.agent_run(copilot["id"], created_at=INSIDE, autopilot_sent=False)
    created = make.contact(created_at=INSIDE)
    outside = make.contact()
    make.agent_run(outside["id"], created_at=END, autopilot_sent=True)  # end is exclusive
    alpine = make.contact(ALPINE)
    make.agent_run(alpine["id"], ws=ALPINE, created_at=INSIDE)
    del created
    got = rate(client, start=START, end=END)
    assert got["total_conversations"] == 4
    assert got["automated_conversations"] == 1
    assert got["automation_rate"] == 0.25
    assert (got["period_start"], got["period_end"], got["workspace_id"]) == (START, END, HARBOR)
    # start is inclusive
    assert rate(client, start=INSIDE, end=END)["automated_conversations"] == 1


def test_default_window_and_bad_bounds(client) -> None:
    got = rate(client)
    assert got["period_end"] == "2026-11-01T12:00:00.000Z"
    assert got["period_start"] == "2026-10-02T12:00:00.000Z"
    assert 0 <= got["automation_rate"] <= 1
    got = rate(client, end="2026-10-31T00:00:00.000Z")
    assert got["period_start"] == "2026-10-01T00:00:00.000Z"
    for params in ({"start": END, "end": START}, {"start": START, "end": START},
                   {"start": "2027-01-01T00:00:00.000Z"}):
        r = client.get("/v1/insights/conversation-automation-rate",
                       params={"workspace_id": HARBOR, **params})
        assert r.status_code == 400 and "'start'" in r.json()["error"]
