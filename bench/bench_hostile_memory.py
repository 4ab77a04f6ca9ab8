"""Memory and time of a served mock under hostile input (the figures CHANGELOG quotes).

- four connections at once, each sending a 100 MB header (`X-Big: aaaa...`): the server's
  resident memory before, after, and its peak (VmHWM), and how long until all were answered;
- a ~1 MiB JSON body of 50 levels of 2 KB keys over many leaves (what a depth check building
  a path per child blew up): the answer's status and time, the peak memory, and how long a
  concurrent read waited.

    python bench/bench_hostile_memory.py [--header-mib 100] [--connections 4]

The server is `python -m mockserver serve` in its own process on loopback (--quiet).
"""

from __future__ import annotations

import argparse
import select
import socket
import threading
import time

import httpx
import orjson
from _servers import free_port, mock_argv, running

TOKEN = "mock-write-token"
MIB = 1024 * 1024


def _status(pid: int) -> dict[str, int]:
    found = {}
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                found[key] = int(value.split()[0]) // 1024  # MiB
    return found


def _huge_header(port: int, mib: int) -> int:
    """Send a request whose one header is `mib` MiB, stopping when answered; the status."""
    with socket.create_connection(("127.0.0.1", port), timeout=60) as sock:
        sock.sendall(b"GET /v1/conversations HTTP/1.1\r\nHost: x\r\nX-Big: ")
        block = b"a" * MIB
        for _ in range(mib):
            if select.select([sock], [], [], 0)[0]:
                break
            try:
                sock.sendall(block)
            except OSError:
                break
        try:
            answer = sock.recv(4096)
        except OSError:
            return 0  # reset before an answer
    return int(answer.split()[1]) if answer else 0


def _deep_body(target: int = MIB - 8192) -> bytes:
    leaves = 1000
    while True:
        value: dict[str, object] = {f"leaf{i}": i for i in range(leaves)}
        for level in range(50):
            value = {f"{level:02d}" + "k" * 1998: value}
        body = orjson.dumps({"workspace_id": "ws_harborview", "name": value})
        if len(body) >= target:
            return body
        leaves = int(leaves * target / len(body)) + 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--header-mib", type=int, default=100)
    parser.add_argument("--connections", type=int, default=4)
    args = parser.parse_args()
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    with running(mock_argv(port, "--quiet", "--rate-limit", "0"), f"{base}/openapi.json") as proc:
        before = _status(proc.pid)
        statuses: list[int] = []
        started = time.perf_counter()
        threads = [threading.Thread(target=lambda: statuses.append(
            _huge_header(port, args.header_mib))) for _ in range(args.connections)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        elapsed = time.perf_counter() - started
        after = _status(proc.pid)
        print(f"{args.connections} x {args.header_mib} MB header: statuses {sorted(statuses)} "
              f"in {elapsed:.2f} s; RSS {before['VmRSS']} -> {after['VmRSS']} MiB, "
              f"peak {after['VmHWM']} MiB")

        body = _deep_body()
        waited: list[float] = []

        def read() -> None:
            time.sleep(0.02)
            t = time.perf_counter()
            httpx.get(f"{base}/v1/conversations", params={"workspace_id": "ws_harborview"},
                      headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60)
            waited.append(time.perf_counter() - t)

        reader = threading.Thread(target=read)
        reader.start()
        t = time.perf_counter()
        response = httpx.post(f"{base}/v1/attachments/upload-url", content=body, timeout=120,
                              headers={"Authorization": f"Bearer {TOKEN}",
                                       "Content-Type": "application/json"})
        took = time.perf_counter() - t
        reader.join()
        deep = _status(proc.pid)
        print(f"deep body of {len(body)} bytes: {response.status_code} in {took * 1000:.0f} ms "
              f"(a concurrent read waited {waited[0] * 1000:.0f} ms); RSS {deep['VmRSS']} MiB, "
              f"peak {deep['VmHWM']} MiB")


if __name__ == "__main__":
    main()
