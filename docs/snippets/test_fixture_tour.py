import httpx
import pytest


def resolve(base_url, token, ticket_id, retries=1):
    """The code under test: resolve a ticket, retrying once after a 5xx."""
    with httpx.Client(base_url=base_url, headers={"Authorization": f"Bearer {token}"}) as http:
        for _ in range(retries + 1):
            answer = http.post(f"/v1/tickets/{ticket_id}/resolve")
            if answer.status_code < 500:
                break
        answer.raise_for_status()
        return answer.json()["data"]


def test_resolves_a_ticket(mock_api):
    ticket = mock_api.add("tickets", status="new")          # a copy of a fixture record, new id
    assert resolve(mock_api.base_url, mock_api.tokens.write, ticket["id"])["status"] == "resolved"
    [sent] = mock_api.requests(method="POST")               # the request journal, token redacted
    assert sent.path == f"/v1/tickets/{ticket['id']}/resolve"
    assert mock_api.get("tickets", ticket["id"])["status"] == "resolved"


def test_retries_once_after_a_503(mock_api):
    ticket = mock_api.add("tickets", status="new")
    mock_api.fault(method="POST", path="/v1/tickets/{id}/resolve", status=503, count=1)
    resolve(mock_api.base_url, mock_api.tokens.write, ticket["id"])  # also delay=..., drop=True
    assert [r.status for r in mock_api.requests(method="POST")] == [503, 200]


@pytest.mark.mock_api(rate_limit=3)                          # also fixtures=[...], seed=, clock=
def test_backs_off(mock_api):
    client = mock_api.client()
    for _ in range(3):
        client.get("/v1/tickets", params={"workspace_id": "ws_alpine"})
    assert client.get("/v1/tickets", params={"workspace_id": "ws_alpine"}).status_code == 429
    mock_api.clock.advance(60)                               # the next rate-limit window, no sleeping
    assert client.get("/v1/tickets", params={"workspace_id": "ws_alpine"}).status_code == 200
    assert mock_api.clock.now() == "2026-11-01T12:01:00.000Z"  # frozen, moved only by the test
