"""Shared state on Redis (`serve --state`) against the in-memory mock, side by side in one run.

1. Throughput (wrk, interleaved rounds, median), for three servers: in memory with one worker,
   shared with one worker, shared with two workers. Loads: uncached 20-item list reads
   (GET /v1/conversations?workspace_id=...&limit=20, response cache off) and a mixed load
   (four such reads to one write: POST /v1/kb/nodes). Ratios to in memory.
2. The latency a cross-worker read-your-write adds: a write through one `serve` process, then
   a read of that record through another (which first applies the write), against the same
   read when nothing is new.
3. Memory of Redis (INFO used_memory over an empty server) for a namespace serving the default
   fixtures and `fixtures generate --scale 100000`, at start and after 1,000 writes.

The mock's workers and redis-server are pinned to CPU 0 (`--server-cpus`, `--redis-cpus`),
wrk to CPU 1, as bench_throughput.py pins server and load: the shared mock gets the same one
core as the in-memory one, Redis's work included, and the CPU figure per request adds the
workers' and Redis's. On a two-core machine two workers share CPU 0, so the two-worker figure
shows what sharing costs, not how it scales.

    python bench/bench_shared.py [--rounds 3] [--seconds 6] [--connections 16]
                                 [--skip-large] [--large-dir DIR] [--server-cpus 0]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).parent))
from _datasets import dataset
from _servers import free_port, wait_ready

TOKEN = "mock-write-token"
HEADERS = {"Authorization": f"Bearer {TOKEN}"}
READ = "/v1/conversations?workspace_id=ws_harborview&limit=20"
WRITE = "/v1/kb/nodes?workspace_id=ws_harborview"

MIXED_LUA = """
counter = 0
request = function()
  counter = counter + 1
  if counter %% 5 == 0 then
    return wrk.format("POST", "%(write)s",
      {["Authorization"] = "Bearer %(token)s", ["Content-Type"] = "application/json"},
      '{"title": "bench", "body": "a note written under load"}')
  end
  return wrk.format("GET", "%(read)s", {["Authorization"] = "Bearer %(token)s"})
