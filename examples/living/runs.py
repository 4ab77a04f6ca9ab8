"""Client code under test: dispatch an agent and wait for its run to end.

`sleep` is injected: the real code passes `time.sleep`; a test passes the mock's clock
(`mock_api.clock.advance`), so waiting takes no wall time and is deterministic.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import httpx


class RunFailed(Exception):
    def __init__(self, run: dict[str, Any]) -> None:
        super().__init__(f"run {run['run_id']} failed: {run['error']}")
        self.run = run


def dispatch_and_wait(client: httpx.Client, agent_id: str, trigger_id: str, *,
                      sleep: Callable[[float], None] = time.sleep, poll: float = 1.0,
                      timeout: float = 120.0) -> dict[str, Any]:
    """Dispatch the agent's trigger, poll its runs until the run ends; the completed run, or
    RunFailed; TimeoutError past `timeout` seconds."""
    answer = client.post(f"/v1/agents/{agent_id}/run", json={"trigger_id": trigger_id})
    answer.raise_for_status()
    run_id = answer.json()["data"]["run_id"]
    waited = 0.0
    while True:
        runs = client.get(f"/v1/agents/{agent_id}/runs", params={"limit": 50})
        runs.raise_for_status()
        run = next(r for r in runs.json()["data"] if r["run_id"] == run_id)
        if run["status"] == "completed":
            return run
        if run["status"] == "failed":
            raise RunFailed(run)
        if waited >= timeout:
            raise TimeoutError(f"run {run_id} still {run['status']} after {timeout} s")
        sleep(poll)
        waited += poll


def cost_of(runs: list[dict[str, Any]]) -> float:
    """What a dashboard shows: the total cost of the runs that ended."""
    return round(sum(r["total_cost"] for r in runs if r["status"] in ("completed", "failed")), 6)
