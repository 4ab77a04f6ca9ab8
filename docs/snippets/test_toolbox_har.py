import json


def test_keeps_its_traffic(mock_api, tmp_path):
    client = mock_api.client()
    client.get("/v1/tickets", params={"workspace_id": mock_api.workspaces.primary})
    client.get("/v1/models")

    har = mock_api.export_har(tmp_path / "tickets.har", path="/v1/tickets")  # DevTools opens it
    [entry] = json.loads((tmp_path / "tickets.har").read_text())["log"]["entries"]
    assert entry["request"]["url"].endswith("/v1/tickets?workspace_id=ws_harborview")
    assert har["log"]["version"] == "1.2"
