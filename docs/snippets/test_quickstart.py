def test_lists_conversations(mock_api):
    client = mock_api.client()  # httpx, the write token preset, pointed at this test's mock
    answer = client.get("/v1/conversations", params={"workspace_id": "ws_harborview"})
    assert answer.status_code == 200
    assert answer.json()["data"]
