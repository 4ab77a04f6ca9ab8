"""The configuration of one gate run and the context its checks share."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TextIO

from .checks import error_shape_violation
from .client import DEFAULT_RATE, ConformClient, Pacer
from .document import Document, OperationFilter
from .violations import Exchange, Severity, Violation

if TYPE_CHECKING:
    from ..openapi.spec import Operation
    from .discovery import Discovery

__all__ = ["ALL_PHASES", "OWN_CHECKS", "Gate", "GateConfig"]

ALL_PHASES = ("examples", "coverage", "fuzzing", "stateful")
OWN_CHECKS = ("pagination", "laws", "auth", "state", "ratelimit")


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

    def status_coverage(self) -> dict[str, dict[str, list[int]]]:
        """Per selected operation: the documented statuses observed, and those never seen."""
        coverage = {}
        for op in self.operations(writes=None if self.config.allow_writes else False):
            documented = self.doc.documented_statuses(op)
            seen = self.observed.get(op.operation_id, set())
            coverage[op.operation_id] = {"observed": sorted(documented & seen),
                                         "missing": sorted(documented - seen)}
        return coverage

    def add(self, violation: Violation) -> None:
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

    def note(self, line: str) -> None:
        self.notes.append(line)
        self.progress(f"  note: {line}")
