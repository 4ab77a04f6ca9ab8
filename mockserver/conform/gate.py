"""The configuration of one gate run and the context its checks share."""

from __future__ import annotations

import hashlib
import json
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TextIO

import requests

from .checks import error_shape_violation
from .client import DEFAULT_RATE, ConformClient, Pacer
from .document import Document, OperationFilter
from .registry import OPTIONS, declare
from .violations import Exchange, ServerErrorViolation, Severity, Violation

if TYPE_CHECKING:
    from ..openapi.spec import Operation
    from .discovered import Discovery

__all__ = ["ALL_PHASES", "OWN_CHECKS", "Gate", "GateConfig"]

ALL_PHASES = ("examples", "coverage", "fuzzing", "stateful")
OWN_CHECKS = OPTIONS  # the --checks options (catalogue.check_options: those checks declare)

declare("server_error", family="server-error", option=None, proofs=[
    ("a 5xx on any request the gate sends fails the run, once per operation (here: the laws' "
     "requests)", "a law's request answers 500"),
    ("the same, on discovery's requests", "discovery answers 500"),
    ("the same, on the auth matrix's requests", "the auth matrix meets a 500"),
    ("the same, on schemathesis' requests", "a schemathesis request answers 500"),
    ("a time-out (or dropped connection) counts as a 5xx", "a law's request times out")])


@dataclass
class GateConfig:
    base_url: str
    token: str
    read_token: str | None = None
    foreign_token: str | None = None
    workspace: str | None = None  # default: the first workspace the token lists
    allow_writes: bool = False
    max_examples: int = 20
    seed: int | None = None
    include: list[str] = field(default_factory=list)
    exclude: list[str] = field(default_factory=list)
    rate_limit_probe: bool = False
    max_requests: int | None = None
    rate: float = DEFAULT_RATE
    strict: bool = False
    phases: tuple[str, ...] = ALL_PHASES  # schemathesis phases; () skips them
    checks: tuple[str, ...] = OWN_CHECKS
    max_pages: int = 50  # per pagination walk: bounds the walk on a large real dataset
    request_timeout: float = 30.0
    sleep: Callable[[float], None] = time.sleep
    out: TextIO | None = None  # progress lines; None: stderr
    quiet: bool = False
    min_status_coverage: float | None = None  # percent; below it the run fails
    max_time: float | None = None  # seconds; past it the run stops (INCOMPLETE)
    hypothesis_database: str | None = None  # a directory; None: no example database
    export: str | None = None  # a directory for failures exported as pytest files
    progress_every: float = 15.0  # seconds between progress lines


