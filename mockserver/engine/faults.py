"""Fault injection: make the next N matching requests fail, slow down, or lose their connection.

A rule matches by method (any when omitted) and path: exact (`/v1/agents`), a template
(`/v1/tickets/{id}`) or a prefix (`/v1/tickets/*`). It answers with a status (and an
`{"error": ...}` body), waits `delay_ms` first (then answers normally when no status is given),
or drops the connection (`drop`). `count` limits how many requests it hits (None: until
cleared); `probability` makes it hit only a fraction of matching requests (seeded, so runs
repeat). Rules are tried in the order they were added; the first that fires wins.

Each kind of fault is an `Effect` (`Delay`, `Status`, `Drop`): a fired rule's `effect()`
owns what it does to the request (waits, answers in the core's place, sends), and the
pipeline's fault layer (layers.py) only calls it. A new kind is a new `Effect` here.
"""

from __future__ import annotations

import difflib
import logging
import random
import re
import threading
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

import anyio
import orjson
from starlette.types import Send

from .responses import message_body

__all__ = ["Answer", "ConnectionDropped", "Delay", "Drop", "Effect", "FaultRule", "Faults", "Status",
           "compile_path", "fault_target_problem"]


class ConnectionDropped(Exception):
    """Raised by a dropped-connection fault after the response started: the server closes the
    socket mid-response, which is what a client sees when a connection is lost."""


class _QuietDrops(logging.Filter):
    # uvicorn logs every exception an app raises; an injected drop is not worth a traceback.
    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        return not isinstance(exc, ConnectionDropped)


_quiet = _QuietDrops()
logging.getLogger("uvicorn.error").addFilter(_quiet)


RawHeaders = list[tuple[bytes, bytes]]


class Effect:
    """What a fired rule does to the request it hits: one kind of fault. The pipeline's
    fault layer (layers.py) waits `wait()`, takes `answer()` instead of the core's answer
    (None: the core answers) and sends through `send`."""

    __slots__ = ("rule",)

    def __init__(self, rule: FaultRule) -> None:
        self.rule = rule

    async def wait(self) -> None:
        """A rule's `delay_ms`, before anything is answered."""
        if self.rule.delay_ms:
            await anyio.sleep(self.rule.delay_ms / 1000)

    def answer(self) -> tuple[int, bytes, RawHeaders] | None:
        return None

    async def send(self, status: int, body: bytes, headers: RawHeaders, send: Send) -> None:
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})


class Delay(Effect):
    """A rule with only `delay_ms`: the request waits, then is answered as usual."""

    __slots__ = ()


class Status(Effect):
    """A rule with a `status`: answered `{"error": ...}` with it (and the rule's headers;
    `Retry-After: 1` on a 429 unless given), never self-checked: injected on purpose."""

    __slots__ = ()

    def answer(self) -> tuple[int, bytes, RawHeaders] | None:
        rule = self.rule
        assert rule.status is not None
        message = rule.error or f"injected fault: {rule.describe()} answered {rule.status}"
        body = message_body(message)
        headers = dict(rule.headers)
        if rule.status == 429:
            headers.setdefault("Retry-After", "1")
        raw = [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in headers.items()]
        raw.append((b"content-length", str(len(body)).encode()))
        if all(name != b"content-type" for name, _ in raw):  # the rule's own kept
            raw.append((b"content-type", b"application/json"))
        return rule.status, body, raw


class Answer(Effect):
    """A stub (a rule with `stub`): the whole answer the test gave, its status, JSON body
    (`body`; None: no body) and headers, in the core's place. Not self-checked when sent: it
    was checked against the document when made, unless made `off_contract` (decision W4)."""

    __slots__ = ()

    def answer(self) -> tuple[int, bytes, RawHeaders] | None:
        rule = self.rule
        assert rule.status is not None
        body = b"" if rule.body is None else orjson.dumps(rule.body)
        raw = [(k.lower().encode("latin-1"), v.encode("latin-1"))
               for k, v in rule.headers.items()]
        raw.append((b"content-length", str(len(body)).encode()))
        if body and all(name != b"content-type" for name, _ in raw):
            raw.append((b"content-type", b"application/json"))
        return rule.status, body, raw


class Drop(Effect):
    """A rule with `drop`: the connection is lost mid-response (journaled as a 200 without a
    body: the status the response started with)."""

    __slots__ = ()

    def answer(self) -> tuple[int, bytes, RawHeaders] | None:
        return 200, b"", [(b"content-length", b"0")]

    async def send(self, status: int, body: bytes, headers: RawHeaders, send: Send) -> None:
        # Start a response that promises a body, then fail: uvicorn closes the transport and
        # the client gets "server disconnected without sending a complete response".
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"application/json"),
                                (b"content-length", b"1000")]})
        raise ConnectionDropped("injected fault: connection dropped")


