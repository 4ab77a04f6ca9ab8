"""Throughput through a session's base URL against the default session, side by side.

One mock server (the CLI, rate limit on but high); a session created over the control API.
Interleaved rounds of wrk on the same GET: the default session (`/v1/...`), the session's base
URL (`/sessions/{name}/v1/...`) and the session header (`X-Mock-Session`). The server is
pinned to CPU 0 and wrk to CPU 1. Prints requests/second of each and the ratios (target:
session URL >= 0.9 x default), and the server's CPU time per request (from /proc; on a shared
machine the wall-clock rates swing with other load, the CPU per request does not).

    python bench/bench_session_throughput.py [--rounds 3] [--seconds 8] [--connections 16]
                                             [--no-cache]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).parent))
from _servers import free_port, mock_argv, running

PATH = "/v1/conversations?workspace_id=ws_harborview&limit=20"
AUTH = "Bearer mock-write-token"


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def wrk(url: str, seconds: int, connections: int, *headers: str) -> tuple[float, int]:
    argv = ["taskset", "-c", "1", "wrk", "-t1", f"-c{connections}", f"-d{seconds}s",
            "-H", f"Authorization: {AUTH}"]
    for header in headers:
        argv += ["-H", header]
    out = subprocess.run([*argv, url], capture_output=True, text=True, check=True).stdout
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    if non2xx:
        raise SystemExit(f"{url}: {non2xx.group(1)} non-2xx responses")
    match = re.search(r"Requests/sec:\s+([\d.]+)", out)
    done = re.search(r"(\d+) requests in", out)
    assert match and done, out
    return float(match.group(1)), int(done.group(1))


def in_process(rounds: int = 15, calls: int = 4000) -> None:
    """The same GET through the ASGI app in-process (no sockets, no wrk): microseconds per
    request, interleaved rounds, the best round of each (least disturbed by other load)."""
    import asyncio

    from mockserver.engine.app import Config
    from mockserver.standalone.server import create_app

    app = create_app(Config(request_log=False, rate_limit=100_000_000))
    app.mock.sessions.create("bench")
    path, _, query = PATH.partition("?")
    headers = [(b"host", b"127.0.0.1"), (b"authorization", AUTH.encode())]

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        return None

    async def run(target: str, extra: list[tuple[bytes, bytes]]) -> float:
        started = time.perf_counter()
        for _ in range(calls):
            await app({"type": "http", "method": "GET", "path": target, "root_path": "",
                       "raw_path": target.encode(), "query_string": query.encode(),
                       "headers": [*headers, *extra]}, receive, send)
        return (time.perf_counter() - started) / calls * 1e6

    async def rounds_of() -> dict[str, list[float]]:
        kinds = {"default": (path, []), "session URL": (f"/sessions/bench{path}", []),
                 "session header": (path, [(b"x-mock-session", b"bench")])}
        out: dict[str, list[float]] = {kind: [] for kind in kinds}
        for _ in range(rounds):
            for kind, (target, extra) in kinds.items():
                out[kind].append(await run(target, extra))
        return out

    found = asyncio.run(rounds_of())
    best = {kind: min(values) for kind, values in found.items()}
    print(f"in process ({rounds} interleaved rounds x {calls} requests, best round): "
          + ", ".join(f"{kind} {us:.1f} us" for kind, us in best.items()))
    print(f"in-process ratio default/session URL: {best['default'] / best['session URL']:.2f}  "
          f"default/session header: {best['default'] / best['session header']:.2f}  "
          "(target >= 0.90)")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=int, default=8)
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--no-cache", action="store_true",
                        help="serve with the response cache off (every request walked)")
    args = parser.parse_args()
    in_process()
    if not shutil.which("wrk"):
        raise SystemExit("wrk is needed: apt-get install wrk")

    port = free_port()
    base = f"http://127.0.0.1:{port}"
    extra = ["--rate-limit", "100000000", "--quiet"]
    if args.no_cache:
        extra += ["--response-cache", "0"]
    with running(mock_argv(port, *extra), f"{base}/v1", {"Authorization": AUTH}, cpu=0) as proc:
        httpx.post(f"{base}/__mock__/sessions", json={"name": "bench"}).raise_for_status()
        default_body = httpx.get(base + PATH, headers={"Authorization": AUTH}).content
        session_body = httpx.get(f"{base}/sessions/bench{PATH}",
                                 headers={"Authorization": AUTH}).content
        assert default_body == session_body, "the session should answer as the default does"
        kinds = {
            "default": (base + PATH, ()),
            "session URL": (f"{base}/sessions/bench{PATH}", ()),
            "session header": (base + PATH, ("X-Mock-Session: bench",)),
        }
        results: dict[str, list[float]] = {kind: [] for kind in kinds}
        cpu_us: dict[str, list[float]] = {kind: [] for kind in kinds}
        for _ in range(args.rounds):
            for kind, (url, headers) in kinds.items():
                before = cpu_seconds(proc.pid)
                rate, requests = wrk(url, args.seconds, args.connections, *headers)
                results[kind].append(rate)
                cpu_us[kind].append((cpu_seconds(proc.pid) - before) / requests * 1e6)
        journal = httpx.get(f"{base}/__mock__/requests", params={"session": "bench",
                                                                 "limit": 1}).json()
    median = {kind: statistics.median(r) for kind, r in results.items()}
    cache = "off" if args.no_cache else "on"
    print(f"GET {PATH} (response cache {cache}; {args.rounds} rounds x {args.seconds} s, "
          f"{args.connections} connections)")
    for kind in kinds:
        rounds = ", ".join(f"{r:.0f}" for r in results[kind])
        print(f"  {kind:<15} {median[kind]:9.0f} req/s  (rounds: {rounds})")
    print(f"ratio session URL / default:    {median['session URL'] / median['default']:.2f}"
          "  (target >= 0.90)")
    print(f"ratio session header / default: {median['session header'] / median['default']:.2f}")
    cpu = {kind: statistics.median(r) for kind, r in cpu_us.items()}
    print("server CPU per request (robust on a shared machine): "
          + ", ".join(f"{kind} {cpu[kind]:.0f} us" for kind in kinds))
    print(f"CPU ratio default/session URL: {cpu['default'] / cpu['session URL']:.2f}  "
          f"default/session header: {cpu['default'] / cpu['session header']:.2f}  "
          "(the throughput ratio at a saturated CPU; target >= 0.90)")
    print(f"(session journal entries recorded: {journal['total']})")


if __name__ == "__main__":
    main()
