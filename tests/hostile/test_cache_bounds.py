"""The response cache is bounded in bytes, counts toward the sessions' memory cap, and a
request with unknown (ignored) query parameters makes no entry: `_=N` cache busters do not
grow it (DECISIONS H36)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from conftest import FROZEN_AT, auth
from starlette.testclient import TestClient

from mockserver.engine.app import Config, MockApp
from mockserver.engine.cache import CachedResponse, ResponseCache
from mockserver.standalone.server import create_app

LIST = "/v1/workspaces/ws_harborview/users"


@pytest.fixture
def cached() -> Iterator[tuple[MockApp, TestClient]]:
    mock = MockApp(Config(self_check=True, frozen_clock=FROZEN_AT, response_cache=256))
    with TestClient(create_app(mock=mock), headers=auth()) as client:
        yield mock, client


def test_ignored_parameters_make_no_cache_entry(cached: tuple[MockApp, TestClient]) -> None:
    mock, client = cached
    assert client.get(LIST).status_code == 200
    held = len(mock.state.cache)
    assert held == 1
    for n in range(50):
        assert client.get(LIST, params={"_": n}).status_code == 200
    assert len(mock.state.cache) == held


def test_the_cache_is_bounded_in_bytes() -> None:
    cache = ResponseCache(size=1000, max_bytes=10_000)
    for n in range(100):
        cache.put(("k", n), 1, CachedResponse("token", "t", 200, b"x" * 2000, []))
        assert cache.bytes <= 10_000
    assert len(cache) == 5 and cache.bytes == 10_000
    cache.put(("big",), 1, CachedResponse("token", "t", 200, b"x" * 5000, []))
    assert cache.get(("big",), 1) is None  # over a quarter of the bound: not kept


def test_a_sessions_cache_counts_toward_its_memory(cached: tuple[MockApp, TestClient]) -> None:
    mock, client = cached
    assert client.post("/__mock__/sessions", json={"name": "c"}).status_code == 201
    assert client.get(f"/sessions/c{LIST}").status_code == 200
    cache = mock.sessions.state("c").cache
    assert cache.bytes > 0
    held = mock.sessions.held_bytes()
    cache.clear()
    assert held - mock.sessions.held_bytes() > 0
