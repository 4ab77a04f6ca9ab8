from __future__ import annotations

import pytest

from mockserver.engine.clock import Clock
from mockserver.engine.errors import TooManyRequests
from mockserver.engine.ratelimit import RateLimiter


def make() -> tuple[Clock, RateLimiter]:
    clock = Clock(frozen_at="2026-11-01T00:00:00.000Z")
    return clock, RateLimiter(clock, per_minute=3)


def test_the_request_past_the_limit_gets_429_with_whole_seconds() -> None:
    clock, limiter = make()
    for _ in range(3):
        limiter.hit("workspace", "ws")
    clock.advance(20.5)
    with pytest.raises(TooManyRequests) as caught:
        limiter.hit("workspace", "ws")
    assert caught.value.status_code == 429
    assert caught.value.headers["Retry-After"] == "40"  # ceil(60 - 20.5)


def test_the_window_ends_after_a_minute() -> None:
    clock, limiter = make()
    for _ in range(3):
        limiter.hit("workspace", "ws")
    clock.advance(59.999)
    with pytest.raises(TooManyRequests):  # still the same window
        limiter.hit("workspace", "ws")
    clock.advance(0.001)
    for _ in range(3):  # a fresh window: the whole limit again, and no more
        limiter.hit("workspace", "ws")
    with pytest.raises(TooManyRequests):
        limiter.hit("workspace", "ws")


def test_workspaces_and_tokens_are_counted_apart() -> None:
    _, limiter = make()
    for _ in range(3):
        limiter.hit("workspace", "ws1")
    with pytest.raises(TooManyRequests):
        limiter.hit("workspace", "ws1")
    # ws1 is exhausted; another workspace, and a token of the same name, are not.
    for _ in range(3):
        limiter.hit("workspace", "ws2")
        limiter.hit("token", "ws1")
    with pytest.raises(TooManyRequests):
        limiter.hit("workspace", "ws2")
    with pytest.raises(TooManyRequests):
        limiter.hit("token", "ws1")


def test_per_workspace_limits_and_switching_off() -> None:
    _, limiter = make()
    limiter.set_workspace_limit("big", 10)
    for _ in range(10):
        limiter.hit("workspace", "big")
    with pytest.raises(TooManyRequests):
        limiter.hit("workspace", "big")
    limiter.configure(enabled=False)
    for _ in range(50):
        limiter.hit("workspace", "ws")
    limiter.configure(per_minute=0)
    assert not limiter.enabled


def test_retry_after_is_at_least_one_second() -> None:
    clock, limiter = make()
    for _ in range(3):
        limiter.hit("workspace", "ws")
    clock.advance(59.9)
    with pytest.raises(TooManyRequests) as caught:
        limiter.hit("workspace", "ws")
    assert caught.value.retry_after == 1