def compile_path(path: str | None) -> re.Pattern[str] | None:
    """The pattern of a rule's path: exact (a trailing slash optional), a template
    (`/v1/tickets/{id}`: one segment per parameter) or a prefix ending in `*`; None: any."""
    if path is None:
        return None
    path = path.rstrip("/") or "/"
    if path.endswith("*"):
        return re.compile(re.escape(path[:-1]) + ".*")
    pattern = re.sub(r"\\\{[^}/]+\\\}", "[^/]+", re.escape(path))
    return re.compile(pattern + "/?")


# RFC 9110 5.1 and 5.5: a field name is a token; a value is visible ASCII, spaces and tabs, or
# obs-text (Latin-1), never CR, LF or another control character.
_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
_FIELD_VALUE = re.compile(r"[\t\x20-\x7e\x80-\xff]*")
_FRAMING = frozenset(("content-length", "transfer-encoding", "connection"))


def _check_header(name: Any, value: Any) -> None:
    """ValueError naming a header of a fault rule that could not be sent as given."""
    if not isinstance(name, str) or not _TOKEN.fullmatch(name):
        raise ValueError(f"headers: {name!r} is not a header name (RFC 9110 token)")
    if name.lower() in _FRAMING:
        raise ValueError(f"headers: {name!r} is set by the server (it frames the response)")
    if not isinstance(value, str) or not _FIELD_VALUE.fullmatch(value):
        raise ValueError(f"headers/{name}: {value!r} is not a header value (no CR, LF or "
                         "control characters; Latin-1 only)")


@dataclass
class FaultRule:
    id: int
    method: str | None = None
    path: str | None = None
    status: int | None = None
    error: str | None = None
    delay_ms: int = 0
    drop: bool = False
    count: int | None = 1
    probability: float = 1.0
    headers: dict[str, str] = field(default_factory=dict)
    hits: int = 0
    # A stub: answers `status` with `body` (JSON; None: none) and `headers`, a whole answer
    # (`Answer`); `off_contract` when it was not checked against the document (W4, W5).
    stub: bool = False
    body: Any = None
    off_contract: bool = False
    _pattern: re.Pattern[str] | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.method is not None:
            self.method = self.method.upper()
        self._pattern = compile_path(self.path)
        if self.status is None and not self.drop and not self.delay_ms:
            raise ValueError("a fault needs a status, a delay_ms or drop")
        if self.stub and (self.status is None or self.drop):
            raise ValueError("a stub answers: it needs a status and cannot drop")
        if self.stub and self.status is not None and self.status < 200:
            raise ValueError(f"status: {self.status} is not a final answer (a stub's is "
                             "200-599)")
        if self.stub and self.status in (204, 304) and self.body is not None:
            raise ValueError(f"json: a {self.status} answer has no body")
        if not self.stub and (self.body is not None or self.off_contract):
            raise ValueError("only a stub has a body (a fault's is its error)")
        if self.status is not None and not 100 <= self.status <= 599:
            raise ValueError(f"status {self.status} is not an HTTP status")
        if not 0.0 <= self.probability <= 1.0:
            raise ValueError("probability must be between 0 and 1")
        if self.count is not None and self.count < 1:
            raise ValueError("count must be at least 1 (or null for every request)")
        for name, value in self.headers.items():
            _check_header(name, value)

    def matches(self, method: str, path: str) -> bool:
        if self.method is not None and self.method != method:
            return False
        return self._pattern is None or self._pattern.fullmatch(path) is not None

    @property
    def remaining(self) -> int | None:
        return None if self.count is None else self.count - self.hits

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "method": self.method, "path": self.path, "status": self.status,
                "error": self.error, "delay_ms": self.delay_ms, "drop": self.drop,
                "count": self.count, "probability": self.probability,
                "headers": self.headers, "hits": self.hits, "remaining": self.remaining,
                **({"stub": True, "json": self.body, "off_contract": self.off_contract}
                   if self.stub else {})}

    def describe(self) -> str:
        if self.stub:  # the journal's `fault` of the requests it answered (W5)
            return (f"stub #{self.id} ({self.status}"
                    f"{', off-contract' if self.off_contract else ''})")
        what = "drop" if self.drop else (f"status {self.status}" if self.status else "delay")
        return f"fault #{self.id} ({what})"

    def effect(self) -> Effect:
        """What firing this rule does to a request (its kind: stub, drop, status or delay)."""
        if self.stub:
            return Answer(self)
        if self.drop:
            return Drop(self)
        if self.status is not None:
            return Status(self)
        return Delay(self)


