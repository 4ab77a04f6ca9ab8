"""One gate run: reach the target, discover real ids, print the plan, then each family of
checks in turn.

Order matters: our own checks read the fixtures' state before schemathesis' fuzzing may change
it (with --allow-writes), and the rate-limit probe goes last because it spends the window.

A run stopped by --max-requests, --max-time or SIGINT/SIGTERM ends as any other: the steps
not reached are named (`RunResult.not_run`) and the verdict is INCOMPLETE, never PASS.
"""

from __future__ import annotations

import contextlib
import random
import signal
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from .client import RunStopped
from .discovery import discover
from .export import export_failures
from .gate import Gate, GateConfig, _duration
from .laws import missing_law_walks
from .plan import Step, plan_text
from .registry import Skip, declare, fail, routines
from .report import RunResult, coverage_percent

__all__ = ["ConfigurationError", "run"]


declare("status_coverage", family="coverage", option=None, proofs=[
    ("`--min-status-coverage`: enough documented statuses observed",
     "coverage below the threshold")])


class ConfigurationError(Exception):
    """The gate cannot run (exit 2): unreachable target, rejected token, unknown workspace."""


def _preflight(gate: Gate) -> None:
    exchange = gate.call(gate.doc.op("getApiIndex"), check_errors=False)
    if exchange.error is not None:
        raise ConfigurationError(f"cannot reach {gate.config.base_url}: {exchange.error}")
    if exchange.status == 401:
        raise ConfigurationError("the target refuses --token (401)")
    if exchange.status is None or exchange.status >= 500 or exchange.json() is None:
        raise ConfigurationError(f"{gate.config.base_url}/v1 answered {exchange.status}; "
                                 "is this the API's base URL?")


def steps(config: GateConfig) -> list[Step]:
    """Every step of a run, with whether this configuration runs it (and why not)."""
    def why_not(check: str, *needs: tuple[bool, str]) -> str | None:
        if check not in config.checks:
            return f"not in --checks {','.join(config.checks) or 'none'}"
        return next((reason for ok, reason in needs if not ok), None)

    writes = (config.allow_writes, "read-only run (pass --allow-writes)")
    phases = None if config.phases else "--phases none"
    return [
        Step("pagination", "pagination", run_step("pagination"), why_not("pagination")),
        Step("laws", "laws", run_step("laws"), why_not("laws")),
        Step("auth", "auth", run_step("auth"), why_not("auth")),
        Step("state", "state-rules", run_step("state", count="state"),
             why_not("state", writes)),
        Step("write-laws", "laws", run_step("write-laws"), why_not("laws", writes)),
        Step("schemathesis", "schemathesis", run_step("schemathesis"), phases),
        Step("ratelimit", "rate-limit", run_step("ratelimit"), why_not(
            "ratelimit", (config.rate_limit_probe, "no --rate-limit-probe"))),
    ]


def run_step(step: str, *, count: str | None = None) -> Callable[[Gate], None]:
    """A step's routines from the registry, in their order; one that raises `Skip` is noted
    (and not counted under `count`)."""
    label = {"laws": "laws", "write-laws": "laws", "state": "state"}.get(step)

    def run_routines(gate: Gate) -> None:
        for found in routines(step):
            if label is not None:
                gate.progress(f"{label:<11} {found.name}")
            try:
                found.run(gate)
            except Skip as skip:
                gate.note(f"{step} {found.name} skipped: {skip}")
                continue
            if count is not None:
                gate.count(count)
    return run_routines


