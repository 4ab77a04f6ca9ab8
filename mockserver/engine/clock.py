"""Time for the store and the rate limiter, injectable so that tests never sleep."""

from __future__ import annotations

import math
import threading
import time
from datetime import UTC, datetime

__all__ = ["CLOCK_RANGE", "MAX_CLOCK_MS", "MIN_CLOCK_MS", "Clock", "check_clock",
           "format_timestamp", "parse_clock", "parse_timestamp"]


def format_timestamp(epoch_ms: int) -> str:
    """ISO 8601 UTC with milliseconds, the API's timestamp form (2026-04-03T03:14:15.000Z)."""
    dt = datetime.fromtimestamp(epoch_ms / 1000, tz=UTC)
    return dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{epoch_ms % 1000:03d}Z"


def parse_timestamp(value: str) -> int:
    """Epoch milliseconds of an ISO 8601 timestamp (any offset accepted, Z included)."""
    dt = datetime.fromisoformat(value.replace("Z", "+00:00"))
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return int(dt.timestamp() * 1000)


# The instants a clock may be set to: what the API's timestamp form writes (four-digit years,
# 1000-01-01 ... 9999-12-31), less one day at the top. Writes stamp instants a little past the
# clock (strictly increasing timestamps, an upload URL's hour), so a clock at the very last
# instant would leave them nothing to write.
MIN_CLOCK_MS = -30_610_224_000_000  # 1000-01-01T00:00:00.000Z
MAX_CLOCK_MS = 253_402_214_399_999  # 9999-12-30T23:59:59.999Z
CLOCK_RANGE = "1000-01-01T00:00:00.000Z to 9999-12-30T23:59:59.999Z"


def check_clock(epoch_ms: int) -> int:
    """`epoch_ms` when a clock may stand there; ValueError naming the range otherwise."""
    if not MIN_CLOCK_MS <= epoch_ms <= MAX_CLOCK_MS:
        raise ValueError(f"outside the clock's range, {CLOCK_RANGE}")
    return epoch_ms


def parse_clock(value: str) -> int:
    """Epoch milliseconds of an instant a clock may be set to (ValueError otherwise)."""
    try:
        epoch_ms = parse_timestamp(value)
    except (ValueError, OverflowError):
        raise ValueError("not an ISO 8601 instant") from None
    return check_clock(epoch_ms)


class Clock:
    """Wall time plus an offset, or a frozen instant that only moves when told to.

    `Clock()` follows real time; `Clock(frozen_at="2026-11-01T12:00:00.000Z")` starts frozen.
    `advance()` and `set()` work in both modes (they move the offset of a real clock).
    """

    def __init__(self, frozen_at: str | None = None) -> None:
        self._lock = threading.Lock()
        self._offset_ms = 0
        self._frozen_ms: int | None = parse_timestamp(frozen_at) if frozen_at else None
        # Counts readings: the pipeline caches no answer whose handler read the time.
        self.reads = 0

    @property
    def frozen(self) -> bool:
        return self._frozen_ms is not None

    def now_ms(self) -> int:
        self.reads += 1
        if self._frozen_ms is not None:
            return self._frozen_ms
        return int(time.time() * 1000) + self._offset_ms

    def now(self) -> str:
        return format_timestamp(self.now_ms())

    def monotonic(self) -> float:
        """Seconds, for rate-limit windows; moves with advance() and set()."""
        return self.now_ms() / 1000

    def advance(self, seconds: float) -> None:
        """Move by `seconds`; ValueError (the clock unmoved) when that leaves its range."""
        with self._lock:
            if not math.isfinite(seconds):
                raise ValueError("not a finite number of seconds")
            delta = int(seconds * 1000)
            now = self._frozen_ms if self._frozen_ms is not None else (
                int(time.time() * 1000) + self._offset_ms)
            check_clock(now + delta)
            if self._frozen_ms is not None:
                self._frozen_ms += delta
            else:
                self._offset_ms += delta

    def follow_wall_time(self) -> None:
        """A real clock back on wall time (no offset); a frozen clock is left as it is."""
        with self._lock:
            self._offset_ms = 0

    def restart(self, frozen_at: str | None) -> None:
        """Frozen at this instant, or (None) on wall time with no offset: a clock as new."""
        with self._lock:
            self._offset_ms = 0
            self._frozen_ms = parse_timestamp(frozen_at) if frozen_at else None

    def set(self, instant: str) -> None:
        """Stand at `instant`; ValueError (the clock unmoved) when it is not one in range."""
        with self._lock:
            target = parse_clock(instant)
            if self._frozen_ms is not None:
                self._frozen_ms = target
            else:
                self._offset_ms = target - int(time.time() * 1000)
