"""The request journal: what clients sent the mock and what it answered, newest last.

Recording must stay cheap (it runs on every request while enabled), so an entry keeps the raw
pieces (the ASGI header list, body bytes) in one named tuple, and is only rendered (tokens
redacted, JSON bodies parsed) when someone reads the journal.

Bounded twice, so that a load test cannot exhaust the mock's memory: at most `maxlen` entries
and at most `max_bytes` bytes of kept bodies and headers in all (the oldest entries fall off
first; `dropped` counts them). A body longer than `_MAX_BODY_SHOWN` (which was only ever shown
as its size) is not kept: the entry says so in `truncated` and keeps the original size.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, NamedTuple, TypeAlias
from urllib.parse import parse_qsl

import orjson

from .auth import redact
from .clock import format_timestamp

__all__ = ["OBSERVED_FIELDS", "Journal", "JournalEntry", "Observed", "header_size",
           "redact_header"]

# Headers whose values are credentials: shown redacted, never verbatim.
_SECRET_HEADERS = {"authorization", "x-mock-control-token", "cookie", "proxy-authorization"}
_MAX_BODY_SHOWN = 65_536
MAX_JOURNAL_BYTES = 64 * 1024 * 1024  # the default byte budget of the whole journal
_ENTRY_OVERHEAD = 256  # bytes counted for an entry besides its bodies, headers and query


def header_size(raw_headers: Iterable[tuple[bytes, bytes]]) -> int:
    """The bytes of a raw header list's names and values."""
    return sum(map(len, itertools.chain.from_iterable(raw_headers)))


def redact_header(name: str, value: str) -> str:
    if name not in _SECRET_HEADERS:
        return value
    scheme, _, token = value.partition(" ")
    if token:
        return f"{scheme} {redact(token.strip())}"
    return redact(value)


def _body(raw: bytes | None, size: int = 0) -> Any:
    if size > _MAX_BODY_SHOWN:
        return f"<{size} bytes, not kept>"
    if not raw:
        return None
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return raw.decode("utf-8", "replace")


# One request as the pipeline hands it to the journal (`Journal.record`; a shared journal
# encodes the same): a plain tuple of these fields, in this order. Not a NamedTuple: making
# one costs about 2% of a request's instructions (bench/bench_request_instructions.py), and
# the journal reads it by position only.
OBSERVED_FIELDS = (
    "time_ms",  # the mock clock when the request arrived
    "method", "path", "query_string", "raw_headers",
    "body",  # None: not a body method, or its body could not be read
    "status", "response_body", "latency_ms", "operation_id", "fault", "ignored_params",
    "header_bytes",  # the request headers' bytes, when already counted (None: counted here)
)
Observed: TypeAlias = tuple[int, str, str, bytes, Sequence[tuple[bytes, bytes]], bytes | None,
                            int, bytes | None, float, str | None, str | None, tuple[str, ...],
                            int | None]