end
"""


@contextlib.contextmanager
def redis_server(cpu: str) -> Iterator[tuple[str, int]]:
    port = free_port()
    directory = tempfile.mkdtemp(prefix="bench-redis-")
    proc = subprocess.Popen(["taskset", "-c", cpu, "redis-server", "--port", str(port),
                             "--bind", "127.0.0.1", "--dir", directory, "--save", "",
                             "--appendonly", "no"], stdout=subprocess.DEVNULL)
    url = f"redis://127.0.0.1:{port}/0"
    try:
        import redis

        client = redis.Redis.from_url(url)
        for _ in range(200):
            try:
                client.ping()
                break
            except redis.ConnectionError:
                time.sleep(0.02)
        yield url, proc.pid
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        shutil.rmtree(directory, ignore_errors=True)


@contextlib.contextmanager
def serving(cpus: str, port: int, *extra: str) -> Iterator[subprocess.Popen[bytes]]:
    argv = ["taskset", "-c", cpus, sys.executable, "-m", "mockserver", "serve",
            "--port", str(port), "--quiet", "--rate-limit", "100000000",
            "--response-cache", "0", *extra]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        wait_ready(f"http://127.0.0.1:{port}/v1", HEADERS, timeout=300)
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process and its descendants so far (Linux /proc)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    total, todo = 0.0, [pid]
    while todo:
        current = todo.pop()
        try:
            fields = Path(f"/proc/{current}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        todo += children.get(current, [])
    return total


def wrk(url: str, seconds: int, connections: int, script: str | None = None) -> float:
    argv = ["taskset", "-c", "1", "wrk", "-t1", f"-c{connections}", f"-d{seconds}s",
            "-H", f"Authorization: Bearer {TOKEN}"]
    if script:
        argv += ["-s", script]
    out = subprocess.run([*argv, url], capture_output=True, text=True, check=True).stdout
    requests = re.search(r"(\d+) requests in", out)
    assert requests, out
    wrk.requests = int(requests.group(1))  # type: ignore[attr-defined]
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    if non2xx:
        raise SystemExit(f"{url}: {non2xx.group(1)} non-2xx responses:\n{out}")
    match = re.search(r"Requests/sec:\s+([\d.]+)", out)
    assert match, out
    return float(match.group(1))


def throughput(args: argparse.Namespace, url: str) -> None:
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as fh:
        fh.write(MIXED_LUA % {"write": WRITE, "read": READ, "token": TOKEN})
        mixed = fh.name
    servers = {
        "in memory, 1 worker": [],
        "shared, 1 worker": ["--state", url, "--state-namespace", "bench-1"],
        "shared, 2 workers": ["--state", url, "--state-namespace", "bench-2",
                              "--workers", "2"],
    }
    loads = {"uncached reads": None, "mixed 4:1": mixed}
    results: dict[tuple[str, str], list[float]] = {(s, ld): [] for s in servers for ld in loads}
    cpu_us: dict[tuple[str, str], list[float]] = {(s, ld): [] for s in servers for ld in loads}
    for _ in range(args.rounds):
        for name, extra in servers.items():
            port = free_port()
            with serving(args.server_cpus, port, *extra) as proc:
                base = f"http://127.0.0.1:{port}"
                for load, script in loads.items():
                    httpx.post(f"{base}/__mock__/reset")
                    before = cpu_seconds(proc.pid) + cpu_seconds(args.redis_pid)
                    results[(name, load)].append(
                        wrk(f"{base}{READ}", args.seconds, args.connections, script))
                    used = cpu_seconds(proc.pid) + cpu_seconds(args.redis_pid) - before
                    cpu_us[(name, load)].append(used / wrk.requests * 1e6)  # type: ignore[attr-defined]
    os.unlink(mixed)
    print(f"throughput (req/s, median of {args.rounds} rounds of {args.seconds} s, "
          f"{args.connections} connections; workers on CPU {args.server_cpus}, Redis on CPU "
          f"{args.redis_cpus}), and server CPU per request (mock workers + Redis, from /proc: "
          "steadier than req/s on a shared machine):")
    for load in loads:
        base = statistics.median(results[("in memory, 1 worker", load)])
        base_cpu = statistics.median(cpu_us[("in memory, 1 worker", load)])
        for name in servers:
            got = results[(name, load)]
            median = statistics.median(got)
            cpu = statistics.median(cpu_us[(name, load)])
            rounds = ", ".join(f"{r:.0f}" for r in got)
            print(f"  {load:<15} {name:<20} {median:8.0f} req/s  x{median / base:.2f}   "
                  f"{cpu:6.0f} us CPU/req  (in memory / this: x{base_cpu / cpu:.2f})  "
                  f"(rounds: {rounds})")


def read_your_write(args: argparse.Namespace, url: str) -> None:
    ports = free_port(), free_port()
    extra = ["--state", url, "--state-namespace", "bench-ryw"]
    with serving(args.server_cpus, ports[0], *extra), \
            serving(args.server_cpus, ports[1], *extra):
        a = httpx.Client(base_url=f"http://127.0.0.1:{ports[0]}", headers=HEADERS)
        b = httpx.Client(base_url=f"http://127.0.0.1:{ports[1]}", headers=HEADERS)
        after_write, nothing_new = [], []
        for i in range(args.samples):
            created = a.post(WRITE, json={"title": f"n{i}", "body": "x"}).json()["data"]
            path = f"/v1/kb/nodes/{created['id']}"
            started = time.perf_counter()
            assert b.get(path).status_code == 200
            after_write.append((time.perf_counter() - started) * 1000)
            started = time.perf_counter()
            assert b.get(path).status_code == 200
            nothing_new.append((time.perf_counter() - started) * 1000)
        a.close()
        b.close()

    def q(values: list[float], p: float) -> float:
        return sorted(values)[int(p * (len(values) - 1))]

    print(f"cross-worker read-your-write ({args.samples} writes through one process, each "
          "read through the other):")
    for name, values in (("read after a write", after_write), ("read, nothing new", nothing_new)):
        print(f"  {name:<20} p50 {q(values, 0.5):6.2f} ms  p90 {q(values, 0.9):6.2f} ms")
    print(f"  added by applying the write: p50 {q(after_write, 0.5) - q(nothing_new, 0.5):.2f} ms")


def redis_memory(args: argparse.Namespace, url: str) -> None:
    import redis

    client = redis.Redis.from_url(url)
    datasets: list[tuple[str, list[str]]] = [("default fixtures", [])]
    if not args.skip_large:
        directory = args.large_dir or dataset(100_000)
        datasets.append(("--scale 100000", ["--fixtures", str(directory)]))
    print("Redis memory (used_memory over the empty server):")
    for name, extra in datasets:
        client.flushall()
        empty = int(client.info("memory")["used_memory"])
        port = free_port()
        with serving(args.server_cpus, port, "--state", url, "--state-namespace", "mem",
                     *extra):
            started = int(client.info("memory")["used_memory"]) - empty
            with httpx.Client(base_url=f"http://127.0.0.1:{port}", headers=HEADERS) as c:
                for i in range(1000):
                    c.post(WRITE, json={"title": f"n{i}", "body": "a note of some length"})
            written = int(client.info("memory")["used_memory"]) - empty
        print(f"  {name:<17} at start {started / 1024:8.1f} KiB; after 1,000 writes "
              f"{written / 1024:8.1f} KiB")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=int, default=6)
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--samples", type=int, default=300)
    parser.add_argument("--server-cpus", default="0")
    parser.add_argument("--redis-cpus", default="0")
    parser.add_argument("--skip-large", action="store_true",
                        help="no memory figure for the 100,000-contact dataset")
    parser.add_argument("--large-dir", type=Path, help="a generated 100k dataset (default: "
                        "/tmp/mockserver-bench-100000, generated once: bench/_datasets.py)")
    parser.add_argument("--only", choices=("throughput", "latency", "memory"))
    args = parser.parse_args()
    for tool in ("wrk", "redis-server", "taskset"):
        if not shutil.which(tool):
            raise SystemExit(f"{tool} is needed (apt-get install wrk redis-server util-linux)")
    with redis_server(args.redis_cpus) as (url, pid):
        args.redis_pid = pid
        if args.only in (None, "throughput"):
            throughput(args, url)
        if args.only in (None, "latency"):
            read_your_write(args, url)
        if args.only in (None, "memory"):
            redis_memory(args, url)


if __name__ == "__main__":
    main()
