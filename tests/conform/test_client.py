"""Pace, budget and 429 handling of the gate's HTTP plumbing."""

from __future__ import annotations

from typing import Any

import pytest

from mockserver.conform.client import BudgetExhausted, ConformClient, Pacer
from mockserver.conform.violations import Exchange

from .serve import serve


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def test_token_bucket_paces_requests() -> None:
    clock = FakeClock()
    pacer = Pacer(rate=2.0, sleep=clock.sleep, clock=clock)
    for _ in range(5):
        pacer.acquire()
    assert clock.now == pytest.approx(2.0)  # 4 waits of half a second after the first
    assert pacer.sent == 5


def test_budget_is_a_hard_cap() -> None:
    stopped: list[bool] = []
    pacer = Pacer(rate=0, max_requests=3, on_exhausted=lambda: stopped.append(True))
    for _ in range(3):
        pacer.acquire()
    assert not stopped  # the budget is spent, not exceeded: a run that ends here is complete
    with pytest.raises(BudgetExhausted):
        pacer.acquire()
    assert stopped  # told when a request past the budget is refused
    assert pacer.sent == 3
    assert pacer.stop_reason == "request budget of 3 reached"


def _flaky_app(answers: list[tuple[int, dict[str, str]]]) -> Any:
    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        status, headers = answers.pop(0) if answers else (200, {})
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"content-type", b"application/json"),
                                *[(k.encode(), v.encode()) for k, v in headers.items()]]})
        await send({"type": "http.response.body", "body": b'{"error": "slow down"}'
                    if status == 429 else b"{}"})
    return app


def test_429_waits_retry_after_then_retries() -> None:
    clock = FakeClock()
    pacer = Pacer(rate=0, sleep=clock.sleep, clock=clock)
    app = _flaky_app([(429, {"Retry-After": "7"}), (429, {}), (200, {})])
    with serve(app) as url:
        exchange = ConformClient(url, pacer).request("GET", "/v1")
    assert exchange.status == 200
    assert clock.sleeps == [7.0, 30.0]  # Retry-After honoured; without one, a long wait
    assert pacer.sent == 3 and pacer.rate_limited == 2


def test_429_passed_through_when_asked() -> None:
    pacer = Pacer(rate=0, sleep=lambda s: None)
    with serve(_flaky_app([(429, {"Retry-After": "3"})])) as url:
        exchange = ConformClient(url, pacer, retry_429=False).request("GET", "/v1")
    assert exchange.status == 429


def test_curl_redacts_the_token() -> None:
    exchange = Exchange("PATCH", "http://h/v1/skills/ks_1?workspace_id=w",
                        headers={"Authorization": "Bearer secret-token", "Accept": "*/*"},
                        body={"description": "it's"})
    curl = exchange.curl()
    assert "secret-token" not in curl
    assert '-H "Authorization: Bearer $TOKEN"' in curl
    assert "-X PATCH" in curl and "'http://h/v1/skills/ks_1?workspace_id=w'" in curl