class Faults:
    """The active fault rules. `rules` is empty when idle: the pipeline checks only that."""

    def __init__(self, seed: int = 0) -> None:
        self.rules: list[FaultRule] = []
        self._next_id = 1  # ids go on across clears and resets
        self._lock = threading.Lock()
        self._random = random.Random(seed)

    def reseed(self, seed: int) -> None:
        """Start the probability draws over (`MockApp.reset` calls it): after a reset the same
        rules fire on the same requests as after start-up, whatever ran before."""
        with self._lock:
            self._random.seed(seed)

    def add(self, **spec: Any) -> FaultRule:
        with self._lock:
            rule = FaultRule(id=self._next_id, **spec)
            self._next_id += 1
            self.rules = [*self.rules, rule]
        return rule

    @property
    def next_id(self) -> int:
        return self._next_id

    def export(self) -> dict[str, Any]:
        """The rules (with their hits), the random draws' state and the next id: what
        `restore` takes back (a replicated checkpoint, as JSON)."""
        with self._lock:
            version, internal, gauss = self._random.getstate()
            return {"rules": [{k: v for k, v in asdict(rule).items()
                               if not k.startswith("_")} for rule in self.rules],
                    "random": [version, list(internal), gauss], "next_id": self._next_id}

    def restore(self, exported: dict[str, Any]) -> None:
        rules = [FaultRule(**spec) for spec in exported["rules"]]
        version, internal, gauss = exported["random"]
        with self._lock:
            self.rules = rules
            self._random.setstate((version, tuple(internal), gauss))
            self._next_id = exported["next_id"]

    def start_over(self, seed: int, next_id: int) -> None:
        """No rules, the draws from `seed`, ids from `next_id` (a reset)."""
        with self._lock:
            self.rules = []
            self._random.seed(seed)
            self._next_id = next_id

    def clear(self) -> int:
        with self._lock:
            count = len(self.rules)
            self.rules = []
        return count

    def remove(self, rule_id: int) -> bool:
        with self._lock:
            kept = [r for r in self.rules if r.id != rule_id]
            found = len(kept) != len(self.rules)
            self.rules = kept
        return found

    def take(self, method: str, path: str) -> FaultRule | None:
        """The rule that fires for this request (its count consumed), or None."""
        with self._lock:
            for rule in self.rules:
                if not rule.matches(method, path):
                    continue
                if rule.probability < 1.0 and self._random.random() >= rule.probability:
                    continue
                rule.hits += 1
                if rule.count is not None and rule.hits >= rule.count:
                    self.rules = [r for r in self.rules if r is not rule]
                return rule
        return None


# -- a rule that can match: checked where it is made (decision U2) -----------------------------

def _segment_fits(given: str, template: str) -> bool:
    return given == template or given.startswith("{") or template.startswith("{")


def _path_fits(path: str, template: str) -> bool:
    """Whether a rule's path (exact, a template, or a prefix ending in `*`) can match some
    request path of the operation at `template`."""
    path = path.rstrip("/") or "/"
    wanted, segments = template.split("/"), path.split("/")
    if not path.endswith("*"):
        return len(segments) == len(wanted) and all(map(_segment_fits, segments, wanted))
    *whole, partial = path[:-1].split("/")
    if len(whole) >= len(wanted) or not all(map(_segment_fits, whole, wanted)):
        return False
    last = wanted[len(whole)]
    return last.startswith("{") or last.startswith(partial)


def fault_target_problem(routes: Iterable[tuple[str, str]], method: str | None,
                         path: str | None) -> tuple[str, str] | None:
    """Why a rule with this method and path would never fire on the API whose operations are
    `routes` ((METHOD, path template) pairs): (field, message), or None when it can fire.

    A typo would otherwise be stored and the test fail far from it (200 where a 503 was
    planted); the message names the nearest operation path."""
    routes = list(routes)
    methods = sorted({m for m, _ in routes})
    if method is not None and method.upper() not in methods:
        return "method", (f"{method!r} is not a method of the API's operations "
                          f"(one of {', '.join(methods)})")
    if path is None:
        return None
    fitting = [(m, t) for m, t in routes if _path_fits(path, t)]
    if not fitting:
        templates = sorted({t for _, t in routes})
        [nearest] = difflib.get_close_matches(path, templates, n=1, cutoff=0) or templates[:1]
        return "path", (f"{path!r} matches no operation of the API; the nearest operation "
                        f"path is {nearest!r} (a rule's path is exact, a template such as "
                        "'/v1/tickets/{id}', or a prefix ending in '*')")
    if method is not None and all(m != method.upper() for m, _ in fitting):
        answered = ", ".join(sorted({m for m, _ in fitting}))
        return "method", (f"no operation answers {method.upper()} on {path!r} "
                          f"(it answers {answered})")
    return None
