"""The example of docs/living-workspace.md: a client that dispatches and waits, and one that
handles a failed run, tested against a mock whose runs progress on its clock."""

from __future__ import annotations

import pytest
from runs import RunFailed, cost_of, dispatch_and_wait

from mockserver.engine.progression import Refused

AGENT = "ag_harbor_concierge"
TRIGGER = "tr_harbor_concierge_precheckin"  # a cron trigger, dispatched by hand here


def test_dispatch_and_wait(mock_api):
    mock_api.progression.set("agent_runs", mode="time", running_after=1, done_after=6)
    client = mock_api.client()
    started = mock_api.clock.now()
    run = dispatch_and_wait(client, AGENT, TRIGGER, sleep=mock_api.clock.advance)
    assert run["status"] == "completed"
    assert run["duration_ms"] == 6000 and run["completed_at"] > started
    assert run["token_usage"]["input"] > 0 and cost_of([run]) == run["total_cost"] > 0


def test_a_failed_run_is_reported(mock_api):
    mock_api.script_agent(AGENT, [{"status": "failed", "error": "Model provider timeout"}])
    with pytest.raises(RunFailed, match="Model provider timeout"):
        dispatch_and_wait(mock_api.client(), AGENT, TRIGGER, sleep=mock_api.clock.advance)
    assert mock_api.scripts()["misses"] == []


def test_a_run_failed_by_hand_cannot_complete_again(mock_api):
    mock_api.progression.set("agent_runs", mode="manual")
    client = mock_api.client()
    with pytest.raises(TimeoutError):  # manual: nothing moves until the test says so
        dispatch_and_wait(client, AGENT, TRIGGER, sleep=mock_api.clock.advance, timeout=30)
    [run] = [r for r in client.get(f"/v1/agents/{AGENT}/runs").json()["data"]
             if r["status"] == "accepted" and r["trigger_id"] == TRIGGER]
    failed = mock_api.transition("agent_runs", run["id"], "failed", error="Twilio error 30006")
    assert failed["status"] == "failed" and failed["error"] == "Twilio error 30006"
    with pytest.raises(Refused) as refused:
        mock_api.transition("agent_runs", run["id"], "completed")
    assert refused.value.status == 409 and "is failed" in str(refused.value)


@pytest.mark.mock_api(progression="immediate")
def test_the_marker_sets_the_mode(mock_api):
    run = dispatch_and_wait(mock_api.client(), AGENT, TRIGGER, sleep=pytest.fail)
    assert run["status"] == "completed"  # no wait at all
