"""`pytest --mock-api-coverage[=PATH]`: the coverage of the API by the run's tests (decisions
W8 to W10; the report itself is engine/coverage.py's).

Each `mock_api` test's journal is read at its teardown (over either transport) and kept;
at the end of the run the report is written as `PATH.json` and `PATH.md` (PATH without its
suffix; default `mock-api-coverage`), one line printed in the terminal summary, and the run
fails (exit status 1) when the headline percentage is under `--mock-api-coverage-fail-under`.
Under pytest-xdist each worker hands its entries to the controller, which writes the one
report.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ..engine.coverage import coverage_markdown, coverage_report
from ..openapi.spec import load_spec

__all__ = ["PLUGIN_NAME", "CoverageCollector", "add_options", "register"]

PLUGIN_NAME = "mock_api_coverage"
DEFAULT_PATH = "mock-api-coverage"
_WORKER_KEY = "mock_api_coverage_entries"


def add_options(group: Any, parser: pytest.Parser) -> None:
    group.addoption("--mock-api-coverage", nargs="?", const=DEFAULT_PATH, default=None,
                    metavar="PATH",
                    help="report which operations, parameters, enum values and statuses of "
                         "the API the run's mock_api tests exercised: PATH.md and PATH.json "
                         f"(default {DEFAULT_PATH})")
    group.addoption("--mock-api-coverage-fail-under", type=float, default=None, metavar="PCT",
                    help="fail the run when the coverage report's percentage is under PCT")
    parser.addini("mock_api_coverage", "write the API coverage report to this path (.md, .json)",
                  default="")
    parser.addini("mock_api_coverage_fail_under", "fail the run under this coverage percentage",
                  default="")


class CoverageCollector:
    """The run's journal entries, and the report written from them at the end."""

    def __init__(self, config: pytest.Config, path: str, fail_under: float | None) -> None:
        self.config = config
        stem = Path(path)
        self.stem = stem.with_suffix("") if stem.suffix in (".md", ".json") else stem
        self.fail_under = fail_under
        self.entries: list[dict[str, Any]] = []
        self.report: dict[str, Any] | None = None

    def add(self, entries: list[dict[str, Any]]) -> None:
        self.entries += entries

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        """xdist's controller: a worker's entries."""
        self.entries += getattr(node, "workeroutput", {}).get(_WORKER_KEY, [])

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        workeroutput = getattr(self.config, "workeroutput", None)
        if workeroutput is not None:  # an xdist worker: the controller writes the report
            workeroutput[_WORKER_KEY] = self.entries
            return
        self.report = report = coverage_report(load_spec(), self.entries)
        self.stem.parent.mkdir(parents=True, exist_ok=True)
        self.stem.with_suffix(".json").write_text(json.dumps(report, indent=1) + "\n",
                                                  encoding="utf-8")
        self.stem.with_suffix(".md").write_text(coverage_markdown(report), encoding="utf-8")
        if self.fail_under is not None and report["percent"] < self.fail_under \
                and session.exitstatus == 0:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        report = self.report
        if report is None:
            return
        totals = report["totals"]
        line = (f"mock_api coverage: {report['percent']}% of the API "
                f"({totals['operations']['covered']}/{totals['operations']['total']} operations, "
                f"{totals['statuses']['covered']}/{totals['statuses']['total']} statuses) "
                f"-> {self.stem.with_suffix('.md')}, {self.stem.with_suffix('.json')}")
        terminalreporter.write_sep("-", line)
        if self.fail_under is not None and report["percent"] < self.fail_under:
            terminalreporter.write_line(
                f"FAIL: mock_api coverage {report['percent']}% is under "
                f"--mock-api-coverage-fail-under={self.fail_under:g}", red=True)


def register(config: pytest.Config) -> None:
    """The collector, when the run asks for a report (option or ini)."""
    path = config.getoption("--mock-api-coverage") or config.getini("mock_api_coverage")
    if not path:
        return
    fail = config.getoption("--mock-api-coverage-fail-under")
    if fail is None and config.getini("mock_api_coverage_fail_under"):
        fail = float(config.getini("mock_api_coverage_fail_under"))
    config.pluginmanager.register(CoverageCollector(config, str(path), fail), PLUGIN_NAME)


def collector(config: pytest.Config) -> CoverageCollector | None:
    found = config.pluginmanager.get_plugin(PLUGIN_NAME)
    return found if isinstance(found, CoverageCollector) else None
