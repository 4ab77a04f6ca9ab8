"""A custom tool's run on a state shared through Redis (issue 42, DECISIONS T14): the core
runs in a worker thread there, so the deferred run is answered in place, the same answer as
in memory."""

from __future__ import annotations

from .conftest import Workers


def test_a_tool_runs_on_a_shared_state(workers: Workers) -> None:
    client = workers.add(run_tool_code=True)
    response = client.post("/v1/custom-tools/kg_harbor_tides/run",
                           json={"parameters": {"date": "2026-11-02"}})
    assert response.status_code == 200, response.text
    data = response.json()["data"]
    assert data["success"] is True and data["message"].startswith("Low tide on Monday")
