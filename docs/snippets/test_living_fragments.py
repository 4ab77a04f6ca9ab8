"""The fragments of the living-workspace page (docs/living-workspace.md), run as printed."""

from pathlib import Path

HERE = Path(__file__).parent


def test_the_progression_modes_fragment(mock_api):
    exec((HERE / "living-progression-modes.py").read_text(), {"mock_api": mock_api})
    modes = mock_api.progression.get()
    assert modes["agent_runs"]["mode"] == "time" and modes["messages"]["mode"] == "manual"


def test_the_script_agent_fragment(mock_api):
    exec((HERE / "living-script-agent.py").read_text(), {"mock_api": mock_api})
    assert mock_api.scripts()["agents"]


def test_the_transition_fragment(mock_api):
    mock_api.progression.set("agent_runs", mode="manual")
    mock_api.progression.set("messages", mode="manual")
    client = mock_api.client()
    answer = client.post("/v1/agents/ag_harbor_concierge/run",
                         json={"trigger_id": "tr_harbor_concierge_precheckin"})
    dispatched = answer.json()["data"]["run_id"]
    runs = client.get("/v1/agents/ag_harbor_concierge/runs", params={"limit": 50}).json()["data"]
    [run_id] = [r["id"] for r in runs if r["run_id"] == dispatched]
    sent = client.post("/v1/conversations/ph_emma_clarke/messages", json={"body": "See you soon"})
    message_id = sent.json()["data"]["id"]
    exec((HERE / "living-transition.py").read_text(),
         {"mock_api": mock_api, "run_id": run_id, "message_id": message_id})
    runs = client.get("/v1/agents/ag_harbor_concierge/runs", params={"limit": 50}).json()["data"]
    [run] = [r for r in runs if r["id"] == run_id]
    assert run["status"] == "failed" and run["error"] == "Model provider timeout"
    page = client.get("/v1/conversations/ph_emma_clarke/messages",
                      params={"limit": 100}).json()["data"]
    assert [m["status"] for m in page if m["id"] == message_id] == ["failed"]