class Gate:
    """What the checks share: config, document, client, discovery, and the violations found."""

    def __init__(self, config: GateConfig, document: Document | None = None) -> None:
        self.config = config
        self.doc = document or Document()
        self.select = OperationFilter(config.include, config.exclude)
        self.pacer = Pacer(rate=config.rate, max_requests=config.max_requests, sleep=config.sleep)
        self.client = ConformClient(config.base_url, self.pacer, timeout=config.request_timeout)
        self.violations: list[Violation] = []
        self.discovery: Discovery | None = None
        self.workspace: str = config.workspace or ""
        self.notes: list[str] = []  # things a person should know (skipped checks, budget stop)
        self.stopped: str | None = None  # why the run stopped early, if it did
        self.counts: dict[str, int] = {}  # check family -> number of checks performed
        self.phase_started = time.monotonic()
        self.observed: dict[str, set[int]] = {}  # operationId -> statuses answered to it
        self.family = "preflight"  # the family sending requests now (runner sets it)
        self.requests_by_family: dict[str, int] = {}
        self.server_errors: dict[str, ServerErrorViolation] = {}  # operation -> its violation
        self.estimate: int | None = None  # requests the plan expects (progress lines)
        self.started = time.monotonic()
        self._next_progress = self.started + config.progress_every
        self._watch_lock = threading.Lock()
        self.trail: list[Exchange] = []  # this family's writes so far (set-up of an export)
        # law -> operationId -> the walks it made (sort_by/order labels), and what it planned
        self.law_walks: dict[str, dict[str, list[str]]] = {}
        self._tags = 0
        self.withheld_seen = 0  # the pacer's withheld count at the last scenario's end
        self.pacer.watch = self._watch
        self.pacer.on_sent = self._tick
        if config.max_time is not None:
            self.pacer.deadline = self.pacer.clock() + config.max_time

    # -- operations in scope ---------------------------------------------------------------

    def operations(self, *, writes: bool | None = None) -> list[Operation]:
        """Selected operations; `writes=False` only reads, `True` only writes, None both."""
        found = []
        for op in self.doc.operations:
            if not self.select(op):
                continue
            if writes is True and self.doc.is_read(op):
                continue
            if writes is False and not self.doc.is_read(op):
                continue
            found.append(op)
        return found

    # -- requests and findings -------------------------------------------------------------

    def call(self, op: Operation, *, token: str | None = "default", params: dict[str, Any] | None = None,
             path_params: dict[str, Any] | None = None, body: Any = None,
             authorization: str | None = None, check_errors: bool = True) -> Exchange:
        """Send one request for `op`; every 4xx answer is held to the error shape on the way."""
        if token == "default":
            token = self.config.token
        path = op.path
        for name, value in (path_params or {}).items():
            path = path.replace("{" + name + "}", str(value))
        exchange = self.client.request(op.method, path, token=token, params=params, body=body,
                                       authorization=authorization)
        if op.method not in ("GET", "HEAD") and exchange.status is not None \
                and exchange.status < 300:
            self.trail.append(exchange)
        self.observe(op.operation_id, exchange.status)
        if check_errors:
            violation = error_shape_violation(self.doc, op, exchange)
            if violation is not None:
                self.add(violation)
        return exchange

    def observe(self, operation_id: str, status: int | None) -> None:
        """Status coverage: a status the target answered to a request of the operation."""
        if status is not None:
            self.observed.setdefault(operation_id, set()).add(status)

    def unreachable_statuses(self) -> dict[str, str]:
        """Documented statuses no request of this run was built to reach, with the reason and
        the option that reaches them (status coverage counts only the others)."""
        found = {
            "413": "needs a body over the size limit, which the gate never sends (no option "
                   "reaches it yet)",
            "431": "needs headers over the size limit, which the gate never sends (no option "
                   "reaches it yet)",
            "5xx": "a server error is never a goal (any 5xx fails the run)",
        }
        if not (self.config.rate_limit_probe and "ratelimit" in self.config.checks):
            found["429"] = "needs a burst past the rate limit: --rate-limit-probe"
        else:
            found["429"] = ("the probe bursts one cheap read only (429 is counted there)")
        return found

    def _unreachable(self, op: Operation, status: int) -> bool:
        if status >= 500:
            return True
        if status == 429 and self.config.rate_limit_probe and "ratelimit" in self.config.checks:
            return op.operation_id not in ("listWorkspaceRoles", "listSkills", "listAgents")
        return status in (413, 429, 431)

    def status_coverage(self) -> dict[str, dict[str, list[int]]]:
        """Per selected operation: the documented statuses observed, those the run could have
        reached and never saw (`missing`), and those it was not built to reach."""
        coverage = {}
        for op in self.operations(writes=None if self.config.allow_writes else False):
            documented = self.doc.documented_statuses(op)
            seen = self.observed.get(op.operation_id, set())
            unseen = documented - seen
            unreachable = {s for s in unseen if self._unreachable(op, s)}
            coverage[op.operation_id] = {"observed": sorted(documented & seen),
                                         "missing": sorted(unseen - unreachable),
                                         "unreachable": sorted(unreachable)}
        return coverage

    def _watch(self, request: requests.PreparedRequest, response: requests.Response | None,
               error: BaseException | None) -> None:
        """Every request any family sends ends here: counted per family, and a 5xx or a
        transport error fails the run, once per operation (the first one's curl kept)."""
        family = self.family
        with self._watch_lock:
            self.requests_by_family[family] = self.requests_by_family.get(family, 0) + 1
        status = response.status_code if response is not None else None
        if error is None and (status is None or status < 500):
            return
        if family == "preflight":  # the runner's usage error says it (no FAIL line before)
            return
        op = self.doc.operation_at(request.method or "", request.url or "")
        key = op.operation_id if op is not None else f"{request.method} {request.url}"
        what = (f"answered {status}" if error is None else
                f"no response ({type(error).__name__}: {str(error)[:200]})")
        with self._watch_lock:
            known = self.server_errors.get(key)
            if known is not None:
                known.details["occurrences"] += 1
                if family not in known.details["sent_by"]:
                    known.details["sent_by"].append(family)
                return
            headers = {k: str(v) for k, v in request.headers.items()}
            body = request.body.decode("utf-8", "replace") if isinstance(request.body, bytes) \
                else request.body
            exchange = Exchange(method=request.method or "", url=request.url or "",
                                headers=headers, body=body, status=status,
                                response_text=response.text[:2000] if response is not None else "",
                                error=None if error is None else what)
            violation = ServerErrorViolation(
                f"{what} to a request the gate sent ({family}); a server never answers 5xx "
                "and never drops a request", check="server_error",
                operation=op.operation_id if op is not None else None, exchange=exchange,
                details={"sent_by": [family], "occurrences": 1})
            self.server_errors[key] = violation
        self.add(violation)

    def _tick(self) -> None:
        """A progress line every `progress_every` seconds: counts and time left."""
        now = time.monotonic()
        if now < self._next_progress:
            return
        self._next_progress = now + self.config.progress_every
        sent, elapsed = self.pacer.sent, now - self.started
        line = f"progress: {sent} requests"
        if self.estimate:
            left = max(self.estimate - sent, 0) * elapsed / max(sent, 1)
            line += (f" of ~{self.estimate} ({min(100, 100 * sent // self.estimate)}%), "
                     f"~{_duration(left)} left")
        errors = sum(v.severity is Severity.ERROR for v in self.violations)
        self.progress(f"{line}; {_duration(elapsed)} elapsed; now: {self.family}; "
                      f"{errors} error(s), "
                      f"{len(self.violations) - errors} warning(s) so far")

    def tag(self) -> str:
        """A short marker for a value the gate writes (a law's text fields): from the seed and
        a counter, so the same seed writes the same values (a random one made two runs of one
        seed differ in every body a write law sent, and in where its records sorted)."""
        self._tags += 1
        return hashlib.blake2b(f"{self.config.seed}:{self._tags}".encode(),
                               digest_size=4).hexdigest()

    def law_walked(self, law: str, op: Operation, label: str) -> None:
        """Record a walk a law made, so the report shows what each law covered."""
        self.law_walks.setdefault(law, {}).setdefault(op.operation_id, []).append(label)

    def add(self, violation: Violation) -> None:
        if not violation.setup:
            violation.setup = [e for e in self.trail if e is not violation.exchange]
        self.violations.append(violation)
        marker = "FAIL" if violation.severity is Severity.ERROR else "warn"
        self.progress(f"  {marker} [{violation.check}] {violation.operation or '-'}: "
                      f"{violation.message}")

    def count(self, family: str, n: int = 1) -> None:
        self.counts[family] = self.counts.get(family, 0) + n

    def progress(self, line: str) -> None:
        if self.config.quiet:
            return
        out = self.config.out or sys.stderr
        print(line, file=out, flush=True)

    def refused(self, op: Operation, exchange: Exchange, what: str) -> None:
        """A note for a request of the gate's a check needed and the target did not accept:
        the server's gap when the request is valid against the document (it refused valid
        input), the gate's when the request itself breaks the document."""
        from .wire import invalid_part

        body = None if exchange.body is None else json.dumps(exchange.body)
        invalid = invalid_part(self.doc, op, exchange.method, exchange.url, exchange.headers,
                               body)
        answer = exchange.error or f"{exchange.status} {exchange.response_text[:160]}"
        if invalid is None:
            self.note(f"{what}: the target answered {answer} to a request valid against the "
                      f"document, so the check did not run ({exchange.curl()})", whose="server")
        else:
            self.note(f"{what}: the gate's request breaks the document at {invalid}; answered "
                      f"{answer}", whose="gate")

    def note(self, line: str, *, whose: str = "gate") -> None:
        """Something a person should know, marked with whose gap it is: `gate` (a check the
        gate could not perform), `server` (the target refused or lacked something the check
        needed), or `run` (this run's options)."""
        self.notes.append(f"[{whose}] {line}")
        self.progress(f"  note [{whose}]: {line}")


def _duration(seconds: float) -> str:
    seconds = int(seconds)
    if seconds >= 3600:
        return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
    return f"{seconds // 60}m{seconds % 60:02d}s" if seconds >= 60 else f"{seconds}s"
