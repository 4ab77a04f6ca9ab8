"""Throughput through a session's base URL against the default session, side by side.

One mock server (the CLI, rate limit on but high); a session created over the control API.
Interleaved rounds of wrk on the same GET: the default session (`/v1/...`), the session's base
URL (`/sessions/{name}/v1/...`) and the session header (`X-Mock-Session`). The server is
pinned to CPU 0 and wrk to CPU 1. Prints requests/second of each and the ratios (target:
session URL >= 0.9 x default).

    python bench/bench_session_throughput.py [--rounds 3] [--seconds 8] [--connections 16]
                                             [--no-cache]
"""

from __future__ import annotations

import argparse
import re
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).parent))
from _servers import free_port, mock_argv, running

PATH = "/v1/conversations?workspace_id=ws_harborview&limit=20"
AUTH = "Bearer mock-write-token"


def wrk(url: str, seconds: int, connections: int, *headers: str) -> float:
    argv = ["taskset", "-c", "1", "wrk", "-t1", f"-c{connections}", f"-d{seconds}s",
            "-H", f"Authorization: {AUTH}"]
    for header in headers:
        argv += ["-H", header]
    out = subprocess.run([*argv, url], capture_output=True, text=True, check=True).stdout
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    if non2xx:
        raise SystemExit(f"{url}: {non2xx.group(1)} non-2xx responses")
    match = re.search(r"Requests/sec:\s+([\d.]+)", out)
    assert match, out
    return float(match.group(1))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=int, default=8)
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--no-cache", action="store_true",
                        help="serve with the response cache off (every request walked)")
    args = parser.parse_args()
    if not shutil.which("wrk"):
        raise SystemExit("wrk is needed: apt-get install wrk")

    port = free_port()
    base = f"http://127.0.0.1:{port}"
    extra = ["--rate-limit", "100000000", "--quiet"]
    if args.no_cache:
        extra += ["--response-cache", "0"]
    with running(mock_argv(port, *extra), f"{base}/v1", {"Authorization": AUTH}, cpu=0):
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
        for _ in range(args.rounds):
            for kind, (url, headers) in kinds.items():
                results[kind].append(wrk(url, args.seconds, args.connections, *headers))
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
    print(f"(session journal entries recorded: {journal['total']})")


if __name__ == "__main__":
    main()
