"""Throughput of GET /v1/conversations?workspace_id=...&limit=20: the mock (auth and
rate-limit bookkeeping on) against a bare Starlette+uvicorn app serving the same bytes.

Side by side in one run, interleaved rounds, one worker each, the server pinned to CPU 0 and
wrk to CPU 1. Prints requests/second of each and the ratio (target: mock >= 0.8 x bare), and
the server's CPU time per request (user + system, from /proc, divided by the requests wrk
completed) with the ratio bare/mock: on a machine shared with other work, requests/second
move with the load, while CPU per request (what throughput is at saturation) hardly does. The
mock runs as served (a repeated poll is answered from its response cache, with authentication
and rate-limit bookkeeping on every request), and again with the cache off for comparison.

What makes the comparison fair: both servers run `uvicorn.run` with the same settings (one
process, httptools and uvloop when installed, no access log, log level warning), each pinned to
the same CPU, started fresh for each round and warmed by its readiness probe only; the bare app
sends the very bytes the mock answers (fetched from the mock first) with the same Content-Type
and Content-Length, through a Starlette route (routing and a Response object: what any
Starlette app pays); wrk, pinned to the other CPU, sends both the same request with the same
Authorization header over the same number of keep-alive connections; no request log on either
side (the mock runs `--quiet`), and the mock keeps its journal, its rate-limit counting (a limit
too high to answer 429) and its authentication on, as it is served by default. The rounds
interleave bare, mock and mock without cache, so that load from elsewhere hits them alike.

    python bench/bench_throughput.py [--rounds 3] [--seconds 8] [--connections 16]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).parent))
from _servers import free_port, mock_argv, running

PATH = "/v1/conversations?workspace_id=ws_harborview&limit=20"
HEADERS = {"Authorization": "Bearer mock-write-token"}


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def wrk(url: str, seconds: int, connections: int) -> tuple[float, int]:
    out = subprocess.run(
        ["taskset", "-c", "1", "wrk", "-t1", f"-c{connections}", f"-d{seconds}s",
         "-H", f"Authorization: {HEADERS['Authorization']}", url],
        capture_output=True, text=True, check=True,
    ).stdout
    match = re.search(r"Requests/sec:\s+([\d.]+)", out)
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    if non2xx:
        raise SystemExit(f"{url}: {non2xx.group(1)} non-2xx responses; is the rate limit too low?")
    done = re.search(r"(\d+) requests in", out)
    assert match and done, out
    return float(match.group(1)), int(done.group(1))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=int, default=8)
    parser.add_argument("--connections", type=int, default=16)
    args = parser.parse_args()
    if not shutil.which("wrk"):
        raise SystemExit("wrk is needed: apt-get install wrk")

    mock_port, bare_port = free_port(), free_port()
    # Rate limiting stays on: a limit high enough never to answer 429 under load.
    mock_cmd = mock_argv(mock_port, "--rate-limit", "100000000", "--quiet")
    with running(mock_cmd, f"http://127.0.0.1:{mock_port}/v1", HEADERS, cpu=0):
        body = httpx.get(f"http://127.0.0.1:{mock_port}{PATH}", headers=HEADERS).content
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as fh:
        fh.write(body)
    bare_cmd = [sys.executable, str(Path(__file__).parent / "bare_app.py"), str(bare_port), fh.name]

    # The same mock with its response cache off: every request validated, walked, rendered,
    # signed and encoded (what a client that never repeats a request costs).
    uncached_cmd = [*mock_cmd, "--response-cache", "0"]
    servers = {"bare": (bare_cmd, bare_port), "mock": (mock_cmd, mock_port),
               "uncached": (uncached_cmd, mock_port)}
    results: dict[str, list[float]] = {name: [] for name in servers}
    cpu_us: dict[str, list[float]] = {name: [] for name in servers}
    for _ in range(args.rounds):
        for name, (argv, port) in servers.items():
            ready = (f"http://127.0.0.1:{port}/v1/conversations" if name == "bare"
                     else f"http://127.0.0.1:{port}/v1")
            with running(argv, ready, HEADERS, cpu=0) as proc:
                before = cpu_seconds(proc.pid)
                rate, requests = wrk(f"http://127.0.0.1:{port}{PATH}", args.seconds,
                                     args.connections)
                cpu_us[name].append((cpu_seconds(proc.pid) - before) / requests * 1e6)
                results[name].append(rate)
    median = {name: statistics.median(rounds) for name, rounds in results.items()}
    cpu = {name: statistics.median(rounds) for name, rounds in cpu_us.items()}

    def rounds(name: str) -> str:
        return ", ".join(f"{r:.0f}" for r in results[name])

    print(f"response bytes: {len(body)}")
    print(f"bare starlette+uvicorn:        {median['bare']:9.0f} req/s  (rounds: {rounds('bare')})")
    print(f"mock (auth, rate limit):       {median['mock']:9.0f} req/s  (rounds: {rounds('mock')})")
    print(f"mock, response cache off:      {median['uncached']:9.0f} req/s  (rounds: {rounds('uncached')})")
    print(f"ratio mock/bare: {median['mock'] / median['bare']:.2f}  (target >= 0.80)")
    print(f"ratio mock with cache off/bare: {median['uncached'] / median['bare']:.2f}  "
          f"(target >= 0.60)")
    print(f"server CPU per request: bare {cpu['bare']:.0f} us, mock {cpu['mock']:.0f} us, "
          f"cache off {cpu['uncached']:.0f} us; ratios bare/mock {cpu['bare'] / cpu['mock']:.2f}, "
          f"bare/cache off {cpu['bare'] / cpu['uncached']:.2f}")


if __name__ == "__main__":
    main()
