"""What the pytest plugin costs: the per-test reset and the session start.

    python bench/bench_pytest_plugin.py [--runs 200]

reset: `MockApp.reset()` with the default fixtures, after a test-like workload (a list that
builds an index, a write, a journal entry, a fault) so it has something to undo. Targets:
mean and p95 <= 5 ms.
session start: server thread start to the first response (uvicorn up, the default mock built,
one GET /v1 answered). Target <= 1 s. Run in a fresh process (nothing cached).
"""

from __future__ import annotations

import argparse
import statistics
import time

import httpx

from mockserver.pytest_plugin import MockApiConfig, MockServer


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    args = parser.parse_args()

    started = time.perf_counter()
    server = MockServer()
    thread_up = time.perf_counter() - started
    mock, app = server.mock_for(MockApiConfig())
    server.dispatch.target = app
    headers = {"Authorization": "Bearer mock-write-token"}
    with httpx.Client(base_url=server.base_url, headers=headers) as client:
        assert client.get("/v1").status_code == 200
        session_start = time.perf_counter() - started

        resets: list[float] = []
        params = {"workspace_id": "ws_harborview", "limit": 5}
        for _ in range(args.runs):
            client.get("/v1/tickets", params=params)
            client.post("/v1/tickets/xd_aisha_khan_parking/resolve")
            mock.state.add_fault(path="/v1/agents", status=503)
            t0 = time.perf_counter()
            mock.reset()
            resets.append((time.perf_counter() - t0) * 1000)
    server.stop()

    mean, p95 = statistics.fmean(resets), percentile(resets, 95)
    print(f"reset (MockApp.reset, default fixtures, {args.runs} runs): "
          f"mean {mean:.3f} ms, p95 {p95:.3f} ms, max {max(resets):.3f} ms  [target <= 5 ms]")
    print(f"session start (thread start -> first response): {session_start * 1000:.0f} ms "
          f"(uvicorn up in {thread_up * 1000:.0f} ms)  [target <= 1000 ms]")


if __name__ == "__main__":
    main()
