from pathlib import Path

TOOL = Path(__file__).with_name("tide_check.py")  # your tool's file, e.g. tools/tide_check.py


def test_tide_tool(mock_api):
    client = mock_api.client()
    made = client.post("/v1/custom-tools", json={
        "workspace_id": mock_api.workspaces.primary, "name": "tide-check",
        "description": "Low tide", "language": "python",
        "code": TOOL.read_text(),
        "parameters": {"date": {"type": "string", "required": True, "description": "ISO date"}},
    }).json()["data"]
    run = client.post(f"/v1/custom-tools/{made['id']}/run",
                      json={"parameters": {"date": "2026-11-02"}}).json()["data"]
    assert run["success"], run["error"]
    assert run["message"] == "Low tide on Monday"
