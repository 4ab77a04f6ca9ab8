"""The gate's one registry of checks (schemathesis' `@check` registry is the model).

Two kinds of record, both declared where their code lives:

- `Check`: one per check name a failure is reported under (`law_ordering`, `auth_401`,
  `server_error` ...): its family (the report's and JUnit's grouping), the `--checks` option
  that runs it (None: always on, or schemathesis' phases), whether it needs `--allow-writes`,
  what it checks and the planted defect that proves it (`tests/conform/broken.py`). The README
  catalogue is rendered from these (`catalogue_markdown`), and `fail` refuses a name that is
  not declared, so nothing is reported under a check the catalogue does not list.
- `Routine`: one per unit of work a step of a run performs (`laws`: ordering, filters ...;
  `state`: each state rule), in its declared order. The runner runs a step's routines; a
  routine that finds nothing to work on raises `Skip` and the run notes why.

This module imports no check module: each registers itself when imported, and
`catalogue.py` imports them all (so the registry is complete wherever it is read).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from .violations import FAMILIES, Exchange, Severity, severity_for

if TYPE_CHECKING:
    from ..openapi.spec import Operation
    from .document import Document
    from .violations import Violation

__all__ = ["CHECKS", "OPTIONS", "ROUTINES", "Check", "Proof", "Routine", "Skip", "catalogue_markdown",
           "declare", "fail", "routine", "routines"]

# The `--checks` options, in the order a run takes them (a Check names one, or None).
OPTIONS = ("pagination", "laws", "auth", "state", "ratelimit")


class Skip(Exception):
    """A routine (or the check inside it) found nothing to work on; the run notes the reason."""


@dataclass(frozen=True)
class Proof:
    """One row of the catalogue: what is checked, and the planted defect the gate fails."""

    what: str
    defect: str


@dataclass(frozen=True)
class Check:
    name: str
    family: str  # the report's grouping: laws, pagination, auth, state-rules ...
    option: str | None  # the --checks option that runs it; None: always on or schemathesis'
    writes: bool  # needs --allow-writes
    doc: str  # what it checks
    proofs: tuple[Proof, ...]  # () : not yet proven by a planted defect (the catalogue says so)


CHECKS: dict[str, Check] = {}


def declare(name: str, *, family: str, option: str | None, writes: bool = False,
            proofs: list[tuple[str, str]] | None = None, doc: str | None = None) -> Check:
    """Register a check (once): its family, option, and each (what it checks, defect) row;
    `doc` alone for a check no planted defect proves yet."""
    if name in CHECKS:
        raise ValueError(f"check {name!r} declared twice")
    if family not in FAMILIES:
        raise ValueError(f"check {name!r}: unknown family {family!r}")
    if option is not None and option not in OPTIONS:
        raise ValueError(f"check {name!r}: unknown option {option!r}")
    rows = tuple(Proof(w, d) for w, d in proofs or ())
    if not rows and not doc:
        raise ValueError(f"check {name!r}: say what it checks (doc) or how it is proven")
    found = Check(name, family, option, writes, doc or rows[0].what, rows)
    CHECKS[name] = found
    return found


class _Reporter(Protocol):
    doc: Document

    def add(self, violation: Violation) -> None: ...


def fail(gate: _Reporter, check: str, op: Operation | str | None, message: str,
         exchange: Exchange | None = None, *, provenance: str | None = None,
         severity: Severity | None = None, **details: Any) -> Violation:
    """The one way a check reports a failure: a violation of the check's family, its
    severity the weakest of the operation's provenance and `provenance` (documented and
    reference fail the run, inferred warns) unless `severity` is given."""
    record = CHECKS[check]  # a KeyError here: the check is not declared (catalogue)
    operation = gate.doc.op(op) if isinstance(op, str) else op
    if severity is None:
        severity = severity_for(gate.doc.weakest(
            operation.provenance if operation is not None else None, provenance))
    violation = FAMILIES[record.family](
        message, check=check, operation=operation.operation_id if operation is not None else None,
        severity=severity, exchange=exchange, details=details or None)
    gate.add(violation)
    return violation


@dataclass(frozen=True)
class Routine:
    step: str  # the runner's step: pagination, laws, auth, state, write-laws, ratelimit
    name: str
    order: int
    run: Callable[[Any], None]


ROUTINES: list[Routine] = []


def routine(step: str, name: str, order: int = 0) -> Callable[[Callable[[Any], None]],
                                                             Callable[[Any], None]]:
    """Register a function as a routine of `step` (run in `order`, then name)."""
    def register(function: Callable[[Any], None]) -> Callable[[Any], None]:
        if any(r.step == step and r.name == name for r in ROUTINES):
            raise ValueError(f"routine {step}/{name} registered twice")
        ROUTINES.append(Routine(step, name, order, function))
        return function
    return register


def routines(step: str) -> list[Routine]:
    return sorted((r for r in ROUTINES if r.step == step), key=lambda r: (r.order, r.name))


def catalogue_markdown() -> str:
    """The README's catalogue: a table of one row per (check, proof) in declaration order,
    then the checks no planted defect proves yet."""
    lines = ["| check | family | what it checks | planted defect (test) |", "|---|---|---|---|"]
    for check in CHECKS.values():
        for proof in check.proofs:
            lines.append(f"| `{check.name}` | {check.family}{' (writes)' if check.writes else ''}"
                         f" | {proof.what} | {proof.defect} |")
    unproven = [f"`{c.name}` ({c.doc})" for c in CHECKS.values() if not c.proofs]
    if unproven:
        lines += ["", "Not yet proven by a planted defect: " + "; ".join(unproven) + "."]
    return "\n".join(lines) + "\n"
