"""Progression through the control API (spec/control-openapi.yaml, tag `progression`): modes,
guarded transitions, scripted outcomes; per session, kept by snapshots and forks, and one
state for every worker on Redis shared state."""

from __future__ import annotations

from typing import Any

import pytest
from starlette.testclient import TestClient

from mockserver.engine.app import MockApp

AGENT = "ag_harbor_concierge"
CRON = "tr_harbor_concierge_precheckin"


def dispatch(api: TestClient, base: str = "") -> dict[str, Any]:
    answer = api.post(f"{base}/v1/agents/{AGENT}/run", json={"trigger_id": CRON})
    assert answer.status_code == 200, answer.text
    run_id = answer.json()["data"]["run_id"]
    runs = api.get(f"{base}/v1/agents/{AGENT}/runs", params={"limit": 100}).json()["data"]
    [run] = [r for r in runs if r["run_id"] == run_id]
    return run


def run(api: TestClient, key: str, base: str = "") -> dict[str, Any]:
    answer = api.get(f"{base}/v1/agents/{AGENT}/runs/{key}")
    assert answer.status_code == 200, answer.text
    found: dict[str, Any] = answer.json()["data"]
    return found


def advance(api: TestClient, seconds: float, base: str = "") -> None:
    assert api.post(f"{base}/__mock__/clock",
                    json={"advance_seconds": seconds}).status_code == 200


def test_modes_are_read_and_set_and_refused_naming_the_field(api: TestClient) -> None:
    modes = api.get("/__mock__/progression").json()["kinds"]
    assert modes["agent_runs"] == {"mode": "time", "running_after": 2, "done_after": 12}
    put = api.put("/__mock__/progression", json={"kinds": {"agent_runs": {
        "mode": "time", "running_after": 1, "done_after": 6}}})
    assert put.status_code == 200 and put.json()["kinds"]["agent_runs"]["done_after"] == 6
    for bad, field in [({"kinds": {"agent_runs": {"mode": "later"}}}, "mode"),
                       ({"kinds": {"tickets": {"mode": "time"}}}, "kind"),
                       ({"kinds": {"messages": {"done_after": "soon"}}}, "done_after")]:
        refused = api.put("/__mock__/progression", json=bad)
        assert refused.status_code == 400 and field in refused.json()["error"], refused.text
    assert api.get("/__mock__/progression").json()["kinds"]["agent_runs"]["done_after"] == 6
    api.post("/__mock__/reset")
    assert api.get("/__mock__/progression").json()["kinds"]["agent_runs"]["done_after"] == 12


def test_a_manual_run_is_failed_by_a_transition_and_cannot_complete_again(
        api: TestClient) -> None:
    api.put("/__mock__/progression", json={"kinds": {"agent_runs": {"mode": "manual"}}})
    key = dispatch(api)["id"]
    advance(api, 86400)
    assert run(api, key)["status"] == "accepted"
    moved = api.post(f"/__mock__/records/agent_runs/{key}/transition",
                     json={"status": "failed", "error": "Model provider timeout"})
    assert moved.status_code == 200, moved.text
    assert moved.json()["data"] == run(api, key)
    assert run(api, key)["status"] == "failed"
    again = api.post(f"/__mock__/records/agent_runs/{key}/transition",
                     json={"status": "completed"})
    assert again.status_code == 409 and "is failed" in again.json()["error"]
    missing = api.post("/__mock__/records/agent_runs/ar_nope/transition",
                       json={"status": "failed"})
    assert missing.status_code == 404 and "ar_nope" in missing.json()["error"]
    other = api.post("/__mock__/records/tickets/x/transition", json={"status": "failed"})
    assert other.status_code == 404
    api.put("/__mock__/progression", json={"kinds": {"workflow_executions": {"mode": "manual"}}})
    typed = api.post("/__mock__/records/workflow_executions/wx_review_lucas/transition",
                     json={"status": "FAILED", "error_summary": 5})
    assert typed.status_code == 400 and "error_summary" in typed.json()["error"]
    executions = api.get("/v1/workflows/wf_review_request_v1/executions",
                         params={"workspace_id": "ws_harborview"}).json()["data"]
    assert {x["status"] for x in executions if x["execution_id"] == "wx_review_lucas"} == {
        "RUNNING"}
    key2 = dispatch(api)["id"]
    for body, field in [({"status": "exploded"}, "status"),
                        ({"status": "failed", "duration_ms": -5}, "duration_ms"),
                        ({"status": "failed", "colour": "red"}, "colour"),
                        ({"error": "x"}, "status")]:
        refused = api.post(f"/__mock__/records/agent_runs/{key2}/transition", json=body)
        assert refused.status_code == 400 and field in refused.json()["error"], refused.text
    assert run(api, key2)["status"] == "accepted"  # nothing half-applied


