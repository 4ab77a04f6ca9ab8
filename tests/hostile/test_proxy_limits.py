"""The validation proxy holds no more than `serve` would: a request body past its limit is
refused 413 before anything is forwarded or held, an upstream answer past its limit 502, and
heads are limited by `serve`'s protocol (DECISIONS H34)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest

from mockserver import proxy as proxy_module
from mockserver.proxy import create_proxy_app

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
async def upstream_calls() -> list[int]:
    return []


@pytest.fixture
async def proxy(upstream_calls: list[int]) -> AsyncIterator[httpx.AsyncClient]:
    async def upstream(scope: dict, receive: object, send: object) -> None:
        upstream_calls.append(1)
        await send({"type": "http.response.start", "status": 200,  # type: ignore[operator]
                    "headers": [(b"content-type", b"application/octet-stream")]})
        await send({"type": "http.response.body", "body": b"x" * 5000})  # type: ignore[operator]

    app = create_proxy_app("http://upstream.test", transport=httpx.ASGITransport(app=upstream),
                           max_body_bytes=1000, max_response_bytes=4096)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app),
                                 base_url="http://proxy.test") as client:
        yield client


async def test_a_body_past_the_limit_is_refused_before_it_is_forwarded(
        proxy: httpx.AsyncClient, upstream_calls: list[int]) -> None:
    async def streamed() -> AsyncIterator[bytes]:  # no Content-Length: counted as it comes
        for _ in range(10):
            yield b"y" * 500

    for content in (b"y" * 1001, streamed()):
        refused = await proxy.post("/v1/kb/nodes", content=content)
        assert refused.status_code == 413 and "1000 bytes" in refused.json()["error"]
    assert upstream_calls == []


async def test_an_upstream_answer_past_the_limit_is_502(proxy: httpx.AsyncClient) -> None:
    answer = await proxy.get("/v1/models")
    assert answer.status_code == 502 and "4096 bytes" in answer.json()["error"]


def test_the_proxy_runs_serves_guarded_protocol() -> None:
    assert proxy_module.PROTOCOL.endswith("protocol:GuardedHttpToolsProtocol")
    from mockserver.standalone import protocol
    assert proxy_module.PROTOCOL.split(":")[1] in vars(protocol)
