"""Verification over the journal: which requests a test's expectation names (`select`), the
message of an expectation that failed with the closest requests (`called_message`, as
WireMock's `verify` prints its near misses), and the requests no test should have caused
(`unexpected`: the strict-requests mode, decisions W1 to W3).

Pure functions of `RecordedRequest`s (control.py), so they work over both transports: the
fixture reads the journal once through its control and filters here.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from ..engine.faults import compile_path
from .control import RecordedRequest

__all__ = ["Expectation", "called_message", "describe", "parse_target", "select",
           "unexpected", "unexpected_message"]

_METHOD = re.compile(r"[A-Z]+")
SHOWN = 5  # matching requests listed in a failure message
CLOSEST = 3  # near misses listed


@dataclass(frozen=True)
class Expectation:
    """What `calls()` and `assert_called()` look for: each part None matches anything. `path`
    is exact (a trailing slash optional), a template (`/v1/tickets/{id}`) or a prefix ending
    in `*`, as a fault rule's (decision W1)."""

    operation: str | None = None
    method: str | None = None
    path: str | None = None
    status: int | None = None
    _pattern: re.Pattern[str] | None = field(default=None, init=False, repr=False,
                                             compare=False)

    def __post_init__(self) -> None:
        if self.method is not None:
            object.__setattr__(self, "method", self.method.upper())
        if self.path is not None and not self.path.startswith("/"):
            raise ValueError(f"path {self.path!r} must start with '/'")
        object.__setattr__(self, "_pattern", compile_path(self.path))

    def matches(self, entry: RecordedRequest) -> bool:
        if self.operation is not None and entry.operation_id != self.operation:
            return False
        if self.method is not None and entry.method != self.method:
            return False
        if self.status is not None and entry.status != self.status:
            return False
        pattern = self._pattern
        return pattern is None or pattern.fullmatch(entry.path) is not None

    def __str__(self) -> str:
        parts = [p for p in (self.method, self.operation, self.path) if p]
        text = " ".join(parts) or "any request"
        return text + (f" answered {self.status}" if self.status is not None else "")


def parse_target(target: str, *, method: str | None = None,
                 status: int | None = None) -> Expectation:
    """`assert_called`'s first argument: an operationId (`listTickets`), a path
    (`/v1/tickets/{id}`) or a method and a path (`POST /v1/tickets`)."""
    head, _, rest = target.strip().partition(" ")
    if rest and _METHOD.fullmatch(head):
        if method is not None and method.upper() != head:
            raise ValueError(f"{target!r} names {head}, and method={method!r} another")
        return Expectation(method=head, path=rest.strip(), status=status)
    if target.startswith("/"):
        return Expectation(method=method, path=target, status=status)
    return Expectation(operation=target, method=method, status=status)


def select(entries: Iterable[RecordedRequest], expected: Expectation) -> list[RecordedRequest]:
    return [e for e in entries if expected.matches(e)]


def describe(entry: RecordedRequest) -> str:
    """One request on one line: `#3 GET /v1/tickets?status=open -> 200 (listTickets)`."""
    query = entry.query_string.decode("latin-1")
    what = entry.operation_id or "no operation"
    extra = f", {entry.fault}" if entry.fault else ""
    return (f"#{entry.seq} {entry.method} {entry.path}{'?' + query if query else ''} "
            f"-> {entry.status} ({what}{extra})")


def _closeness(expected: Expectation, entry: RecordedRequest) -> float:
    """How near a request is to what was expected (0..1+): its path or operation against the
    expectation's, a method or status in common adding a little."""
    score = 0.0
    if expected.path is not None:
        wanted = re.sub(r"\{[^}/]+\}", "x", expected.path.rstrip("*"))
        score += difflib.SequenceMatcher(None, wanted, entry.path).ratio()
    if expected.operation is not None:
        score += difflib.SequenceMatcher(None, expected.operation.lower(),
                                         (entry.operation_id or "").lower()).ratio()
    score += 0.25 * (expected.method == entry.method) + 0.1 * (expected.status == entry.status)
    return score


def called_message(expected: Expectation, times: int | None, found: Sequence[RecordedRequest],
                   entries: Sequence[RecordedRequest]) -> str:
    """Why `assert_called` failed: what was expected and how often, the matching requests,
    and the closest others (the near misses), or that the mock received nothing."""
    wanted = "at least once" if times is None else f"{times} time{'s' * (times != 1)}"
    lines = [f"expected {expected} to be called {wanted}; it was called {len(found)} "
             f"time{'s' * (len(found) != 1)}"]
    if found:
        lines.append("matching requests:")
        lines += [f"  {describe(e)}" for e in found[:SHOWN]]
        if len(found) > SHOWN:
            lines.append(f"  ... and {len(found) - SHOWN} more")
    others = [e for e in entries if not expected.matches(e)]
    if others:
        closest = sorted(others, key=lambda e: -_closeness(expected, e))[:CLOSEST]
        lines.append("closest other requests (near misses):")
        lines += [f"  {describe(e)}" for e in closest]
    elif not entries:
        lines.append("the mock received no request in this test")
    return "\n".join(lines)


def is_unexpected(entry: RecordedRequest) -> bool:
    """A request no test means to cause (decision W2): a 404 for a route the document does
    not have (no operation named), a 405, or a 5xx, unless a fault or stub the test planted
    answered it."""
    if entry.fault is not None:
        return False
    return (entry.status == 405 or entry.status >= 500
            or (entry.status == 404 and entry.operation_id is None))


def unexpected(entries: Iterable[RecordedRequest]) -> list[RecordedRequest]:
    return [e for e in entries if is_unexpected(e)]


def unexpected_message(found: Sequence[RecordedRequest]) -> str:
    return ("mock_api strict requests: the code under test made requests the API could not "
            "answer (an unknown route, a method it does not allow, or a server error):\n"
            + "\n".join(f"  {describe(e)}" for e in found)
            + "\n(turn this off for the test with @pytest.mark.mock_api(strict_requests=False))")