class JournalEntry(NamedTuple):
    """One request the mock received, and its answer (a named tuple: one object, cheap to make
    on every request). `mock_api.requests()` returns these; `to_dict()` is what
    `GET /__mock__/requests` lists.

    Attributes:
        seq: Its number in the journal, increasing with every request recorded.
        time_ms: The mock's clock when the request arrived, in epoch milliseconds (`time` is
            the same as an ISO 8601 string).
        method: The HTTP method, upper case.
        path: The request's path, without the session prefix or the query string.
        query_string: The raw query string (`query` parses it).
        raw_headers: The request's headers as received (`headers` gives them with the
            credentials redacted: read that one).
        body: The request's body, or None when there was none or it was over 64 KiB (then
            `truncated` names it and `body_size` is its size); `json` parses it.
        status: The status the mock answered.
        response_body: The answer's body, or None past 64 KiB (then `truncated` names it and
            `response_size` is its size).
        latency_ms: The time the mock took to answer, in wall-clock milliseconds.
        operation_id: The document's operationId the request matched (None: no operation,
            e.g. a 404 on an unknown path).
        fault: The injected fault that answered it (`mock_api.fault(...)`), or None.
        ignored_params: Query parameters the API does not document, which the mock ignored
            (as the real service does) and reported here.
        truncated: What was not kept because it was too long: "body" and/or "response_body".
        body_size: The request body's size when it was not kept, else 0.
        response_size: The answer body's size when it was not kept, else 0.
        wall_ms: The wall-clock time when the request arrived, in epoch milliseconds (`time_ms`
            is the mock clock's; `wall_time` formats this one).
        variations: Indexes of the robustness plan's items that varied this answer (empty
            outside robustness mode).
    """

    seq: int
    time_ms: int  # the mock clock when the request arrived (formatted when read)
    method: str
    path: str
    query_string: bytes
    raw_headers: Sequence[tuple[bytes, bytes]]
    body: bytes | None
    status: int
    response_body: bytes | None
    latency_ms: float
    operation_id: str | None
    fault: str | None  # the injected fault that answered, if any
    ignored_params: tuple[str, ...] = ()  # unknown query parameters the mock ignored
    # What was not kept (too long): "body" and/or "response_body". The bodies' sizes as
    # received, kept or not (0: no body; it was 0 for a kept body).
    truncated: tuple[str, ...] = ()
    body_size: int = 0
    response_size: int = 0
    wall_ms: int = 0  # wall time when the request arrived (time_ms is the mock clock's)
    variations: tuple[int, ...] = ()  # the variation plan's items that varied the answer

    @property
    def time(self) -> str:
        """The mock's clock when the request arrived, e.g. "2026-11-01T12:00:00.000Z"."""
        return format_timestamp(self.time_ms)

    @property
    def wall_time(self) -> str:
        """The wall-clock time when the request arrived, as an ISO 8601 string."""
        return format_timestamp(self.wall_ms)

    @property
    def query(self) -> dict[str, str | list[str]]:
        """The query parameters: a name given once maps to its value, a repeated one to the
        list of its values (`{"workspace_id": "ws_alpine", "limit": "5"}`)."""
        out: dict[str, Any] = {}
        for name, value in parse_qsl(self.query_string.decode("latin-1"), keep_blank_values=True):
            if name in out:
                previous = out[name]
                out[name] = [*previous, value] if isinstance(previous, list) else [previous, value]
            else:
                out[name] = value
        return out

    @property
    def headers(self) -> dict[str, str]:
        """The request's headers, names lower-cased, credentials redacted (the bearer token
        is never shown whole)."""
        out: dict[str, str] = {}
        for raw_name, raw_value in self.raw_headers:
            name = raw_name.decode("latin-1").lower()
            out[name] = redact_header(name, raw_value.decode("latin-1"))
        return out

    @property
    def json(self) -> Any:
        """The request body, parsed when it is JSON ("<N bytes, not kept>" when too long)."""
        return _body(self.body, self.body_size)

    def __repr__(self) -> str:
        # The NamedTuple's own repr would print raw_headers verbatim (the bearer token
        # among them): show the redacted view instead, as `headers` and `to_dict` do.
        return (f"JournalEntry(seq={self.seq}, time={self.time!r}, method={self.method!r}, "
                f"path={self.path!r}, query={self.query!r}, headers={self.headers!r}, "
                f"status={self.status}, operation_id={self.operation_id!r}, "
                f"fault={self.fault!r})")

    def to_dict(self) -> dict[str, Any]:
        """The entry as `GET /__mock__/requests` lists it (JSON-ready)."""
        return {
            "seq": self.seq,
            "time": self.time,
            "wall_time": self.wall_time,
            "method": self.method,
            "path": self.path,
            "query": self.query,
            "headers": self.headers,
            "body": self.json,
            "status": self.status,
            "response_body": _body(self.response_body, self.response_size),
            "latency_ms": round(self.latency_ms, 3),
            "operation_id": self.operation_id,
            "fault": self.fault,
            "ignored_params": list(self.ignored_params),
            "truncated": list(self.truncated),
            **({"variations": list(self.variations)} if self.variations else {}),
            **_tool_run(self.operation_id, self.status, self.response_body),
        }


def _tool_run(operation_id: str | None, status: int, response_body: bytes | None
              ) -> dict[str, Any]:
    """A custom tool's run (`runCustomTool` answered 200): its outcome, logs and time, shown
    by the inspector beside the request (read from the answer when the entry is read)."""
    if operation_id != "runCustomTool" or status != 200 or response_body is None:
        return {}
    try:
        data = orjson.loads(response_body)["data"]
        run = {key: data[key] for key in ("success", "error", "logs", "run_time_ms")}
    except (orjson.JSONDecodeError, KeyError, TypeError):
        return {}
    return {"tool_run": run}


_new_entry = tuple.__new__  # a JournalEntry from all its fields in order, without keywords


def kept_bodies(body: bytes | None, response_body: bytes | None
                ) -> tuple[bytes | None, bytes | None, tuple[str, ...], int, int]:
    """What an entry keeps of its bodies: each, or None past 64 KiB; which were not kept
    (`truncated`), and their sizes as received, kept or not (0: no body)."""
    truncated: tuple[str, ...] = ()
    body_size = len(body) if body is not None else 0
    response_size = len(response_body) if response_body is not None else 0
    if body_size > _MAX_BODY_SHOWN:
        body, truncated = None, ("body",)
    if response_size > _MAX_BODY_SHOWN:
        response_body, truncated = None, (*truncated, "response_body")
    return body, response_body, truncated, body_size, response_size


