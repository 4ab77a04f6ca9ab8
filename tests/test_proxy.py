"""The validating proxy, in front of an in-process mock with one deliberately broken handler."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator

import httpx
import pytest

from mockserver.engine.app import Config, MockApp
from mockserver.proxy import create_proxy_app
from mockserver.standalone.server import create_app

pytestmark = pytest.mark.anyio
WS = "ws_harborview"
AUTH = {"Authorization": "Bearer mock-write-token"}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
async def proxy(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[httpx.AsyncClient]:
    # No self-check upstream: it plays a real server that breaks the contract.
    upstream_mock = MockApp(Config(frozen_clock="2026-11-01T12:00:00.000Z"))
    monkeypatch.setitem(upstream_mock.handlers, "listModels",
                        lambda ctx: {"data": "not a list", "extra_field": 1})
    upstream = httpx.ASGITransport(app=create_app(mock=upstream_mock))
    app = create_proxy_app("http://upstream.test", transport=upstream)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app),
                                 base_url="http://proxy.test", headers=AUTH) as client:
        yield client


async def violations(client: httpx.AsyncClient) -> list[dict]:
    return (await client.get("/__proxy__/violations")).json()["data"]


async def test_conforming_traffic_passes_through_unchanged(proxy: httpx.AsyncClient) -> None:
    response = await proxy.get("/v1/tickets", params={"workspace_id": WS, "limit": 2})
    assert response.status_code == 200
    assert len(response.json()["data"]) == 2
    assert response.headers["content-type"] == "application/json"
    created = await proxy.post(f"/v1/tickets/{response.json()['data'][0]['id']}/notes",
                               json={"body": "via the proxy"})
    assert created.status_code == 201
    assert await violations(proxy) == []


async def test_a_broken_response_is_reported_and_passed_through(
        proxy: httpx.AsyncClient, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="mockserver.proxy"):
        response = await proxy.get("/v1/models")
    assert response.status_code == 200
    assert response.json() == {"data": "not a list", "extra_field": 1}  # unchanged
    [violation] = await violations(proxy)
    assert violation["direction"] == "response"
    assert violation["operation_id"] == "listModels"
    assert "/data" in violation["problem"]
    assert "violation (response) GET /v1/models" in caplog.text


async def test_extra_fields_are_allowed_open_schemas(proxy: httpx.AsyncClient) -> None:
    # The mock's self-check closes schemas; the proxy must not: a real server may add fields.
    upstream_body = (await proxy.get("/v1")).json()
    assert upstream_body
    assert await violations(proxy) == []


async def test_bad_requests_and_undocumented_statuses(proxy: httpx.AsyncClient) -> None:
    response = await proxy.get("/v1/tickets", params={"workspace_id": WS, "limit": 0})
    assert response.status_code == 400  # the upstream's own answer
    await proxy.get("/v1/not-documented")
    found = await violations(proxy)
    problems = [(v["direction"], v["problem"]) for v in found]
    assert ("request", "query parameter 'limit': 0 is less than the minimum of 1") in problems
    assert any("not in the document" in p for _, p in problems)
    # /v1/not-documented: the upstream answers 404 for an unknown path; nothing to compare.
    cleared = await proxy.delete("/__proxy__/violations")
    assert cleared.json()["cleared"] == len(found)
