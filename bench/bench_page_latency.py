"""Page latency flat in dataset size: a page deep in 100,000 contacts' conversations against
the first page of a 1,000-contact dataset, through the whole pipeline, in-process.

1. The same request repeated: what producing a page costs (validate, bisect the index, render,
   sign the next cursor), with the records in the CPU cache in both datasets. This is the
   target's comparison.
2. Consecutive pages of the big dataset, each following the cursor the previous one returned
   (as a client walks a list), from the top and from a third down: no request repeats another,
   so each page's records come from main memory. Equal figures show the cost does not grow
   with the position in the list; the gap to (1) is the memory hierarchy, not the walk.

    python bench/bench_page_latency.py [--big-dir DIR] [--repeats 2000]

Prints the median microseconds of each and the ratio (target: deep/first <= 1.2). The response
cache is off, so every request produces its page.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson

from mockserver.data.generate import generate
from mockserver.engine.app import Config, MockApp

HEADERS = [(b"authorization", b"Bearer mock-write-token")]


def scope(query: bytes) -> dict[str, Any]:
    return {"type": "http", "method": "GET", "path": "/v1/conversations",
            "query_string": query, "headers": HEADERS}


async def _receive() -> dict[str, Any]:
    return {"type": "http.request", "body": b"", "more_body": False}


async def respond(mock: MockApp, query: bytes) -> tuple[int, bytes]:
    """Status and body of one request through the pipeline (`MockApp.serve`, the one route)."""
    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await mock.serve(scope(query), _receive, send)
    return sent[0]["status"], sent[1]["body"]


def get(mock: MockApp, query: bytes) -> dict[str, Any]:
    status, body = asyncio.run(respond(mock, query))
    assert status == 200, body
    return dict(orjson.loads(body))


def timed(mock: MockApp, query: bytes, repeats: int) -> list[float]:
    """Microseconds of the same request, repeated (a first page)."""
    async def run() -> list[float]:
        samples = []
        for _ in range(repeats):
            started = time.perf_counter()
            await respond(mock, query)
            samples.append((time.perf_counter() - started) * 1e6)
        return samples

    return asyncio.run(run())


def side_by_side(a: tuple[MockApp, bytes], b: tuple[MockApp, bytes], repeats: int,
                 rounds: int = 20) -> tuple[float, float]:
    """Median microseconds of two repeated requests, measured in alternating rounds so that
    the machine's noise falls on both alike."""
    samples_a: list[float] = []
    samples_b: list[float] = []
    for _ in range(rounds):
        samples_a += timed(*a, repeats // rounds)
        samples_b += timed(*b, repeats // rounds)
    return statistics.median(samples_a), statistics.median(samples_b)


def walked(mock: MockApp, start: bytes, repeats: int) -> float:
    """Median microseconds of `repeats` consecutive pages, each following the cursor the
    previous one returned (as a client walks); back to `start` when the list ends."""
    async def run() -> list[float]:
        samples = []
        query = start
        for _ in range(repeats):
            started = time.perf_counter()
            status, body = await respond(mock, query)
            samples.append(time.perf_counter() - started)
            assert status == 200, body
            cursor = orjson.loads(body)["next_cursor"]
            query = (b"workspace_id=ws_harborview&limit=20&cursor=" + cursor.encode()
                     if cursor else start)
        return samples

    return statistics.median(asyncio.run(run())) * 1e6


def deep_query(mock: MockApp) -> tuple[bytes, int]:
    """A 20-item page a third of the way down the biggest workspace (reached 100 at a time)."""
    total = sum(1 for c in mock.store.all("conversations") if c["workspace_id"] == "ws_harborview")
    page = get(mock, b"workspace_id=ws_harborview&limit=100")
    for _ in range(total // 300):
        page = get(mock, b"workspace_id=ws_harborview&limit=100&cursor=" + page["next_cursor"].encode())
    return b"workspace_id=ws_harborview&limit=20&cursor=" + page["next_cursor"].encode(), total


def build(directory: Path, scale: int) -> MockApp:
    if not (directory / "contacts.json").exists():
        generate(scale=scale, seed=1, out=directory)
    # The response cache is off: it would answer the repeated page from memory, and this
    # measures producing a page (validate, walk the index, render, sign the next cursor).
    return MockApp(Config(fixtures=[directory], rate_limit=0, journal_size=0,
                          request_log=False, response_cache=0))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--big-dir", default=None)
    parser.add_argument("--repeats", type=int, default=2000)
    args = parser.parse_args()
    first = b"workspace_id=ws_harborview&limit=20"
    with tempfile.TemporaryDirectory() as tmp:
        small = build(Path(tmp) / "small", 1_000)
        small_total = sum(1 for c in small.store.all("conversations")
                          if c["workspace_id"] == "ws_harborview")
        big = build(Path(args.big_dir) if args.big_dir else Path(tmp) / "big", 100_000)
        deep, total = deep_query(big)
        small_us, deep_us = side_by_side((small, first), (big, deep), args.repeats)
        big_top_walk_us = walked(big, first, args.repeats)
        big_deep_walk_us = walked(big, deep, args.repeats)
    n = args.repeats
    print(f"1. the same request repeated (median of {n}, alternating rounds): what the walk costs")
    print(f"   first page, 1,000 contacts ({small_total:,} conversations): {small_us:6.1f} us")
    print(f"   deep page, 100,000 contacts ({total:,} conversations): {deep_us:6.1f} us")
    print(f"   ratio deep(100k)/first(1k): {deep_us / small_us:.2f}  (target <= 1.2)")
    print(f"2. {n} consecutive pages of 100,000 contacts, each following the previous cursor")
    print(f"   from the top: {big_top_walk_us:6.1f} us   from a third down: {big_deep_walk_us:6.1f} us")
    print(f"   ratio deep/top: {big_deep_walk_us / big_top_walk_us:.2f}  (position in the list)")
    print(f"   ratio deep walk(100k)/first(1k): {big_deep_walk_us / small_us:.2f}  (each page's records"
          " read from main memory for the first time; 1,000 contacts fit in the CPU cache)")


if __name__ == "__main__":
    main()
