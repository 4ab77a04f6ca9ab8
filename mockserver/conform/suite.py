"""The conformance gate as a pytest suite: one test per family of checks, one gate run.

    CONFORM_BASE_URL=https://api.example.test CONFORM_TOKEN=... \\
        pytest --pyargs mockserver.conform.suite

or with options (they need the plugin that declares them):

    pytest -p mockserver.conform.plugin --pyargs mockserver.conform.suite \\
        --conform-base-url URL --conform-token T [--conform-read-token T] \\
        [--conform-foreign-token T] [--conform-workspace ID] \\
        [--conform-args "--allow-writes --max-examples 10 --strict"]

Settings: CONFORM_BASE_URL, CONFORM_TOKEN, CONFORM_READ_TOKEN, CONFORM_FOREIGN_TOKEN,
CONFORM_WORKSPACE, and CONFORM_ARGS for any other `python -m mockserver conform` argument.
Without a base URL and token every test is skipped. A family that did not run (state rules
without --allow-writes, the rate-limit probe without --rate-limit-probe) is skipped; a run
that did not perform its planned checks (stopped early, a step not reached) fails
`test_conformance_run_is_complete`.
"""

from __future__ import annotations

import os
import shlex

import pytest

from mockserver.conform.cli import UsageError, parse_config
from mockserver.conform.report import RunResult
from mockserver.conform.runner import ConfigurationError, run

FAMILIES = ("server-error", "schemathesis", "error-shape", "pagination", "laws", "auth",
            "state-rules", "rate-limit", "coverage")


def _setting(config: pytest.Config, name: str) -> str | None:
    value = config.getoption(f"conform_{name}", default=None)
    return value if value is not None else os.environ.get(f"CONFORM_{name.upper()}")


@pytest.fixture(scope="module")
def conform_result(request: pytest.FixtureRequest) -> RunResult:
    config = request.config
    base_url, token = _setting(config, "base_url"), _setting(config, "token")
    if not base_url or not token:
        pytest.skip("set CONFORM_BASE_URL and CONFORM_TOKEN (or --conform-base-url/--conform-token)")
    argv = ["--base-url", base_url, "--token", token]
    for name in ("read_token", "foreign_token", "workspace"):
        value = _setting(config, name)
        if value:
            argv += [f"--{name.replace('_', '-')}", value]
    argv += shlex.split(_setting(config, "args") or "")
    try:
        gate_config, _ = parse_config(argv)
    except UsageError as exc:
        pytest.fail(f"conformance settings: {exc}")
    try:
        return run(gate_config)
    except ConfigurationError as exc:
        pytest.fail(f"conformance gate cannot run: {exc}")


@pytest.mark.parametrize("family", FAMILIES)
def test_conformance(conform_result: RunResult, family: str) -> None:
    if family not in conform_result.families:
        pytest.skip(f"{family} checks did not run")
    failing = [v for v in conform_result.failing if v.family == family]
    if failing:
        lines = [f"{len(failing)} violation(s) of the document ({family}):"]
        for violation in failing[:30]:
            lines.append(f"- [{violation.severity}] {violation.operation}: {violation.check}: "
                         f"{violation.message}")
            if violation.curl:
                lines.append(f"    {violation.curl}")
        pytest.fail("\n".join(lines), pytrace=False)


def test_conformance_run_is_complete(conform_result: RunResult) -> None:
    """INCOMPLETE is not a pass: a stopped run, a step not reached, a law's walk not made."""
    if conform_result.incomplete:
        pytest.fail("the gate's run is INCOMPLETE: " + "; ".join(conform_result.incomplete),
                    pytrace=False)
