import pytest


def sync(client, workspace):                                 # the code under test
    for status in ("new", "pending"):
        client.get("/v1/tickets", params={"workspace_id": workspace, "status": status})
    client.post("/v1/tickets/xd_aisha_khan_parking/notes", json={"body": "synced"})


def test_sync_reads_twice_and_writes_once(mock_api):
    sync(mock_api.client(), mock_api.workspaces.primary)

    assert len(mock_api.calls("listTickets")) == 2                   # by operationId
    assert mock_api.calls(path="/v1/tickets/{id}", status=404) == []  # a template
    mock_api.assert_called("GET /v1/tickets", times=2)               # method and path
    mock_api.assert_called("POST /v1/tickets/{id}/notes", times=1)
    mock_api.assert_not_called("deleteTicket")


@pytest.mark.mock_api(strict_requests=True)                  # or --mock-api-strict-requests
def test_only_requests_the_api_has(mock_api):
    assert mock_api.client().get("/v1/tickets/tk_nobody").status_code == 404  # the API's answer
