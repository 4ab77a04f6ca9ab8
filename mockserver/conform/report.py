"""Reports a person can act on: a summary grouped by operation and check, each failure with a
curl command that reproduces it (token as $TOKEN), and JUnit XML / JSON files for CI.

Verdicts (and exit statuses): PASS (0) only when every planned check ran and none failed;
FAIL (1) when a check failed (a run stopped early that found failures still fails);
INCOMPLETE (3) when the run was stopped (--max-requests, --max-time, a signal), a planned step
or a law's walk did not run, or nothing was checked at all. 2 is a usage or configuration
error (cli.py).
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .violations import Severity, Violation

__all__ = ["EXIT_FAIL", "EXIT_INCOMPLETE", "EXIT_PASS", "FAMILIES", "RunResult",
           "coverage_percent", "format_summary", "write_json", "write_junit"]

EXIT_PASS, EXIT_FAIL, EXIT_INCOMPLETE = 0, 1, 3
# Every family a run can report; JUnit holds one case per operation in scope and family.
FAMILIES = ("server-error", "schemathesis", "error-shape", "pagination", "laws", "auth",
            "state-rules", "rate-limit", "coverage")
RUN = "(run)"  # the JUnit case of a family for findings on no one operation


def coverage_percent(coverage: dict[str, dict[str, list[int]]]) -> float:
    """Share of the reachable documented statuses (of the operations in scope) observed."""
    observed = sum(len(c["observed"]) for c in coverage.values())
    total = observed + sum(len(c["missing"]) for c in coverage.values())
    return 100.0 * observed / total if total else 100.0


@dataclass
class RunResult:
    base_url: str
    workspace: str
    violations: list[Violation]
    counts: dict[str, int]  # check family -> checks performed (requests judged, cases run)
    notes: list[str]
    requests: int
    elapsed: float
    strict: bool = False
    stopped: str | None = None
    families: list[str] = field(default_factory=list)  # check families that ran
    # operationId -> {"observed": ..., "missing": reachable never seen, "unreachable": ...}
    coverage: dict[str, dict[str, list[int]]] = field(default_factory=dict)
    not_run: list[str] = field(default_factory=list)  # planned, and did not run
    skipped: dict[str, str] = field(default_factory=dict)  # step -> why this run skips it
    requests_by_family: dict[str, int] = field(default_factory=dict)
    seed: int | None = None
    hypothesis_database: str | None = None
    operations: list[str] = field(default_factory=list)  # in scope
    law_walks: dict[str, dict[str, list[str]]] = field(default_factory=dict)
    unreachable: dict[str, str] = field(default_factory=dict)  # status -> reason and option
    exported: list[str] = field(default_factory=list)  # files written by --export

    @property
    def errors(self) -> list[Violation]:
        return [v for v in self.violations if v.severity is Severity.ERROR]

    @property
    def warnings(self) -> list[Violation]:
        return [v for v in self.violations if v.severity is Severity.WARNING]

    @property
    def failing(self) -> list[Violation]:
        return self.violations if self.strict else self.errors

    @property
    def incomplete(self) -> list[str]:
        """Why the verdict cannot be PASS though nothing failed (empty: complete)."""
        reasons = []
        if self.stopped:
            reasons.append(f"stopped: {self.stopped}")
        reasons += [f"not run: {what}" for what in self.not_run]
        if not any(n for family, n in self.counts.items() if family != "rejection-rechecked"):
            reasons.append("no check was performed")
        return reasons

    @property
    def verdict(self) -> str:
        if self.failing:
            return "FAIL"
        return "INCOMPLETE" if self.incomplete else "PASS"

    @property
    def exit_code(self) -> int:
        return {"FAIL": EXIT_FAIL, "INCOMPLETE": EXIT_INCOMPLETE}.get(self.verdict, EXIT_PASS)

    def grouped(self) -> dict[str, dict[str, list[Violation]]]:
        """operation -> check -> violations, in a stable order."""
        groups: dict[str, dict[str, list[Violation]]] = defaultdict(lambda: defaultdict(list))
        for violation in self.violations:
            groups[violation.operation or RUN][violation.check].append(violation)
        return {op: dict(sorted(checks.items())) for op, checks in sorted(groups.items())}

    def as_dict(self) -> dict[str, Any]:
        return {
            "base_url": self.base_url,
            "workspace": self.workspace,
            "result": self.verdict.lower(),
            "verdict": self.verdict,
            "exit_code": self.exit_code,
            "incomplete": self.incomplete,
            "strict": self.strict,
            "seed": self.seed,
            "hypothesis_database": self.hypothesis_database or "none",
            "errors": len(self.errors),
            "warnings": len(self.warnings),
            "requests": self.requests,
            "requests_by_family": self.requests_by_family,
            "elapsed_seconds": round(self.elapsed, 2),
            "stopped": self.stopped,
            "not_run": self.not_run,
            "skipped": self.skipped,
            "checks_performed": self.counts,
            "walks_by_law": self.law_walks,
            "notes": self.notes,
            "status_coverage": {
                "percent": round(coverage_percent(self.coverage), 1),
                "unreachable": self.unreachable,
                "operations": self.coverage,
            },
            "exported": self.exported,
            "violations": [v.as_dict() for v in self.violations],
        }


def _violations_lines(result: RunResult, max_per_check: int) -> list[str]:
    lines = []
    for operation, checks in result.grouped().items():
        lines.append("")
        lines.append(operation)
        for check, violations in checks.items():
            severity = "ERROR" if any(v.severity is Severity.ERROR for v in violations) else "warning"
            lines.append(f"  [{severity}] {check} ({violations[0].family}): {len(violations)}")
            for violation in violations[:max_per_check]:
                lines.append(f"    - {violation.message}")
                if violation.curl:
                    lines.append(f"      reproduce: {violation.curl}")
            if len(violations) > max_per_check:
                lines.append(f"    ... and {len(violations) - max_per_check} more")
    return lines


def _coverage_lines(result: RunResult) -> list[str]:
    if not result.coverage:
        return []
    lines = ["", f"status coverage: {coverage_percent(result.coverage):.1f}% of the documented "
             "statuses this run could reach were observed"]
    missing = {op: c for op, c in sorted(result.coverage.items()) if c["missing"]}
    if missing:
        lines.append(f"  never observed (reachable), {len(missing)} operation(s):")
        for operation, cover in missing.items():
            lines.append(f"    {operation}: {', '.join(map(str, cover['missing']))} "
                         f"(observed {', '.join(map(str, cover['observed'])) or 'none'})")
    apart: dict[int, int] = defaultdict(int)
    for cover in result.coverage.values():
        for status in cover.get("unreachable", []):
            apart[status] += 1
    if apart:
        lines.append("  not counted (this run was not built to reach them):")
        for status, n in sorted(apart.items()):
            reason = result.unreachable.get(str(status)) or result.unreachable.get(
                f"{str(status)[0]}xx", "")
            lines.append(f"    {status} on {n} operation(s): {reason}")
    return lines


def _law_lines(result: RunResult) -> list[str]:
    if not result.law_walks:
        return []
    lines = ["", "laws walked (list: walks):"]
    for law, by_op in sorted(result.law_walks.items()):
        lines.append(f"  {law}: " + "; ".join(
            f"{op} [{', '.join(walks)}]" for op, walks in sorted(by_op.items())))
    return lines


def format_summary(result: RunResult, *, max_per_check: int = 2) -> str:
    lines = ["", "=" * 78, f"Conformance of {result.base_url} (workspace {result.workspace or '-'})"]
    sent = ", ".join(f"{family} {n}" for family, n in sorted(result.requests_by_family.items()))
    lines.append(f"requests sent: {result.requests} in {result.elapsed:.1f}s"
                 + (f" ({sent})" if sent else ""))
    performed = ", ".join(f"{family} {n}" for family, n in sorted(result.counts.items())
                          if family != "rejection-rechecked")
    lines.append(f"checks performed (requests judged; schemathesis: test cases): "
                 f"{performed or 'none'}")
    lines.append(f"seed {result.seed} (the same --seed sends the same requests); hypothesis "
                 f"example database: {result.hypothesis_database or 'none'}")
    if result.skipped:
        lines.append("not in this run: " + "; ".join(
            f"{step} ({why})" for step, why in result.skipped.items()))
    lines += _violations_lines(result, max_per_check)
    lines += _coverage_lines(result)
    lines += _law_lines(result)
    if result.notes:
        lines.append("")
        lines.append("notes ([server]: the target's gap; [gate]: a check the gate could not "
                     "perform; [run]: this run's options):")
        lines.extend(f"  - {note}" for note in result.notes)
    if result.exported:
        lines.append("")
        lines.append(f"exported {len(result.exported)} failure(s) as pytest files: "
                     + ", ".join(result.exported))
    lines.append("")
    if result.incomplete and not result.failing:
        lines.append("INCOMPLETE (exit 3): " + "; ".join(result.incomplete))
    elif result.incomplete:
        lines.append("also incomplete: " + "; ".join(result.incomplete))
    lines.append(f"{result.verdict}: {len(result.errors)} error(s), {len(result.warnings)} "
                 "warning(s)"
                 + (" (--strict: warnings fail)" if result.strict and result.warnings else ""))
    lines.append("=" * 78)
    return "\n".join(lines)


def write_json(result: RunResult, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result.as_dict(), indent=2, default=str) + "\n", encoding="utf-8")


def _case_text(violations: list[Violation]) -> str:
    return "\n\n".join(f"[{v.severity}] {v.check}: {v.message}"
                       + (f"\nreproduce: {v.curl}" if v.curl else "") for v in violations)


def write_junit(result: RunResult, path: Path) -> None:
    """One test suite per check family and one test case per operation in scope (plus `(run)`
    for findings on no one operation) in every suite, whatever ran or failed, so a dashboard
    sees the same count every run: failing, passing, or skipped with the reason."""
    found: dict[tuple[str, str], list[Violation]] = defaultdict(list)
    scope = set(result.operations)
    for violation in result.violations:
        operation = violation.operation if violation.operation in scope else RUN
        found[(violation.family, operation or RUN)].append(violation)
    root = ET.Element("testsuites", name="conform", time=f"{result.elapsed:.3f}")
    total = {"tests": 0, "failures": 0, "skipped": 0}
    for family in FAMILIES:
        suite = ET.SubElement(root, "testsuite", name=family)
        counts = {"tests": 0, "failures": 0, "skipped": 0}
        for operation in [*sorted(result.operations), RUN]:
            case = ET.SubElement(suite, "testcase", classname=family, name=operation)
            counts["tests"] += 1
            violations = found.get((family, operation), [])
            failing = [v for v in violations if result.strict or v.severity is Severity.ERROR]
            if failing:
                counts["failures"] += 1
                element = ET.SubElement(case, "failure", message=failing[0].message[:200],
                                        type=failing[0].check)
                element.text = _case_text(violations)
            elif family not in result.families:
                counts["skipped"] += 1
                ET.SubElement(case, "skipped", message="this family did not run")
            elif violations:
                ET.SubElement(case, "system-out").text = _case_text(violations)
        for key, value in counts.items():
            suite.set(key, str(value))
            total[key] += value
    for key, value in total.items():
        root.set(key, str(value))
    path.parent.mkdir(parents=True, exist_ok=True)
    ET.ElementTree(root).write(path, encoding="utf-8", xml_declaration=True)
