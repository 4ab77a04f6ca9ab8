"""What the pytest plugin costs: the per-test reset, reset plus first reads on large generated
datasets, a whole downstream test through the public fixture, and the session start.

    python bench/bench_pytest_plugin.py [--runs 200] [--scales 10000,100000] [--tests 40]
                                        [--rounds 7] [--big-rounds 2] [--public-only]

About two minutes with the defaults (most of it loading the 100k dataset in its runs).

reset: `MockApp.reset()` with the default fixtures, after a test-like workload (a list that
builds an index, a write, a journal entry, a fault) so it has something to undo. Targets:
mean and p95 <= 5 ms.
reset + first reads: on the default fixtures and on datasets generated with `fixtures
generate --scale N` (kept in /tmp/mockserver-bench-N), the response cache off: three list reads
(contacts, conversations, tickets; one write before each reset) warm, then after `reset()`.
Per-test overhead = (reset + reads) - warm reads; target: flat in the dataset's size.
public fixture: a downstream project (generated in a temporary directory, run by pytest in a
subprocess) of `--tests` tests, each `mock_api.client()` and three list reads; the time of each
test is its whole `pytest_runtest_protocol` (setup + call + teardown + pytest's reporting),
the first test (session start, dataset load, first index builds) apart. pytest's own cost per
test is measured the same way on a baseline run: the same project and conftest, the same
number of tests, each an empty test without `mock_api`. Wall time and CPU time (process
time: the test's thread and the server's) are measured for each test. A round is one baseline
run and then one run on each dataset, back to back, so that load on the shared machine hits
them alike; a round's figure is its downstream median less its baseline median. Printed: the
median over the rounds (each round's figure beside it), wall and CPU; the CPU figure moves
less with other work on the machine. The generated datasets (their load dominates a run) take
part in the first `--big-rounds` rounds. Target: net <= 5 ms per test on the default fixtures,
at most 5 ms more on the generated datasets.
session start: server thread start to the first response (uvicorn up, the default mock built,
one GET /v1 answered). Target <= 1 s. Run in a fresh process (nothing cached).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).parent))
from _datasets import dataset

from mockserver.engine.app import Config, MockApp
from mockserver.standalone.server import create_app
from mockserver.testing.plugin import MockApiConfig, MockServer

READS = ("/v1/contacts", "/v1/conversations", "/v1/tickets")
CLOCK = "2026-11-01T12:00:00.000Z"


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def reset_default(server: MockServer, runs: int) -> None:
    mock, app = server.mock_for(MockApiConfig())
    server.dispatch.target = app
    headers = {"Authorization": "Bearer mock-write-token"}
    with httpx.Client(base_url=server.base_url, headers=headers) as client:
        resets: list[float] = []
        params: dict[str, str | int] = {"workspace_id": "ws_harborview", "limit": 5}
        for _ in range(runs):
            client.get("/v1/tickets", params=params)
            client.post("/v1/tickets/xd_aisha_khan_parking/resolve")
            mock.state.add_fault(path="/v1/agents", status=503)
            t0 = time.perf_counter()
            mock.reset()
            resets.append((time.perf_counter() - t0) * 1000)
    mean, p95 = statistics.fmean(resets), percentile(resets, 95)
    print(f"reset (MockApp.reset, default fixtures, {runs} runs): "
          f"mean {mean:.3f} ms, p95 {p95:.3f} ms, max {max(resets):.3f} ms  [target <= 5 ms]")


def reset_and_reads(server: MockServer, label: str, fixtures: list[Path], runs: int) -> None:
    started = time.perf_counter()
    mock = MockApp(Config(fixtures=fixtures, frozen_clock=CLOCK, rate_limit=0,
                          response_cache=0, request_log=False, journal_size=1000))
    loaded = time.perf_counter() - started
    server.dispatch.target = create_app(mock=mock)
    records = sum(len(rows) for rows in mock.dataset.tables.values())
    ws = "ws_harborview"
    headers = {"Authorization": "Bearer mock-write-token"}
    with httpx.Client(base_url=server.base_url, headers=headers) as client:

        def reads() -> float:
            t0 = time.perf_counter()
            for path in READS:
                response = client.get(path, params={"workspace_id": ws})
                assert response.status_code == 200, response.text
            return (time.perf_counter() - t0) * 1000

        t0 = time.perf_counter()
        reads()  # the first ever: builds the seed's indexes (once per dataset)
        first_ever = (time.perf_counter() - t0) * 1000
        warm: list[float] = []
        after_reset: list[float] = []
        for _ in range(runs):  # interleaved, so that load on the machine hits both alike
            warm.append(reads())
            contact = next(iter(mock.store.rows("contacts")))
            client.patch(f"/v1/contacts/{contact}", json={"first_name": "Changed"},
                         params={"workspace_id": ws})
            t0 = time.perf_counter()
            mock.reset()
            after_reset.append((time.perf_counter() - t0) * 1000 + reads())
    w, r = statistics.median(warm), statistics.median(after_reset)
    print(f"  {label:>9} ({records:,} records; load {loaded:.1f} s, first reads ever "
          f"{first_ever:.0f} ms): median warm reads {w:.2f} ms, reset + first reads {r:.2f} ms "
          f"(p95 {percentile(after_reset, 95):.2f}), per-test overhead {r - w:.2f} ms, "
          f"ratio to warm {r / w:.2f}x")


DOWNSTREAM_CONFTEST = '''
import json, os, time
import pytest

_times = []

@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    t0, c0 = time.perf_counter(), time.process_time()
    yield
    _times.append(((time.perf_counter() - t0) * 1000, (time.process_time() - c0) * 1000))

def pytest_sessionfinish(session):
    with open(os.environ["BENCH_TIMES"], "w") as fh:
        json.dump(_times, fh)
'''

DOWNSTREAM_TEST = '''
import pytest

@pytest.mark.parametrize("n", range({tests}))
def test_three_reads(mock_api, n):
    client = mock_api.client()
    ws = mock_api.workspaces.primary
    for path in {reads!r}:
        assert client.get(path, params={{"workspace_id": ws}}).status_code == 200
'''

# pytest's own cost per test: the same project, conftest and number of tests, no mock_api.
BASELINE_TEST = '''
import pytest

@pytest.mark.parametrize("n", range({tests}))
def test_three_reads(n):
    assert n >= 0
'''


def run_downstream(source: str, fixtures: list[Path], tests: int) -> list[list[float]]:
    """(wall ms, CPU ms) of each test of one pytest run of `source` in a fresh project."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "conftest.py").write_text(DOWNSTREAM_CONFTEST)
        (root / "test_downstream.py").write_text(
            textwrap.dedent(source.format(tests=tests, reads=READS)))
        times = root / "times.json"
        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                   "-p", "no:randomly", "-p", "no:xdist", str(root / "test_downstream.py")]
        for path in fixtures:
            command += ["--mock-api-fixtures", str(path)]
        done = subprocess.run(command, cwd=root, capture_output=True, text=True,
                              env={**os.environ, "BENCH_TIMES": str(times)}, check=False)
        if done.returncode != 0:
            print(done.stdout[-3000:], done.stderr[-3000:])
            raise SystemExit("the downstream run failed")
        result: list[list[float]] = json.loads(times.read_text())
        return result