@contextlib.contextmanager
def _stop_on_signals(gate: Gate) -> Iterator[None]:
    """SIGINT/SIGTERM stop the run at its next request; the reports are still written. A
    second signal interrupts at once (the default behaviour is back)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous: dict[int, Any] = {}

    def handler(signum: int, frame: Any) -> None:
        name = signal.Signals(signum).name
        gate.progress(f"{name}: stopping after the request in flight, then writing the reports "
                      "(again to stop at once)")
        for number, old in previous.items():
            signal.signal(number, old)
        gate.pacer.stop(f"interrupted by {name}")

    for number in (int(signal.SIGINT), int(signal.SIGTERM)):
        previous[number] = signal.signal(number, handler)
    try:
        yield
    finally:
        for number, old in previous.items():
            signal.signal(number, old)


def run(config: GateConfig) -> RunResult:
    started = time.monotonic()
    if config.seed is None:  # a seed is always chosen, and reported, so any run can be replayed
        config.seed = random.SystemRandom().randrange(1, 2**31)
    gate = Gate(config)
    families: list[str] = []
    plan = steps(config)
    ran: list[str] = []
    before = 0
    with _stop_on_signals(gate):
        try:
            _preflight(gate)
            gate.family = "discovery"
            gate.progress(f"discovery   {config.base_url}")
            gate.discovery = discover(gate)
            _check_workspace(gate)
            before = gate.pacer.sent  # discovery's, before the plan's steps
            gate.progress(plan_text(gate, plan))
            for step in plan:
                if step.skipped or gate.stopped or gate.pacer.stop_reason:
                    continue
                if step.family not in families:
                    families.append(step.family)
                gate.family, gate.trail = step.name, []
                step.run(gate)
                ran.append(step.name)
        except RunStopped:
            pass
        finally:
            gate.client.close()
    if gate.estimate:  # the plan's estimate against what its steps sent
        gate.progress(f"requests    {gate.pacer.sent - before} sent by the steps, the plan "
                      f"estimated ~{gate.estimate - before}; "
                      f"{_duration(time.monotonic() - started)} in all")
    gate.stopped = gate.stopped or gate.pacer.stop_reason
    not_run = [f"{step.name} ({'interrupted' if step.family in families else 'not reached'})"
               for step in plan if not step.skipped and step.name not in ran]
    not_run += missing_law_walks(gate) if not gate.stopped else []
    return _result(gate, started, families, not_run, plan)


def _check_workspace(gate: Gate) -> None:
    assert gate.discovery is not None
    config = gate.config
    if not gate.discovery.workspace:
        raise ConfigurationError("the token lists no workspace; pass --workspace")
    if config.workspace and gate.discovery.workspaces and \
            config.workspace not in gate.discovery.workspaces:
        raise ConfigurationError(f"workspace {config.workspace!r} is not among the token's "
                                 f"workspaces {gate.discovery.workspaces}")
    gate.workspace = gate.discovery.workspace


def _result(gate: Gate, started: float, families: list[str], not_run: list[str],
            plan: list[Step]) -> RunResult:
    config = gate.config
    if gate.stopped:
        gate.note(f"stopped: {gate.stopped}", whose="run")
    coverage = gate.status_coverage()
    percent = coverage_percent(coverage)
    if config.min_status_coverage is not None:
        families.append("coverage")
    if config.min_status_coverage is not None and percent < config.min_status_coverage:
        fail(gate, "status_coverage", None,
             f"{percent:.1f}% of the reachable documented statuses of the operations in scope "
             f"were observed, below --min-status-coverage {config.min_status_coverage:g}%")
    # Every response the gate saw was held to the error shape and watched for 5xx: those
    # families always ran.
    families += ["error-shape", "server-error"]
    exported = export_failures(gate, Path(config.export)) if config.export else []
    scope = [op.operation_id for op in gate.operations(
        writes=None if config.allow_writes else False)]
    return RunResult(
        base_url=config.base_url, workspace=gate.workspace, violations=gate.violations,
        counts=gate.counts, notes=gate.notes, requests=gate.pacer.sent,
        elapsed=time.monotonic() - started, strict=config.strict, stopped=gate.stopped,
        families=families, coverage=coverage, not_run=not_run,
        skipped={step.name: step.skipped for step in plan if step.skipped},
        requests_by_family=dict(gate.requests_by_family), seed=config.seed,
        hypothesis_database=config.hypothesis_database, operations=scope,
        law_walks=gate.law_walks, unreachable=gate.unreachable_statuses(), exported=exported,
    )