def test_a_scripted_agent_takes_two_outcomes_and_the_third_dispatch_is_a_listed_miss(
        api: TestClient) -> None:
    api.put("/__mock__/progression", json={"kinds": {"agent_runs": {"mode": "immediate"}}})
    outcomes = [
        {"response": "Your door code is 4821.",  # status: completed by default
         "disposition": "resolved", "token_usage": {"input": 10, "output": 5},
         "duration_ms": 1234, "tool_trace": [{"name": "send_door_code", "input": {},
                                              "output": {"sent": True}}]},
        {"status": "failed", "error": "Twilio error 30006"},
    ]
    put = api.put(f"/__mock__/scripts/agents/{AGENT}", json={"outcomes": outcomes})
    assert put.status_code == 200 and put.json()["data"]["remaining"] == 2
    first, second, third = (run(api, dispatch(api)["id"]) for _ in range(3))
    assert first["status"] == "completed" and first["response"] == "Your door code is 4821."
    assert first["disposition"] == "resolved" and first["duration_ms"] == 1234
    assert first["tool_trace"][0]["name"] == "send_door_code"
    assert first["total_cost"] == round(10 * 3e-6 + 5 * 15e-6, 6)
    assert put.json()["data"]["outcomes"][0]["status"] == "completed"
    assert second["status"] == "failed" and second["error"] == "Twilio error 30006"
    assert third["status"] == "completed" and third["disposition"] == "answered"
    scripts = api.get("/__mock__/scripts").json()["data"]
    assert scripts["agents"][AGENT]["consumed"] == 2
    assert scripts["agents"][AGENT]["remaining"] == 0
    assert [c["record"] for c in scripts["consumed"]] == [first["id"], second["id"]]
    assert [m["record"] for m in scripts["misses"]] == [third["id"]]
    assert "exhausted" in scripts["misses"][0]["why"] and scripts["missed"] == 1


def test_scripts_are_checked_against_the_document(api: TestClient) -> None:
    for outcome, field in [({"status": "completed", "token_usage": {"input": -1,
                                                                    "output": 0}},
                            "token_usage"),
                           ({"status": "running"}, "status"),
                           ({"response": 5}, "response"),
                           ({"mood": "happy"}, "mood")]:
        refused = api.put(f"/__mock__/scripts/agents/{AGENT}",
                          json={"outcomes": [{"status": "completed"}, outcome]})
        assert refused.status_code == 400, refused.text
        assert "outcomes/1" in refused.json()["error"] and field in refused.json()["error"]
    assert api.get("/__mock__/scripts").json()["data"]["agents"] == {}
    assert api.put("/__mock__/scripts/agents/ag_nope", json={"outcomes": []}
                   ).status_code == 404
    bad = api.put("/__mock__/scripts/workflows/wf_door_code_v2",
                  json={"outcomes": [{"status": "DONE"}]})
    assert bad.status_code == 400 and "outcomes/0" in bad.json()["error"]


def test_a_scripted_workflow_dispatch_fails_as_scripted(api: TestClient) -> None:
    api.put("/__mock__/scripts/workflows/wf_door_code_v2", json={"outcomes": [
        {"status": "FAILED", "error_summary": "Step 'send_code' failed: lock offline"}]})
    added = api.post("/__mock__/records/workflow_executions",
                     json={"workflow_id": "wf_door_code_v2", "master_id": "wm_door_code"})
    assert added.status_code == 201, added.text
    key = added.json()["data"]["execution_id"]
    assert added.json()["data"]["status"] == "STARTED"
    advance(api, 120)
    listed = api.get("/v1/workflows/wf_door_code_v2/executions",
                     params={"workspace_id": "ws_harborview"}).json()["data"]
    [execution] = [x for x in listed if x["execution_id"] == key]
    assert execution["status"] == "FAILED"
    assert execution["error_summary"] == "Step 'send_code' failed: lock offline"
    events = api.get(f"/v1/workflows/wf_door_code_v2/executions/{key}/events",
                     params={"workspace_id": "ws_harborview"}).json()["data"]
    assert [e["type"] for e in events] == ["TRIGGERED", "STEP_STARTED", "STEP_FAILED", "FAILED"]