def _medians(times: list[list[float]]) -> tuple[float, float]:
    """Median wall and median CPU ms per test of one run, its first test (session start,
    dataset load, first index builds) left out."""
    rest = times[1:]
    return statistics.median(w for w, _ in rest), statistics.median(c for _, c in rest)


def public_fixture(datasets: list[tuple[str, list[Path]]], tests: int, rounds: int,
                   big_rounds: int) -> dict[str, tuple[float, float]]:
    """Per dataset, the median over rounds of (wall, CPU) ms per test net of pytest's own.

    Each round runs the baseline (an empty test, no mock_api) and then the downstream project
    on each dataset, one after the other, so that load on the shared machine hits a round's
    runs alike; a round's figure is its downstream median less its baseline median (wall and
    CPU apart). The generated datasets (slow to load in every run) take part in the first
    `big_rounds` rounds only."""
    net: dict[str, list[tuple[float, float]]] = {label: [] for label, _ in datasets}
    firsts: dict[str, list[float]] = {label: [] for label, _ in datasets}
    raw: dict[str, list[float]] = {label: [] for label, _ in datasets}
    base_rounds: list[tuple[float, float]] = []
    for n in range(rounds):
        base_wall, base_cpu = _medians(run_downstream(BASELINE_TEST, [], tests))
        base_rounds.append((base_wall, base_cpu))
        for label, fixtures in datasets:
            if fixtures and n >= big_rounds:
                continue
            per_test = run_downstream(DOWNSTREAM_TEST, fixtures, tests)
            wall, cpu = _medians(per_test)
            firsts[label].append(per_test[0][0])
            raw[label].append(wall)
            net[label].append((wall - base_wall, cpu - base_cpu))
    print(f"  baseline (an empty test, no mock_api): median wall "
          f"{statistics.median(w for w, _ in base_rounds):.2f} ms, CPU "
          f"{statistics.median(c for _, c in base_rounds):.2f} ms per test")
    found = {}
    for label, figures in net.items():
        walls, cpus = [w for w, _ in figures], [c for _, c in figures]
        found[label] = (statistics.median(walls), statistics.median(cpus))
        print(f"  {label:>9}: first test {statistics.median(firsts[label]):.0f} ms (session "
              f"start, load, index builds); then per test, net of pytest's own: wall "
              f"{found[label][0]:.2f} ms (rounds: {', '.join(f'{w:.2f}' for w in walls)}), CPU "
              f"{found[label][1]:.2f} ms (rounds: {', '.join(f'{c:.2f}' for c in cpus)}); raw "
              f"median {statistics.median(raw[label]):.2f} ms  ({len(figures)} rounds x "
              f"{tests - 1} tests)")
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--scales", default="10000,100000",
                        help="generated dataset sizes (contacts), comma-separated; '' for none")
    parser.add_argument("--tests", type=int, default=40, help="downstream tests per run")
    parser.add_argument("--rounds", type=int, default=7,
                        help="rounds of a baseline run and a run on the default fixtures")
    parser.add_argument("--big-rounds", type=int, default=2,
                        help="of those rounds, how many also run on the generated datasets")
    parser.add_argument("--public-only", action="store_true",
                        help="only the public fixture figures (and the session start)")
    args = parser.parse_args()
    scales = [int(s) for s in args.scales.split(",") if s.strip()]

    datasets: list[tuple[str, list[Path]]] = [("default", [])] + [(f"{s // 1000}k", [dataset(s)]) for s in scales]
    started = time.perf_counter()
    server = MockServer()
    thread_up = time.perf_counter() - started
    _mock, app = server.mock_for(MockApiConfig())
    server.dispatch.target = app
    with httpx.Client(base_url=server.base_url) as client:
        assert client.get("/v1", headers={"Authorization": "Bearer mock-write-token"}
                          ).status_code == 200
    session_start = time.perf_counter() - started

    if not args.public_only:
        reset_default(server, args.runs)
        print("reset + first reads (three lists, cache off, in-process server; "
              f"{min(args.runs, 100)} runs each):")
        for label, fixtures in datasets:
            reset_and_reads(server, label, fixtures, min(args.runs, 100))
    server.stop()

    print(f"public fixture (a downstream test: mock_api.client() + three list reads, "
          f"{args.tests} tests per run; wall and CPU ms per test, both threads):")
    found = public_fixture(datasets, args.tests, args.rounds, args.big_rounds)
    base = found["default"]
    for i, what in enumerate(("wall", "CPU")):
        print(f"  per test, net, median of rounds ({what}): default {base[i]:.2f} ms; "
              + ", ".join(f"{k} {v[i] - base[i]:+.2f} ms" for k, v in found.items()
                          if k != "default") + "  [targets <= 5 ms; <= +5 ms]")
    print(f"session start (thread start -> first response): {session_start * 1000:.0f} ms "
          f"(uvicorn up in {thread_up * 1000:.0f} ms)  [target <= 1000 ms]")


if __name__ == "__main__":
    main()
