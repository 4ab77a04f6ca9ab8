import pytest


def open_tickets(client):
    page = client.get("/v1/tickets", params={"workspace_id": "ws_harborview",
                                             "status": "open", "limit": 100}).json()
    return {ticket["id"] for ticket in page["data"]}


@pytest.fixture(scope="module")
def mock_api_origin(mock_api_snapshot):
    def set_up(api):                                         # once, in a session of its own
        client = api.client()
        for ticket in sorted(open_tickets(client))[:2]:
            client.post(f"/v1/tickets/{ticket}/resolve")
        api.clock.advance(3600)
    return mock_api_snapshot(set_up)                         # each test forks from it


@pytest.mark.parametrize("round_", range(2))
def test_starts_from_the_set_up(mock_api, round_):          # whatever the last test changed
    client = mock_api.client()
    assert mock_api.clock.now() == "2026-11-01T13:00:00.000Z"
    [reopened, *_] = sorted(open_tickets(client))
    client.post(f"/v1/tickets/{reopened}/resolve")           # gone at the end of this test
