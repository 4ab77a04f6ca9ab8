"""The recorder's HTTP side: paced under the documented rate limit, 429s retried after
`Retry-After`, transient failures retried; every answer handed back with its status."""

from __future__ import annotations

import email.utils
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx

__all__ = ["MAX_RETRY_AFTER", "PacedClient", "RecordError", "retry_after_seconds"]

MAX_RETRIES = 30  # consecutive 429 or transient answers to one request before giving up
# The longest `Retry-After` the recorder waits: a larger one (a day, `999999999`) is waited
# this long, counted in `capped_retry_after` and said in the output (DECISIONS H31).
MAX_RETRY_AFTER = 300.0
TRANSIENT = (500, 502, 503, 504)


class RecordError(Exception):
    """The recording cannot go on (the server refuses the token, keeps failing, ...)."""


def retry_after_seconds(value: str | None, now: float, default: float) -> float:
    """Seconds to wait from a `Retry-After` header (delta-seconds or an HTTP date)."""
    if not value:
        return default
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return default
    return max(0.0, when.timestamp() - now)


@dataclass
class PacedClient:
    """GETs through `client`, at most `per_minute` requests a minute (0: unpaced)."""

    client: httpx.Client
    per_minute: int = 120
    sleep: Callable[[float], None] = time.sleep
    clock: Callable[[], float] = time.monotonic
    requests: int = 0
    retried_429: int = 0
    retried_transient: int = 0
    capped_retry_after: int = 0  # 429s whose Retry-After was longer than MAX_RETRY_AFTER
    elapsed: float = 0.0
    waited: float = 0.0  # seconds slept: pacing, Retry-After, back-off
    # Told of each wait before it starts, with its reason (the progress line shows it).
    on_wait: Callable[[float, str], None] | None = None
    _next_at: float = field(default=0.0, repr=False)

    def _wait(self, seconds: float, reason: str) -> None:
        self.waited += seconds
        if self.on_wait is not None:
            self.on_wait(seconds, reason)
        self.sleep(seconds)

    def _pace(self) -> None:
        if self.per_minute <= 0:
            return
        now = self.clock()
        if now < self._next_at:
            self._wait(self._next_at - now, f"pacing at {self.per_minute} requests/min (--rate)")
        self._next_at = max(now, self._next_at) + 60.0 / self.per_minute

    def get(self, path: str, params: dict[str, Any]) -> httpx.Response:
        """The answer to GET `path` (not a 429, not a transient 5xx unless retries ran out)."""
        failures = 0
        while True:
            self._pace()
            started = time.monotonic()
            try:
                response = self.client.get(path, params=params)
            except httpx.TransportError as exc:
                failures += 1
                if failures > MAX_RETRIES:
                    raise RecordError(f"GET {path}: {type(exc).__name__}: {exc}") from None
                self.retried_transient += 1
                self._wait(min(30.0, 2.0 ** min(failures, 5)),
                           f"GET {path}: {type(exc).__name__}, retrying")
                continue
            finally:
                self.elapsed += time.monotonic() - started
            self.requests += 1
            if response.status_code == 429:
                failures += 1
                self.retried_429 += 1
                header = response.headers.get("retry-after")
                wait = retry_after_seconds(header, time.time(), 1.0)
                if wait > MAX_RETRY_AFTER:
                    self.capped_retry_after += 1
                    sys.stderr.write(f"\nGET {path}: Retry-After "
                                     f"{response.headers.get('retry-after')!r} capped to "
                                     f"{MAX_RETRY_AFTER:.0f} s\n")
                    wait = MAX_RETRY_AFTER
                if failures > MAX_RETRIES:
                    raise RecordError(f"GET {path}: still 429 after {MAX_RETRIES} retries")
                self._wait(wait, f"the server answered 429 (rate limit), Retry-After: "
                                 f"{header if header is not None else 'none, 1 s'}")
                continue
            if response.status_code in TRANSIENT and failures < 5:
                failures += 1
                self.retried_transient += 1
                self._wait(min(30.0, 2.0 ** failures),
                           f"GET {path}: {response.status_code}, retrying")
                continue
            if response.status_code == 401:
                raise RecordError(f"GET {path}: 401: the server refuses the token")
            return response
