"""One gate run: reach the target, discover real ids, then each family of checks in turn.

Order matters: our own checks read the fixtures' state before schemathesis' fuzzing may change
it (with --allow-writes), and the rate-limit probe goes last because it spends the window.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import requests

from .auth_matrix import check_auth
from .client import BudgetExhausted
from .discovery import discover
from .gate import Gate, GateConfig
from .laws import check_read_laws
from .pagination import check_pagination
from .phases import run_phases
from .ratelimit_probe import probe_rate_limit
from .report import RunResult, coverage_percent
from .state_rules import check_state_rules
from .violations import CoverageViolation
from .write_laws import check_write_laws

__all__ = ["ConfigurationError", "run"]


class ConfigurationError(Exception):
    """The gate cannot run (exit 2): unreachable target, rejected token, unknown workspace."""


def _preflight(gate: Gate) -> None:
    try:
        exchange = gate.call(gate.doc.op("getApiIndex"), check_errors=False)
    except requests.RequestException as exc:
        raise ConfigurationError(f"cannot reach {gate.config.base_url}: {exc}") from exc
    if exchange.status == 401:
        raise ConfigurationError("the target refuses --token (401)")
    if exchange.status is None or exchange.status >= 500 or exchange.json() is None:
        raise ConfigurationError(f"{gate.config.base_url}/v1 answered {exchange.status}; "
                                 "is this the API's base URL?")


def run(config: GateConfig) -> RunResult:
    started = time.monotonic()
    gate = Gate(config)
    families: list[str] = []
    try:
        _preflight(gate)
        gate.progress(f"discovery   {config.base_url}")
        gate.discovery = discover(gate)
        if not gate.discovery.workspace:
            raise ConfigurationError("the token lists no workspace; pass --workspace")
        if config.workspace and gate.discovery.workspaces and \
                config.workspace not in gate.discovery.workspaces:
            raise ConfigurationError(f"workspace {config.workspace!r} is not among the token's "
                                     f"workspaces {gate.discovery.workspaces}")
        gate.workspace = gate.discovery.workspace
        steps: list[tuple[str, str, Callable[[Gate], None], bool]] = [
            ("pagination", "pagination", check_pagination, "pagination" in config.checks),
            ("laws", "laws", check_read_laws, "laws" in config.checks),
            ("auth", "auth", check_auth, "auth" in config.checks),
            ("state", "state-rules", check_state_rules,
             "state" in config.checks and config.allow_writes),
            ("write-laws", "laws", check_write_laws,
             "laws" in config.checks and config.allow_writes),
            ("schemathesis", "schemathesis", run_phases, bool(config.phases)),
            ("ratelimit", "rate-limit", probe_rate_limit,
             "ratelimit" in config.checks and config.rate_limit_probe),
        ]
        for _, family, step, enabled in steps:
            if not enabled or gate.stopped:
                continue
            if family not in families:
                families.append(family)
            step(gate)
        if not config.allow_writes and "state" in config.checks:
            gate.note("state rules not run (read-only; pass --allow-writes)")
    except BudgetExhausted:
        gate.stopped = f"request budget of {config.max_requests} reached"
    finally:
        gate.client.close()
    if gate.stopped:
        gate.note(f"stopped: {gate.stopped}")
    coverage = gate.status_coverage()
    percent = coverage_percent(coverage)
    if config.min_status_coverage is not None:
        families.append("coverage")
    if config.min_status_coverage is not None and percent < config.min_status_coverage:
        gate.add(CoverageViolation(
            f"{percent:.1f}% of the documented statuses of the operations in scope were "
            f"observed, below --min-status-coverage {config.min_status_coverage:g}%",
            check="status_coverage", operation=None))
    # Every response the gate saw was held to the error shape: that family always ran.
    families.append("error-shape")
    return RunResult(
        base_url=config.base_url, workspace=gate.workspace, violations=gate.violations,
        counts=gate.counts, notes=gate.notes, requests=gate.pacer.sent,
        elapsed=time.monotonic() - started, strict=config.strict, stopped=gate.stopped,
        families=families, coverage=coverage,
    )
