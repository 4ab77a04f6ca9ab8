import httpx
import pytest


def sync_tickets(base_url, token):
    """The client under test: every ticket of a workspace, asking again after a 429."""
    with httpx.Client(base_url=base_url, headers={"Authorization": f"Bearer {token}"}) as http:
        for _ in range(10):
            answer = http.get("/v1/tickets", params={"workspace_id": "ws_harborview"})
            if answer.status_code != 429:
                break
        answer.raise_for_status()
        return [ticket["id"] for ticket in answer.json()["data"]]


@pytest.mark.mock_api_robust(kinds=["null", "rate-limit"], operations=["listTickets"],
                             max_examples=20, deadline=None)
def test_sync(mock_api):
    sync_tickets(mock_api.base_url, mock_api.token())
