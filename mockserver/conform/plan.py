"""The plan a run prints before its first check: the workspace and why, the steps that run and
those that do not (and why), the pace, and an estimate of its requests and time.

The estimate is a model, per step, of requests per operation in scope, fitted on full runs
against the mock (`bench/conform_gate.py`); a real dataset with more records walks more pages,
so it is a guide, and the progress lines revise the time left from the pace actually seen.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .gate import Gate

__all__ = ["Step", "estimate", "plan_text"]

# Requests per selected operation (or per reachable list), fitted on the mock.
PER_LIST = {"pagination": 8.3, "laws": 10.4}
PER_OPERATION_AUTH = 5.0  # no token, three malformed headers, an unknown token
PER_OPERATION_EXTRA_TOKEN = 2.0  # --foreign-token / --read-token, each
STATE_RULES = 45
PER_WRITE_LAW = 10.0  # per write operation, read-backs included
# schemathesis, per operation: the examples and coverage phases send a roughly fixed number,
# fuzzing and stateful scale with --max-examples.
SCHEMATHESIS_FIXED = {"examples": 2.0, "coverage": 33.0}
SCHEMATHESIS_PER_EXAMPLE = {"fuzzing": 1.0, "stateful": 0.4}
# and per write operation in scope, more: the bodies' coverage cases and unsupported_method
# (fitted on `bench/conform_gate.py --max-examples 10`: 6,370 schemathesis requests for 62
# reads and 28 writes, where the per-operation model alone gave 4,410).
SCHEMATHESIS_PER_WRITE = 70.0
RATELIMIT_PROBE = 130
UNPACED_SECONDS = 0.008  # per request against a local mock, unpaced, on a quiet machine


@dataclass
class Step:
    """One step of a run: its name, the family it reports under, and why it is skipped."""

    name: str
    family: str
    run: Callable[[Gate], None]
    skipped: str | None  # None: it runs


def _counts(gate: Gate) -> tuple[int, int, int]:
    reads = gate.operations(writes=False)
    assert gate.discovery is not None
    lists = sum(1 for op in reads if op.method == "GET" and op.paginated
                and gate.discovery.ready(op) is not None)
    scope = len(gate.operations(writes=None if gate.config.allow_writes else False))
    return lists, scope, len(gate.operations(writes=True)) if gate.config.allow_writes else 0


def estimate(gate: Gate, steps: list[Step]) -> dict[str, int]:
    """Requests each step that runs is expected to send."""
    config = gate.config
    lists, scope, writes = _counts(gate)
    tokens = bool(config.foreign_token) + bool(config.read_token)
    found: dict[str, float] = {}
    for step in steps:
        if step.skipped:
            continue
        if step.name in PER_LIST:
            found[step.name] = PER_LIST[step.name] * lists
        elif step.name == "auth":
            found[step.name] = scope * (PER_OPERATION_AUTH + PER_OPERATION_EXTRA_TOKEN * tokens)
        elif step.name == "state":
            found[step.name] = STATE_RULES
        elif step.name == "write-laws":
            found[step.name] = PER_WRITE_LAW * writes
        elif step.name == "schemathesis":
            per_op = sum(SCHEMATHESIS_FIXED.get(p, 0.0)
                         + SCHEMATHESIS_PER_EXAMPLE.get(p, 0.0) * config.max_examples
                         for p in config.phases)
            found[step.name] = per_op * scope + SCHEMATHESIS_PER_WRITE * writes
        elif step.name == "ratelimit":
            found[step.name] = RATELIMIT_PROBE
    return {name: int(n) for name, n in found.items()}


def seconds_for(gate: Gate, requests: int) -> float:
    rate = gate.config.rate
    return requests / rate if rate > 0 else requests * UNPACED_SECONDS


def plan_text(gate: Gate, steps: list[Step]) -> str:
    """The plan, as printed before the first check; sets the gate's estimate for progress."""
    from .gate import _duration

    config = gate.config
    assert gate.discovery is not None
    listed = gate.discovery.workspaces
    why = ("--workspace" if config.workspace else
           f"the first of the {len(listed)} the token lists ({', '.join(listed[:5])}); "
           "pass --workspace to choose")
    per_step = estimate(gate, steps)
    total = sum(per_step.values())
    gate.estimate = gate.pacer.sent + total
    pace = (f"{config.rate:g} requests/s ({config.rate * 60:g}/minute)" if config.rate > 0
            else "unpaced (--rate 0: local mocks only)")
    lines = ["", "plan:",
             f"  target     {config.base_url}, workspace {gate.workspace} ({why})",
             f"  mode       {'reads and writes (--allow-writes)' if config.allow_writes else 'read-only'}"
             f"; {len(gate.operations(writes=None if config.allow_writes else False))} "
             "operation(s) in scope",
             f"  phases     {', '.join(config.phases) or 'none'} (schemathesis, "
             f"--max-examples {config.max_examples}, seed {config.seed})"]
    for step in steps:
        state = (f"~{per_step.get(step.name, 0)} requests" if not step.skipped
                 else f"skipped: {step.skipped}")
        lines.append(f"  step       {step.name:<13} {state}")
    lines.append(f"  pace       {pace}")
    budget = []
    if config.max_requests is not None:
        budget.append(f"--max-requests {config.max_requests}")
    if config.max_time is not None:
        budget.append(f"--max-time {config.max_time:g}s")
    # Honest about what it is (issue 43: "~329 requests, ~2s" for 602 in 14.8 s): a guide to
    # the requests; a time only where the pace bounds it from below; unpaced, the progress
    # lines give the time left from the pace seen.
    timing = (f"at least ~{_duration(seconds_for(gate, total))} at this pace"
              if config.rate > 0 else
              "no time estimate unpaced: the progress lines give the time left")
    lines.append(f"  estimate   ~{total} requests (a guide: more records walk more pages), "
                 f"{timing}"
                 + (f" (stops early at {' or '.join(budget)}: INCOMPLETE)" if budget else ""))
    return "\n".join(lines)
