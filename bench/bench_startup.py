"""Start to first response of `python -m mockserver serve` with the default fixtures.

    python bench/bench_startup.py [--runs 5]

Prints each run and the median (target: <= 0.5 s).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).parent))
from _servers import free_port, mock_argv


def once() -> float:
    port = free_port()
    start = time.perf_counter()
    proc = subprocess.Popen(mock_argv(port), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        while True:
            try:
                response = httpx.get(f"http://127.0.0.1:{port}/v1",
                                     headers={"Authorization": "Bearer mock-write-token"}, timeout=1)
                assert response.status_code == 200
                return time.perf_counter() - start
            except httpx.TransportError:
                time.sleep(0.005)
    finally:
        proc.terminate()
        proc.wait()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    once()  # warm the file cache
    runs = [once() for _ in range(args.runs)]
    print("runs: " + ", ".join(f"{r:.3f}s" for r in runs))
    print(f"start to first response, median: {statistics.median(runs):.3f}s (target <= 0.5 s)")


if __name__ == "__main__":
    main()
