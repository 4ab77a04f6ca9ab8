"""The response cache (cache.py): a repeated read is answered from memory while nothing it
depends on has changed; authentication, access and rate limits still apply to every request."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from conftest import FROZEN_AT, OTHER, READ, auth
from starlette.testclient import TestClient

from mockserver.engine.app import Config, MockApp
from mockserver.engine.cache import CachedResponse, ResponseCache
from mockserver.standalone.server import create_app

WS = "ws_harborview"
LIST = f"/v1/conversations?workspace_id={WS}&limit=5"
INSIGHT = f"/v1/insights/conversation-automation-rate?workspace_id={WS}"


def counting(mock: MockApp, monkeypatch: pytest.MonkeyPatch, operation_id: str) -> list[int]:
    """Count the calls of one operation's handler (restored after the test)."""
    calls: list[int] = []
    original: Callable[[Any], Any] = mock.handlers[operation_id]

    def handler(ctx: Any) -> Any:
        calls.append(1)
        return original(ctx)

    monkeypatch.setitem(mock.handlers, operation_id, handler)
    return calls


def test_a_repeated_read_is_answered_from_the_cache(client, mock, monkeypatch) -> None:
    calls = counting(mock, monkeypatch, "listConversations")
    first, second = client.get(LIST), client.get(LIST)
    assert first.status_code == second.status_code == 200
    assert first.content == second.content
    assert first.headers["content-length"] == second.headers["content-length"]
    assert len(calls) == 1
    # Another query string is another answer.
    assert client.get(LIST + "&order=asc").status_code == 200
    assert len(calls) == 2


def test_any_write_makes_the_next_read_fresh(client, mock, monkeypatch) -> None:
    calls = counting(mock, monkeypatch, "getTicket")
    ticket = next(t for t in mock.store.all("tickets")
                  if t["workspace_id"] == WS and t["status"] in ("new", "pending"))
    url = f"/v1/tickets/{ticket['id']}"
    assert client.get(url).json()["data"]["status"] == ticket["status"]
    assert client.get(url).json()["data"]["status"] == ticket["status"]
    assert len(calls) == 1
    assert client.post(f"{url}/resolve").status_code == 200
    assert client.get(url).json()["data"]["status"] == "resolved"
    assert len(calls) == 2
    # A write to any table moves the store's version (the cache never reasons about which
    # tables an answer read), and so does a reset.
    mock.store.update("contacts", ticket["contact_id"], {"notes": "changed"})
    client.get(url)
    mock.reset()
    assert len(mock.cache) == 0
    assert client.get(url).json()["data"]["status"] == ticket["status"]
    assert len(calls) == 4


def test_cached_answers_are_still_rate_limited(client, mock, monkeypatch) -> None:
    calls = counting(mock, monkeypatch, "listConversations")
    mock.limiter.set_workspace_limit(WS, 3)
    assert [client.get(LIST).status_code for _ in range(3)] == [200, 200, 200]
    refused = client.get(LIST)
    assert refused.status_code == 429
    assert int(refused.headers["retry-after"]) >= 1 and "error" in refused.json()
    assert len(calls) == 1
    mock.clock.advance(60)
    assert client.get(LIST).status_code == 200


def test_cached_answers_still_authenticate_and_check_access(client, mock, monkeypatch) -> None:
    calls = counting(mock, monkeypatch, "listConversations")
    cached = client.get(LIST)
    assert client.get(LIST, headers={"Authorization": "Bearer nope"}).status_code == 401
    assert client.get(LIST, headers={"Authorization": ""}).status_code == 401
    assert client.get(LIST, headers=auth(OTHER)).status_code == 403
    # Each caller has its own entry: the read token's answer is computed for it.
    as_reader = client.get(LIST, headers=auth(READ))
    assert as_reader.status_code == 200 and as_reader.content == cached.content
    assert len(calls) == 2


def test_a_preference_is_never_answered_from_the_cache(client, mock) -> None:
    ticket = next(t for t in mock.store.all("tickets") if t["workspace_id"] == WS)
    url = f"/v1/tickets/{ticket['id']}"
    assert client.get(url).status_code == 200
    assert client.get(url, headers={"Prefer": "code=404"}).status_code == 404
    assert client.get(url).status_code == 200


def test_answers_that_read_the_clock_are_not_kept(client, mock, monkeypatch) -> None:
    calls = counting(mock, monkeypatch, "getConversationAutomationRate")
    # Without `end` the period ends now: the answer depends on the clock.
    assert client.get(INSIGHT).status_code == 200
    assert client.get(INSIGHT).status_code == 200
    assert len(calls) == 2 and len(mock.cache) == 0
    # With both ends given, and no run of the period still moving (progression.py), it
    # does not, and is kept.
    fixed = INSIGHT + "&start=2026-09-01T00:00:00.000Z&end=2026-10-01T00:00:00.000Z"
    assert client.get(fixed).json() == client.get(fixed).json()
    assert len(calls) == 3 and len(mock.cache) == 1


def test_errors_are_not_kept(client, mock, monkeypatch) -> None:
    calls = counting(mock, monkeypatch, "getConversationAutomationRate")
    # Refused by the handler itself (start after end), with no clock read: still not kept.
    backwards = INSIGHT + "&start=2026-11-01T00:00:00.000Z&end=2026-10-01T00:00:00.000Z"
    for _ in range(2):
        refused = client.get(backwards)
        assert refused.status_code == 400 and "start" in refused.json()["error"]
    assert len(calls) == 2 and len(mock.cache) == 0
    # Refused before the handler (the addressed record does not exist): not kept either.
    assert client.get("/v1/tickets/no_such_ticket").status_code == 404
    assert len(mock.cache) == 0


def test_the_cache_can_be_turned_off(monkeypatch) -> None:
    mock = MockApp(Config(self_check=True, frozen_clock=FROZEN_AT, response_cache=0))
    calls = counting(mock, monkeypatch, "listConversations")
    with TestClient(create_app(mock=mock), headers=auth()) as client:
        assert client.get(LIST).content == client.get(LIST).content
    assert len(calls) == 2 and len(mock.cache) == 0


def _entry(n: int) -> CachedResponse:
    return CachedResponse("workspace", WS, 200, str(n).encode(), [])


def test_the_cache_is_bounded_and_follows_the_version() -> None:
    cache = ResponseCache(2)
    for n in range(3):
        cache.put(n, 7, _entry(n))
    assert len(cache) == 2
    assert cache.get(0, 7) is None  # the oldest went first
    assert cache.get(2, 7) == _entry(2)
    assert cache.get(2, 8) is None  # a newer store version: stale
    cache.put(5, 6, _entry(5))  # computed before a write that has since landed
    assert cache.get(5, 6) is None and len(cache) == 2
    cache.put(9, 8, _entry(9))  # the first answer at a new version drops the rest
    assert len(cache) == 1 and cache.get(9, 8) == _entry(9)
