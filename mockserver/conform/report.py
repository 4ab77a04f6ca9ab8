"""Reports a person can act on: a summary grouped by operation and check, each failure with a
curl command that reproduces it (token as $TOKEN), and JUnit XML / JSON files for CI."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .violations import Severity, Violation

__all__ = ["RunResult", "coverage_percent", "format_summary", "write_json", "write_junit"]


def coverage_percent(coverage: dict[str, dict[str, list[int]]]) -> float:
    """Share of the documented statuses (of the operations in scope) the run observed."""
    observed = sum(len(c["observed"]) for c in coverage.values())
    total = observed + sum(len(c["missing"]) for c in coverage.values())
    return 100.0 * observed / total if total else 100.0


@dataclass
class RunResult:
    base_url: str
    workspace: str
    violations: list[Violation]
    counts: dict[str, int]
    notes: list[str]
    requests: int
    elapsed: float
    strict: bool = False
    stopped: str | None = None
    families: list[str] = field(default_factory=list)  # check families that ran
    # operationId -> {"observed": documented statuses seen, "missing": those never seen}
    coverage: dict[str, dict[str, list[int]]] = field(default_factory=dict)

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
    def exit_code(self) -> int:
        return 1 if self.failing else 0

    def grouped(self) -> dict[str, dict[str, list[Violation]]]:
        """operation -> check -> violations, in a stable order."""
        groups: dict[str, dict[str, list[Violation]]] = defaultdict(lambda: defaultdict(list))
        for violation in self.violations:
            groups[violation.operation or "(run)"][violation.check].append(violation)
        return {op: dict(sorted(checks.items())) for op, checks in sorted(groups.items())}

    def as_dict(self) -> dict[str, Any]:
        return {
            "base_url": self.base_url,
            "workspace": self.workspace,
            "result": "fail" if self.failing else "pass",
            "strict": self.strict,
            "errors": len(self.errors),
            "warnings": len(self.warnings),
            "requests": self.requests,
            "elapsed_seconds": round(self.elapsed, 2),
            "stopped": self.stopped,
            "checks_performed": self.counts,
            "notes": self.notes,
            "status_coverage": {
                "percent": round(coverage_percent(self.coverage), 1),
                "operations": self.coverage,
            },
            "violations": [v.as_dict() for v in self.violations],
        }


def format_summary(result: RunResult, *, max_per_check: int = 2) -> str:
    lines = ["", "=" * 78, f"Conformance of {result.base_url} (workspace {result.workspace or '-'})"]
    performed = ", ".join(f"{family} {n}" for family, n in sorted(result.counts.items()))
    lines.append(f"checks performed: {performed or 'none'}; {result.requests} requests in "
                 f"{result.elapsed:.1f}s")
    if result.stopped:
        lines.append(f"STOPPED EARLY: {result.stopped} (the report covers what ran)")
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
    if result.coverage:
        lines.append("")
        lines.append(f"status coverage: {coverage_percent(result.coverage):.1f}% of the "
                     "documented statuses observed; never observed:")
        for operation, cover in sorted(result.coverage.items()):
            if cover["missing"]:
                lines.append(f"  {operation}: {', '.join(map(str, cover['missing']))} "
                             f"(observed {', '.join(map(str, cover['observed'])) or 'none'})")
    if result.notes:
        lines.append("")
        lines.append("notes:")
        lines.extend(f"  - {note}" for note in result.notes)
    lines.append("")
    verdict = "FAIL" if result.failing else "PASS"
    lines.append(f"{verdict}: {len(result.errors)} error(s), {len(result.warnings)} warning(s)"
                 + (" (--strict: warnings fail)" if result.strict and result.warnings else ""))
    lines.append("=" * 78)
    return "\n".join(lines)


def write_json(result: RunResult, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result.as_dict(), indent=2, default=str) + "\n", encoding="utf-8")


def write_junit(result: RunResult, path: Path) -> None:
    """One test suite per check family; a test case per operation and check that failed, and
    one passing case per family that ran clean, so CI dashboards show what was covered."""
    by_family: dict[str, dict[tuple[str, str], list[Violation]]] = defaultdict(lambda: defaultdict(list))
    for violation in result.violations:
        by_family[violation.family][(violation.operation or "(run)", violation.check)].append(violation)
    root = ET.Element("testsuites", name="conform", tests="0", failures="0",
                      time=f"{result.elapsed:.3f}")
    total_tests = total_failures = 0
    for family in sorted(set(result.families) | set(by_family)):
        cases = by_family.get(family, {})
        suite = ET.SubElement(root, "testsuite", name=family)
        tests = failures = 0
        if not cases:
            ET.SubElement(suite, "testcase", classname=family, name="all")
            tests += 1
        for (operation, check), violations in sorted(cases.items()):
            case = ET.SubElement(suite, "testcase", classname=f"{family}.{operation}", name=check)
            tests += 1
            failing = result.strict or any(v.severity is Severity.ERROR for v in violations)
            text = "\n\n".join(
                f"[{v.severity}] {v.message}" + (f"\nreproduce: {v.curl}" if v.curl else "")
                for v in violations)
            if failing:
                failures += 1
                element = ET.SubElement(case, "failure", message=violations[0].message[:200],
                                        type=check)
                element.text = text
            else:
                ET.SubElement(case, "system-out").text = text
        suite.set("tests", str(tests))
        suite.set("failures", str(failures))
        total_tests += tests
        total_failures += failures
    root.set("tests", str(total_tests))
    root.set("failures", str(total_failures))
    path.parent.mkdir(parents=True, exist_ok=True)
    ET.ElementTree(root).write(path, encoding="utf-8", xml_declaration=True)