def test_two_sessions_progress_independently(api: TestClient) -> None:
    for name in ("a", "b"):
        assert api.post("/__mock__/sessions", json={"name": name}).status_code == 201
    api.put("/sessions/a/__mock__/progression",
            json={"kinds": {"agent_runs": {"mode": "manual"}}})
    in_a, in_b = dispatch(api, "/sessions/a"), dispatch(api, "/sessions/b")
    advance(api, 60, "/sessions/a")
    advance(api, 60, "/sessions/b")
    assert run(api, in_a["id"], "/sessions/a")["status"] == "accepted"
    assert run(api, in_b["id"], "/sessions/b")["status"] == "completed"
    assert api.get("/sessions/b/__mock__/progression").json()["kinds"]["agent_runs"][
        "mode"] == "time"


def test_a_snapshot_and_its_fork_agree(api: TestClient) -> None:
    api.post("/__mock__/sessions", json={"name": "setup"})
    api.put("/sessions/setup/__mock__/progression",
            json={"kinds": {"agent_runs": {"mode": "time", "running_after": 5,
                                           "done_after": 100}}})
    api.put(f"/sessions/setup/__mock__/scripts/agents/{AGENT}",
            json={"outcomes": [{"status": "failed", "error": "boom"}]})
    key = dispatch(api, "/sessions/setup")["id"]
    advance(api, 10, "/sessions/setup")
    assert api.post("/__mock__/snapshots", json={"name": "mid", "session": "setup"}
                    ).status_code == 201
    api.post("/__mock__/sessions", json={"name": "fork", "snapshot": "mid"})
    for base in ("/sessions/setup", "/sessions/fork"):
        assert run(api, key, base)["status"] == "running"
    for base in ("/sessions/setup", "/sessions/fork"):
        advance(api, 100, base)
    shown = [run(api, key, base) for base in ("/sessions/setup", "/sessions/fork")]
    assert shown[0] == shown[1] and shown[0]["status"] == "failed"
    assert shown[0]["error"] == "boom"


def test_a_session_past_its_memory_cap_is_refused_and_keeps_nothing(
        api: TestClient, module_mock: MockApp, monkeypatch: pytest.MonkeyPatch) -> None:
    api.post("/__mock__/sessions", json={"name": "small"})
    monkeypatch.setattr(module_mock.sessions, "max_change_bytes", 1)
    refused = api.put(f"/sessions/small/__mock__/scripts/agents/{AGENT}",
                      json={"outcomes": [{"status": "completed"}]})
    assert refused.status_code == 507, refused.text
    assert api.get("/sessions/small/__mock__/scripts").json()["data"]["agents"] == {}


def test_robustness_mode_varies_a_run_state_and_the_clock_leaves_it(api: TestClient) -> None:
    item = {"kind": "enum", "operation": "getAgentRun", "table": "agent_runs",
            "record": "ar_sarah_cohen_01", "field": "status", "value": "running"}
    path = "/v1/agents/ag_harbor_copilot/runs/ar_sarah_cohen_01"
    assert run_status(api, path) == "completed"  # accepted at 08:30, done by noon
    assert api.put("/__mock__/variations", json={"plan": [item]}).status_code == 200
    assert run_status(api, path) == "running"
    advance(api, 3600)
    assert run_status(api, path) == "running"  # held: the clock does not complete it
    assert api.put("/__mock__/variations", json={"plan": []}).status_code == 200
    assert run_status(api, path) == "completed"


def run_status(api: TestClient, path: str) -> str:
    answer = api.get(path)
    assert answer.status_code == 200, answer.text
    return str(answer.json()["data"]["status"])


def test_a_record_added_with_an_unreadable_progress_is_refused(api: TestClient) -> None:
    for bad in ({"start": "soon"}, {"outcome": {"token_usage": "many"}}, {"colour": 1}):
        refused = api.post("/__mock__/records/agent_runs",
                           json={"agent_id": AGENT, "status": "accepted", "_progress": bad})
        assert refused.status_code == 400 and "_progress" in refused.json()["error"], bad
    # A readable one is taken, and an outcome that is no end of the kind ends as the default.
    added = api.post("/__mock__/records/agent_runs", json={
        "agent_id": AGENT, "status": "accepted", "completed_at": None,
        "_progress": {"start": 1_700_000_000_000, "outcome": {"status": "indexed"}}})
    assert added.status_code == 201, added.text
    assert run(api, added.json()["data"]["id"])["status"] == "completed"
