"""Time for the store and the rate limiter, injectable so that tests never sleep."""

from __future__ import annotations

import math
import threading
import time
from datetime import UTC, datetime, timedelta

__all__ = ["CLOCK_RANGE", "MAX_CLOCK_MS", "MAX_MS", "MIN_CLOCK_MS", "MIN_MS", "Clock",
           "check_clock", "format_timestamp", "normalise_instant", "parse_clock",
           "parse_timestamp"]

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MS = timedelta(milliseconds=1)
# The instants the API's timestamp form can write: years 0001 to 9999, in UTC.
MIN_MS = (datetime(1, 1, 1, tzinfo=UTC) - _EPOCH) // _MS
MAX_MS = (datetime(9999, 12, 31, 23, 59, 59, 999000, tzinfo=UTC) - _EPOCH) // _MS


def format_timestamp(epoch_ms: int) -> str:
    """ISO 8601 UTC with milliseconds, the API's timestamp form (2026-04-03T03:14:15.000Z).

    Years below 1000 are zero-padded to four digits (`0313-12-12T…`); an instant outside
    years 0001-9999 has no such form and raises ValueError.
    """
    if not MIN_MS <= epoch_ms <= MAX_MS:
        raise ValueError(f"{epoch_ms} ms is outside years 0001-9999")
    dt = _EPOCH + epoch_ms * _MS
    return (f"{dt.year:04d}-{dt.month:02d}-{dt.day:02d}T{dt.hour:02d}:{dt.minute:02d}:"
            f"{dt.second:02d}.{dt.microsecond // 1000:03d}Z")


def _parse(value: str) -> datetime:
    # RFC 3339 allows a lowercase `t` and `z`; Python's parser wants them in upper case.
    dt = datetime.fromisoformat(value.upper().replace("Z", "+00:00"))
    return dt if dt.tzinfo is not None else dt.replace(tzinfo=UTC)  # no offset: UTC


def parse_timestamp(value: str) -> int:
    """Epoch milliseconds of an ISO 8601 timestamp (any offset accepted, Z included; without
    one, UTC), rounded down to the millisecond. ValueError when it names no instant."""
    return (_parse(value) - _EPOCH) // _MS


def normalise_instant(value: str) -> str:
    """An input date-time in any ISO 8601 / RFC 3339 form, as the API writes timestamps.

    It is rounded *up* to the millisecond, which keeps the meaning of both kinds of bound the
    API takes (an inclusive lower bound, an exclusive upper one) against millisecond
    timestamps; an instant past the years 0001-9999 (an offset can move one there) is clamped
    to the nearest instant the form can write, which selects the same records.
    ValueError when `value` names no instant.
    """
    exact = _parse(value) - _EPOCH
    ceiled = -(-exact // _MS)
    return format_timestamp(min(max(ceiled, MIN_MS), MAX_MS))


# The instants a clock may be set to: what the API's timestamp form writes (years 0001-9999),
# less one day at the top. Writes stamp instants a little past the clock (strictly increasing
# timestamps, an upload URL's hour), so a clock at the very last instant would leave them
# nothing to write.
MIN_CLOCK_MS = MIN_MS  # 0001-01-01T00:00:00.000Z
MAX_CLOCK_MS = MAX_MS - 86_400_000  # 9999-12-30T23:59:59.999Z
CLOCK_RANGE = "0001-01-01T00:00:00.000Z to 9999-12-30T23:59:59.999Z"


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

    def __init__(self, frozen_at: str | None = None, offset_ms: int = 0) -> None:
        self._lock = threading.Lock()
        self._offset_ms = offset_ms  # of a real clock: a fork of a moved session's snapshot
        self._frozen_ms: int | None = parse_clock(frozen_at) if frozen_at else None
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

    def restart(self, frozen_at: str | None, offset_ms: int = 0) -> None:
        """Frozen at this instant, or (None) on wall time plus `offset_ms`: a clock as new."""
        with self._lock:
            self._offset_ms = offset_ms
            self._frozen_ms = parse_clock(frozen_at) if frozen_at else None

    def set(self, instant: str) -> None:
        """Stand at `instant`; ValueError (the clock unmoved) when it is not one in range."""
        with self._lock:
            target = parse_clock(instant)
            if self._frozen_ms is not None:
                self._frozen_ms = target
            else:
                self._offset_ms = target - int(time.time() * 1000)

    def move(self, *, advance_ms: int | None = None, target_ms: int | None = None,
             wall_ms: int | None = None, frozen: bool | None = None) -> None:
        """A clock move as a command holds it (state.py): by `advance_ms`, or to `target_ms`
        (a real clock keeps the offset from `wall_ms`, the wall time the move was asked at,
        so that every copy of a replicated clock gets the same offset), then frozen where it
        stands (`frozen=True`) or running on from there (`frozen=False`). Checked before."""
        with self._lock:
            self._move(advance_ms, target_ms, wall_ms)
            if frozen is None or frozen == (self._frozen_ms is not None):
                return
            wall = int(time.time() * 1000) if wall_ms is None else wall_ms
            if frozen:  # stands still at the instant it showed
                self._frozen_ms, self._offset_ms = wall + self._offset_ms, 0
            elif self._frozen_ms is not None:  # runs on from the instant it stood at
                self._offset_ms = self._frozen_ms - wall
                self._frozen_ms = None

    def _move(self, advance_ms: int | None, target_ms: int | None, wall_ms: int | None) -> None:
        if advance_ms is not None:
            if self._frozen_ms is not None:
                self._frozen_ms += advance_ms
            else:
                self._offset_ms += advance_ms
        elif target_ms is not None:
            if self._frozen_ms is not None:
                self._frozen_ms = target_ms
            else:
                wall = int(time.time() * 1000) if wall_ms is None else wall_ms
                self._offset_ms = target_ms - wall

    def export(self) -> tuple[int | None, int]:
        """(the frozen instant or None, the offset of a real clock), in ms: what `restore`
        takes back (a replicated checkpoint)."""
        with self._lock:
            return self._frozen_ms, self._offset_ms

    def restore(self, frozen_ms: int | None, offset_ms: int) -> None:
        with self._lock:
            self._frozen_ms, self._offset_ms = frozen_ms, offset_ms