class Journal:
    """A thread-safe list of `JournalEntry` bounded in entries and in bytes; `maxlen=0`
    disables recording."""

    def __init__(self, maxlen: int = 1000, max_bytes: int = MAX_JOURNAL_BYTES) -> None:
        self.maxlen = maxlen
        self.max_bytes = max_bytes
        self.enabled = maxlen > 0
        self._entries: deque[tuple[JournalEntry, int]] = deque()  # and its kept bytes
        self._bytes = 0
        self.dropped = 0  # entries that fell off (either bound) since the last clear
        self.recorded = 0  # the last entry's `seq`: it moves whenever an entry is added
        self._last_response: bytes | None = None
        self._seq = itertools.count(1)
        self._lock = threading.Lock()

    def record(self, observed: Observed, variations: tuple[int, ...] = ()) -> None:
        """Keep one request, as the pipeline observed it (`Observed`: the `JournalEntry`
        fields but `seq` and what is filled in here, and `header_bytes`, the request
        headers' size when the caller has it already); `variations`, the robustness plan's
        items that varied the answer. Called on every request: one entry made."""
        (time_ms, method, path, query_string, raw_headers, body, status, response_body,
         latency_ms, operation_id, fault, ignored_params, header_bytes) = observed
        truncated: tuple[str, ...] = ()
        # Sizes as received, whether the bodies are kept or not (issue 43)
        body_size = len(body) if body is not None else 0
        response_size = len(response_body) if response_body is not None else 0
        if body_size > _MAX_BODY_SHOWN or response_size > _MAX_BODY_SHOWN:
            body, response_body, truncated, body_size, response_size = kept_bodies(
                body, response_body)
        if response_body is not None:
            # An answer equal to the previous one (a poll) is kept once: the entry shares the
            # bytes already kept, and the new copy is freed at once (its memory reused hot).
            last = self._last_response  # read once: another thread may replace it
            if response_body == last:
                response_body = last
        self._last_response = response_body
        # A tuple of (bytes, bytes) tuples: the garbage collector stops tracking it (a list it
        # would walk in every collection for as long as the entry is kept).
        if type(raw_headers) is not tuple:
            raw_headers = tuple(raw_headers)
        size = (_ENTRY_OVERHEAD + len(query_string)
                + (header_size(raw_headers) if header_bytes is None else header_bytes)
                + (0 if body is None else len(body))
                + (0 if response_body is None else len(response_body)))
        with self._lock:
            self.recorded = seq = next(self._seq)
            entry = _new_entry(JournalEntry, (
                seq, time_ms, method, path, query_string, raw_headers, body, status,
                response_body, latency_ms, operation_id, fault, ignored_params, truncated,
                body_size, response_size, int(time.time() * 1000 - latency_ms), variations))
            entries = self._entries
            entries.append((entry, size))
            self._bytes += size
            while len(entries) > 1 and (len(entries) > self.maxlen
                                        or self._bytes > self.max_bytes):
                self._bytes -= entries.popleft()[1]
                self.dropped += 1

    @property
    def kept_bytes(self) -> int:
        return self._bytes

    def drop_oldest(self, nbytes: int) -> int:
        """Forget the oldest entries until `nbytes` are freed (or none is left); bytes freed."""
        freed = 0
        with self._lock:
            entries = self._entries
            while entries and freed < nbytes:
                size = entries.popleft()[1]
                freed += size
                self._bytes -= size
                self.dropped += 1
        return freed

    def clear(self) -> int:
        with self._lock:
            count = len(self._entries)
            self._entries.clear()
            self._bytes = 0
            self.dropped = 0
            self._last_response = None
        return count

    def __len__(self) -> int:
        return len(self._entries)

    def __iter__(self) -> Iterator[JournalEntry]:
        with self._lock:
            return iter([e for e, _ in self._entries])

    def entries(
        self,
        *,
        method: str | None = None,
        path: str | None = None,
        status: int | None = None,
        after: int | None = None,
    ) -> list[JournalEntry]:
        """Entries oldest first, filtered by method, path prefix, status and sequence number."""
        return select(self, method=method, path=path, status=status, after=after)


def select(entries: Iterable[JournalEntry], *, method: str | None = None,
           path: str | None = None, status: int | None = None,
           after: int | None = None) -> list[JournalEntry]:
    """`entries` filtered as `Journal.entries` filters (a journal kept elsewhere, in Redis,
    filters alike)."""
    found = list(entries)
    if method is not None:
        method = method.upper()
        found = [e for e in found if e.method == method]
    if path is not None:
        found = [e for e in found if e.path.startswith(path)]
    if status is not None:
        found = [e for e in found if e.status == status]
    if after is not None:
        found = [e for e in found if e.seq > after]
    return found
