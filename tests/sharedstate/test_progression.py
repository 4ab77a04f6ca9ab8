"""Progression on Redis shared state: what moves with the clock is a function of what the log
holds (the run, its start and outcome, the session's modes and scripts) and the clock, so two
workers read the same state at the same clock, and a transition or script on one is seen by
the other."""

from __future__ import annotations

from typing import Any

from starlette.testclient import TestClient

from .conftest import Workers

AGENT = "ag_harbor_concierge"
CRON = "tr_harbor_concierge_precheckin"


def runs(client: TestClient) -> list[dict[str, Any]]:
    answer = client.get(f"/v1/agents/{AGENT}/runs", params={"limit": 100})
    assert answer.status_code == 200, answer.text
    found: list[dict[str, Any]] = answer.json()["data"]
    return found


def test_two_workers_see_the_same_state_at_the_same_clock(workers: Workers) -> None:
    a, b = workers.add(), workers.add()
    assert a.put("/__mock__/progression", json={"kinds": {"agent_runs": {
        "mode": "time", "running_after": 1, "done_after": 6}}}).status_code == 200
    assert a.put(f"/__mock__/scripts/agents/{AGENT}", json={"outcomes": [
        {"status": "failed", "error": "Model provider timeout"}]}).status_code == 200
    dispatched = a.post(f"/v1/agents/{AGENT}/run", json={"trigger_id": CRON})
    run_id = dispatched.json()["data"]["run_id"]
    for seconds, status in ((0, "accepted"), (1, "running"), (5, "failed")):
        if seconds:
            assert b.post("/__mock__/clock", json={"advance_seconds": seconds}
                          ).status_code == 200
        seen = [[r for r in runs(c) if r["run_id"] == run_id] for c in (a, b)]
        assert seen[0] == seen[1] and seen[0][0]["status"] == status
    assert seen[0][0]["error"] == "Model provider timeout"
    assert b.get("/__mock__/scripts").json()["data"]["agents"][AGENT]["consumed"] == 1
    # A transition on one worker is read on the other.
    b.put("/__mock__/progression", json={"kinds": {"agent_runs": {"mode": "manual"}}})
    second = a.post(f"/v1/agents/{AGENT}/run", json={"trigger_id": CRON}).json()["data"]
    [key] = [r["id"] for r in runs(a) if r["run_id"] == second["run_id"]]
    moved = b.post(f"/__mock__/records/agent_runs/{key}/transition",
                   json={"status": "completed", "response": "Done."})
    assert moved.status_code == 200, moved.text
    shown = a.get(f"/v1/agents/{AGENT}/runs/{key}").json()["data"]
    assert shown["status"] == "completed" and shown["response"] == "Done."
    assert a.post(f"/__mock__/records/agent_runs/{key}/transition",
                  json={"status": "failed"}).status_code == 409


def test_cron_runs_are_dispatched_once_for_all_workers(workers: Workers) -> None:
    a, b = workers.add(), workers.add()
    assert a.post("/__mock__/clock", json={"advance_seconds": 22 * 3600}).status_code == 200
    cron = [[r for r in runs(c) if r["trigger_id"] == CRON] for c in (a, b)]
    assert cron[0] == cron[1] and len(cron[0]) == 1
