"""Fork every test of a module from one expensive set-up, on sessions of one mock server.

`mock_api_origin` (overridden here, module scope) runs the set-up once and saves it as a
snapshot; each test's `mock_api` is then a fresh session forked from it: the test may change
anything, and the next test starts from the set-up again, not from the fixtures. Under
`pytest -n 2 --mock-api-share-server` the xdist workers share one server, each test in its own
session. Only the API and the control API are used, so both ways run the same tests.
"""

from __future__ import annotations

import pytest

WS = "ws_harborview"


def open_tickets(client):
    page = client.get("/v1/tickets", params={"workspace_id": WS, "status": "open",
                                             "limit": 100}).json()
    return {t["id"] for t in page["data"]}


@pytest.fixture(scope="module")
def mock_api_origin(mock_api_snapshot):
    def set_up(api):  # runs once for the module, in a session of its own
        client = api.client()
        for ticket in sorted(open_tickets(client))[:2]:
            assert client.post(f"/v1/tickets/{ticket}/resolve").status_code == 200
            client.post(f"/v1/tickets/{ticket}/notes", json={"body": "resolved in set-up"})
        api.clock.advance(3600)
    return mock_api_snapshot(set_up)


@pytest.fixture
def resolved_in_setup(mock_api):
    client = mock_api.client()
    page = client.get("/v1/tickets", params={"workspace_id": WS, "status": "resolved",
                                             "limit": 100}).json()
    return sorted(t["id"] for t in page["data"])


def test_every_test_starts_from_the_set_up(mock_api, resolved_in_setup):
    assert len(resolved_in_setup) >= 2
    # The clock starts where the set-up left it (frozen one hour after the default instant).
    assert mock_api.clock.now() == "2026-11-01T13:00:00.000Z"
    assert mock_api.base_url.endswith(f"/sessions/{mock_api.session}")


@pytest.mark.parametrize("round_", range(3))
def test_changes_stay_in_the_test(mock_api, resolved_in_setup, round_):
    client = mock_api.client()
    reopened = resolved_in_setup[0]
    assert client.post(f"/v1/tickets/{reopened}/reopen").status_code == 200
    assert reopened in open_tickets(client)  # here, until the test ends
    # Only this test's requests are in its journal (the set-up's are not).
    assert [r.path for r in mock_api.requests(method="POST")] == [
        f"/v1/tickets/{reopened}/reopen"]


def test_faults_and_resets_are_per_test(mock_api, resolved_in_setup):
    client = mock_api.client()
    mock_api.fault(method="GET", path="/v1/tickets", status=503, count=1)
    assert client.get("/v1/tickets", params={"workspace_id": WS}).status_code == 503
    client.post(f"/v1/tickets/{resolved_in_setup[0]}/reopen")
    mock_api.reset()  # back to the snapshot, not to the fixtures
    page = client.get("/v1/tickets", params={"workspace_id": WS, "status": "resolved",
                                             "limit": 100}).json()
    assert sorted(t["id"] for t in page["data"]) == resolved_in_setup
