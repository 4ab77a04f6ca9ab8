"""The gate's HTTP plumbing: pace, budget and 429 handling shared by every request it sends.

Both schemathesis' phases and the gate's own checks go through one `requests` transport adapter
(`PacedAdapter`), so the safety rules hold for all traffic to the target:

- pace: a client-side token bucket (default 1.8 requests/s, under the documented 120/minute);
- budget: `--max-requests` caps the total, `--max-time` the length; past either, or after
  SIGINT/SIGTERM (`Pacer.stop`), a request raises `RunStopped` and the run stops gracefully
  and reports what it saw (verdict INCOMPLETE);
- watch: every response and every dropped connection or time-out is handed to `Pacer.watch`
  (the gate fails any 5xx, whichever family sent the request);
- 429: wait `Retry-After` seconds (through an injectable sleep) and retry, a bounded number of
  times; never resend at once.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

import requests
from requests.adapters import HTTPAdapter

from .violations import Exchange

__all__ = ["DEFAULT_RATE", "TRANSPORT_ERRORS", "BudgetExhausted", "ConformClient", "PacedAdapter",
           "Pacer", "RunStopped", "WriteWithheld"]

DEFAULT_RATE = 1.8  # requests per second: 108/minute, under the documented 120/minute default
MAX_429_RETRIES = 3
FALLBACK_RETRY_AFTER = 30.0  # a 429 without a usable Retry-After: wait long, never hammer
MAX_RETRY_AFTER = 120.0


class RunStopped(RuntimeError):
    """The run is stopped (--max-requests, --max-time, a signal): no more requests are sent."""


BudgetExhausted = RunStopped  # the name the checks and older callers use

# What a request can end in without a response: a dropped connection, a time-out, a body cut
# short. The gate fails these like a 5xx.
TRANSPORT_ERRORS = (requests.ConnectionError, requests.Timeout,
                    requests.exceptions.ChunkedEncodingError)

Watch = Callable[[requests.PreparedRequest, "requests.Response | None", "BaseException | None"],
                 None]


class WriteWithheld(RuntimeError):
    """A read-only run refused to send a request that could write (see `PacedAdapter`)."""


@dataclass
class Pacer:
    """Token bucket + request budget + 429 policy. `sleep` and `clock` are injectable (tests)."""

    rate: float = DEFAULT_RATE  # requests per second; 0 means unpaced
    burst: float = 1.0
    max_requests: int | None = None
    sleep: Callable[[float], None] = time.sleep
    clock: Callable[[], float] = time.monotonic
    sent: int = 0
    rate_limited: int = 0  # 429s seen (and waited out)
    withheld: int = 0  # requests a read-only run refused to send (PacedAdapter's guard)
    on_exhausted: Callable[[], None] | None = None  # called once the run stops
    deadline: float | None = None  # clock() past which the run stops (--max-time)
    stop_reason: str | None = None
    watch: Watch | None = None  # sees every response and transport error
    on_sent: Callable[[], None] | None = None  # after each request is counted (progress)
    _tokens: float = field(default=1.0, init=False)
    _last: float | None = field(default=None, init=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False)

    @property
    def exhausted(self) -> bool:
        return self.max_requests is not None and self.sent >= self.max_requests

    def stop(self, reason: str) -> None:
        """Stop the run: the next request raises `RunStopped` (safe from a signal handler)."""
        if self.stop_reason is None:
            self.stop_reason = reason
        if self.on_exhausted is not None:
            self.on_exhausted()

    def _check_stop(self) -> None:
        if self.stop_reason is None and self.exhausted:
            self.stop_reason = f"request budget of {self.max_requests} reached"
        if self.stop_reason is None and self.deadline is not None and \
                self.clock() >= self.deadline:
            self.stop_reason = "time budget (--max-time) reached"
        if self.stop_reason is not None:
            if self.on_exhausted is not None:
                self.on_exhausted()
            raise RunStopped(self.stop_reason)

    def acquire(self, *, paced: bool = True) -> None:
        """Take one request from the budget, waiting for the bucket when paced."""
        with self._lock:
            self._check_stop()
            if paced and self.rate > 0:
                now = self.clock()
                if self._last is not None:
                    self._tokens = min(self.burst, self._tokens + (now - self._last) * self.rate)
                self._last = now
                if self._tokens < 1.0:
                    wait = (1.0 - self._tokens) / self.rate
                    self.sleep(wait)
                    self._last = self.clock()
                    self._tokens = 0.0
                else:
                    self._tokens -= 1.0
            self.sent += 1
        if self.on_sent is not None:
            self.on_sent()

    def retry_delay(self, retry_after: str | None) -> float:
        try:
            seconds = float(retry_after) if retry_after is not None else FALLBACK_RETRY_AFTER
        except ValueError:
            seconds = FALLBACK_RETRY_AFTER
        return min(max(seconds, 1.0), MAX_RETRY_AFTER)


class PacedAdapter(HTTPAdapter):
    """An HTTPAdapter that paces, counts, and waits out 429s before handing back a response."""

    def __init__(self, pacer: Pacer, *, retry_429: bool = True, paced: bool = True,
                 allow: Callable[[str, str], bool] | None = None) -> None:
        super().__init__()
        self.pacer = pacer
        self.retry_429 = retry_429
        self.paced = paced
        # (method, url) -> may this be sent? None allows everything. A read-only run gives
        # schemathesis' sessions a guard: its coverage phase also tries methods a path does
        # not declare (PUT, DELETE, ...), which a real server might honour.
        self.allow = allow
        self.withheld = 0

    def send(self, request: requests.PreparedRequest, *args: Any, **kwargs: Any) -> requests.Response:
        if self.allow is not None and not self.allow(request.method or "", request.url or ""):
            self.withheld += 1
            self.pacer.withheld += 1
            raise WriteWithheld(f"read-only run: {request.method} {request.url} not sent")
        attempts = 0
        while True:
            self.pacer.acquire(paced=self.paced)
            try:
                response = super().send(request, *args, **kwargs)
                _ = response.content  # read the body here: one cut short is a transport error too
            except TRANSPORT_ERRORS as exc:
                if self.pacer.watch is not None:
                    self.pacer.watch(request, None, exc)
                raise
            if self.pacer.watch is not None:
                self.pacer.watch(request, response, None)
            if response.status_code != 429 or not self.retry_429 or attempts >= MAX_429_RETRIES:
                return response
            attempts += 1
            self.pacer.rate_limited += 1
            delay = self.pacer.retry_delay(response.headers.get("Retry-After"))
            response.close()
            self.pacer.sleep(delay)


def mount(session: requests.Session, adapter: PacedAdapter) -> requests.Session:
    session.mount("http://", adapter)
    session.mount("https://", adapter)
    return session


class ConformClient:
    """The gate's own requests (discovery and its checks): JSON in, `Exchange` out."""

    def __init__(self, base_url: str, pacer: Pacer, *, timeout: float = 30.0,
                 retry_429: bool = True, paced: bool = True) -> None:
        self.base_url = base_url.rstrip("/")
        self.pacer = pacer
        self.timeout = timeout
        self.session = mount(requests.Session(), PacedAdapter(pacer, retry_429=retry_429,
                                                               paced=paced))
        self.exchanges = 0

    def request(
        self,
        method: str,
        path: str,
        *,
        token: str | None = None,
        authorization: str | None = None,
        params: Mapping[str, Any] | None = None,
        body: Any = None,
    ) -> Exchange:
        headers: dict[str, str] = {"Accept": "application/json"}
        if authorization is not None:
            headers["Authorization"] = authorization
        elif token is not None:
            headers["Authorization"] = f"Bearer {token}"
        data: bytes | None = None
        if body is not None:
            headers["Content-Type"] = "application/json"
            data = json.dumps(body).encode()
        clean = {k: _wire(v) for k, v in (params or {}).items() if v is not None}
        url = self.base_url + path
        if clean:
            url += "?" + urlencode(clean)
        self.exchanges += 1
        try:
            response = self.session.request(method, url, headers=headers, data=data,
                                            timeout=self.timeout, allow_redirects=False)
        except TRANSPORT_ERRORS as exc:
            # No response: the exchange says why (the gate's watch has failed the run).
            return Exchange(method=method, url=url, headers=headers, body=body, status=None,
                            error=f"{type(exc).__name__}: {exc}")
        return Exchange(
            method=method, url=url, headers=headers, body=body, status=response.status_code,
            response_headers=dict(response.headers), response_text=response.text,
        )

    def close(self) -> None:
        self.session.close()


def _wire(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
