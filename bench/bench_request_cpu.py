"""CPU per request of the mock's ASGI app in-process (no socket, no uvicorn): the request the
throughput bench sends, `GET /v1/conversations?workspace_id=...&limit=20`, with the response
cache off and on, the journal on and off, beside a bare Starlette app sending the same bytes.

    python bench/bench_request_cpu.py [--requests 7000]

CPU time (process_time), the best of 7 batches: steady on a machine shared with other work,
where wall-clock req/s are not. What the uvicorn server adds is the same for all of them.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from mockserver.engine.app import Config, MockApp
from mockserver.standalone.server import create_app

SCOPE = {
    "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "GET",
    "scheme": "http", "path": "/v1/conversations", "raw_path": b"/v1/conversations",
    "query_string": b"workspace_id=ws_harborview&limit=20", "root_path": "",
    "headers": [(b"host", b"127.0.0.1:8080"), (b"authorization", b"Bearer mock-write-token"),
                (b"user-agent", b"wrk"), (b"accept", b"*/*")],
    "client": ("127.0.0.1", 5000), "server": ("127.0.0.1", 8080),
}


async def _receive() -> dict[str, Any]:
    return {"type": "http.request", "body": b"", "more_body": False}


def cpu_per_request(app: Any, requests: int) -> tuple[float, bytes]:
    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        if len(sent) < 2:
            sent.append(message)

    async def run(n: int) -> None:
        for _ in range(n):
            await app(dict(SCOPE), _receive, send)

    asyncio.run(run(200))  # warm-up
    assert sent[0]["status"] == 200, sent
    batch = max(1, requests // 7)
    best = []
    for _ in range(7):
        t0 = time.process_time()
        asyncio.run(run(batch))
        best.append(time.process_time() - t0)
    return min(best) / batch * 1e6, sent[1]["body"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=7000)
    args = parser.parse_args()
    body = b""
    figures = {}
    for cache in (0, 256):
        for journal in (1000, 0):
            mock = MockApp(Config(response_cache=cache, journal_size=journal,
                                  rate_limit=100_000_000, request_log=False))
            figures[(cache, journal)], body = cpu_per_request(create_app(mock=mock),
                                                              args.requests)

    async def conversations(request: Request) -> Response:
        return Response(body, media_type="application/json")

    bare, _ = cpu_per_request(Starlette(routes=[Route("/v1/conversations", conversations)]),
                              args.requests)
    print(f"response bytes: {len(body)}; CPU per request, in-process, best of 7 batches:")
    print(f"  bare Starlette (same bytes):      {bare:6.1f} us")
    for (cache, journal), us in figures.items():
        print(f"  mock, cache {'on ' if cache else 'off'}, journal {'on ' if journal else 'off'}: "
              f"{us:6.1f} us")


if __name__ == "__main__":
    main()
