"""Sessions: the time to create a session and to fork one from a snapshot, on the default
fixtures and on a generated 100k-record dataset, and the memory of 1,000 sessions that each
made ten writes (through the pipeline: POST /v1/skills, journal on).

In process (no sockets): the figures are the registry's own cost. Targets: create and fork
at most 1 ms on both datasets; 1,000 sessions x 10 writes at most 100 MiB.

    python bench/bench_sessions.py [--runs 300] [--sessions 1000] [--writes 10]
                                   [--dataset DIR]   # a 100k dataset (generated when omitted)
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import statistics
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).parent))
from _datasets import dataset

from mockserver.data.fixtures import default_fixtures_dir
from mockserver.engine.app import Config, MockApp
from mockserver.standalone.server import create_app

TOKEN = {"Authorization": "Bearer mock-write-token"}


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q / 100))]


def records(mock: MockApp) -> int:
    return sum(len(rows) for rows in mock.state.dataset.tables.values())


def time_create(mock: MockApp, runs: int, snapshot: str | None = None) -> list[float]:
    """Milliseconds per create (each deleted again, so the registry stays small)."""
    times = []
    for i in range(runs):
        name = f"b{i}"
        t0 = time.perf_counter()
        mock.sessions.create(name, snapshot=snapshot)
        times.append((time.perf_counter() - t0) * 1000)
        mock.sessions.delete(name)
    return times


def first_page_ms(mock: MockApp, app: Any, session: str, workspace: str) -> float:
    """The first list request in a new session (does it reuse the seed's indexes?)."""
    async def run() -> float:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://b") as client:
            t0 = time.perf_counter()
            r = await client.get(f"/sessions/{session}/v1/tickets",
                                 params={"workspace_id": workspace, "limit": 20}, headers=TOKEN)
            assert r.status_code == 200, r.text
            return (time.perf_counter() - t0) * 1000
    return asyncio.run(run())


def setup_snapshot(mock: MockApp, app: Any, workspace: str, writes: int) -> str:
    """A session with `writes` new skills, saved as snapshot `setup`."""
    mock.sessions.create("setup")
    asyncio.run(_writes(app, ["setup"], writes, workspace))
    mock.sessions.save_snapshot("setup", "setup")
    mock.sessions.delete("setup")
    return "setup"


async def _writes(app: Any, names: list[str], writes: int, workspace: str) -> None:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://b", headers=TOKEN) as c:
        for name in names:
            for i in range(writes):
                r = await c.post(f"/sessions/{name}/v1/skills", json={
                    "workspace_id": workspace, "name": f"bench-{i}", "description": "d",
                    "body": "b", "auto_assign_to_existing_v2_agents": False})
                assert r.status_code == 201, r.text


def dataset_figures(label: str, config: Config, runs: int) -> None:
    started = time.perf_counter()
    mock = MockApp(config)
    app = create_app(mock=mock)
    load_s = time.perf_counter() - started
    workspace = next(iter(mock.state.dataset.tables["workspaces"]))
    create = time_create(mock, runs)
    snap = setup_snapshot(mock, app, workspace, 50)
    fork = time_create(mock, runs, snapshot=snap)
    mock.sessions.create("probe1")
    mock.sessions.create("probe2")
    first = first_page_ms(mock, app, "probe1", workspace)  # builds the seed's index
    second = first_page_ms(mock, app, "probe2", workspace)  # reuses it
    print(f"{label}: {records(mock):,} records (loaded in {load_s:.1f} s)")
    print(f"  create session       median {statistics.median(create):.3f} ms   "
          f"p95 {percentile(create, 95):.3f} ms   ({runs} runs; target <= 1 ms)")
    print(f"  fork 50-write snapshot median {statistics.median(fork):.3f} ms   "
          f"p95 {percentile(fork, 95):.3f} ms   ({runs} runs; target <= 1 ms)")
    print(f"  first page of tickets in a new session: {first:.2f} ms (builds the shared "
          f"index); in the next new session: {second:.2f} ms (reuses it)")


def memory_figures(sessions: int, writes: int) -> None:
    mock = MockApp(Config(rate_limit=0))
    app = create_app(mock=mock)
    workspace = "ws_harborview"
    asyncio.run(_writes(app, [], 0, workspace))  # warm imports
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    names = [f"m{i}" for i in range(sessions)]
    for name in names:
        mock.sessions.create(name)
    created = tracemalloc.get_traced_memory()[0]
    asyncio.run(_writes(app, names, writes, workspace))
    gc.collect()
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    journal = sum(len(mock.sessions.state(n).journal) for n in names)
    mib = (after - before) / 1048576
    print(f"memory: {sessions} sessions x {writes} writes (journal on: {journal} entries): "
          f"{mib:.1f} MiB  (empty sessions: {(created - before) / 1048576:.1f} MiB; "
          f"per session {(after - before) / sessions / 1024:.1f} KiB; target <= 100 MiB)")
    print(f"  registry's estimate of the changes: "
          f"{mock.sessions.change_bytes() / 1048576:.1f} MiB")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=300)
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--writes", type=int, default=10)
    parser.add_argument("--dataset", type=Path, default=None,
                        help="a generated 100k dataset (python -m mockserver fixtures generate "
                             "--scale 100000 --out DIR); if omitted, generated once into "
                             "/tmp/mockserver-bench-100000 and reused (bench/_datasets.py)")
    args = parser.parse_args()

    dataset_figures("default fixtures", Config(fixtures=[default_fixtures_dir()]), args.runs)
    dataset_figures("generated --scale 100000",
                    Config(fixtures=[args.dataset or dataset(100_000)]), args.runs)
    memory_figures(args.sessions, args.writes)


if __name__ == "__main__":
    main()
