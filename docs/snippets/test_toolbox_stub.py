import pytest


def subject_line(client, ticket_id):                         # the code under test
    return client.get(f"/v1/tickets/{ticket_id}").json()["data"]["subject"][:40]


def test_survives_the_payload_production_sent_yesterday(mock_api):
    client = mock_api.client()
    odd = client.get("/v1/tickets/xd_aisha_khan_parking").json()
    odd["data"]["subject"] = "x" * 500
    mock_api.stub("GET", "/v1/tickets/{id}", json=odd)       # the next request only
    assert subject_line(client, "xd_aisha_khan_parking") == "x" * 40
    assert subject_line(client, "xd_aisha_khan_parking") != "x" * 40  # the state again


def test_an_answer_the_document_does_not_allow(mock_api):
    with pytest.raises(ValueError, match="field 'json'"):
        mock_api.stub("GET", "/v1/tickets/{id}", json={"data": {"id": 7}})
    mock_api.stub("GET", "/v1/tickets/{id}", json={"data": {"id": 7}}, validate=False)
    assert mock_api.client().get("/v1/tickets/xd_aisha_khan_parking").json()["data"]["id"] == 7
    assert mock_api.last_request.off_contract
