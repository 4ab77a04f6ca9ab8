"""Any 5xx or lost response on a request the gate sends fails the run, whichever family sent
it (once per operation, with a curl reproduction); a run that did not perform its planned
checks is INCOMPLETE (exit 3), never PASS, and still writes its reports."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from mockserver.conform.cli import main
from mockserver.conform.report import EXIT_INCOMPLETE, format_summary

from . import broken
from .conftest import WORKSPACE, WRITE, gate, served

LAWS = ["--phases", "none", "--checks", "laws", "--include", "listTickets"]


def _server_errors(result: Any) -> list[Any]:
    return [v for v in result.errors if v.check == "server_error"]


@pytest.mark.parametrize("name, wrap, args, family", [  # names as in the README catalogue
    # the issue's case: a fault on GET /v1/tickets met only by the laws' requests
    ("a law's request answers 500", lambda app: broken.ServerErrorOn(
        app, "GET", "/v1/tickets", query=(b"order=desc",), times=3), LAWS, "laws"),
    ("discovery answers 500", lambda app: broken.ServerErrorOn(
        app, "GET", "/v1/skills", query=(b"limit=5",)),
     ["--phases", "none", "--checks", "pagination", "--include", "listSkills"], "discovery"),
    ("the auth matrix meets a 500", lambda app: broken.ServerErrorOn(
        app, "GET", "/v1/skills", authorized=False),
     ["--phases", "none", "--checks", "auth", "--include", "listSkills"], "auth"),
    ("a schemathesis request answers 500", lambda app: broken.ServerErrorOn(
        app, "GET", "/v1/skills", header=b"x-schemathesis-testcaseid", times=1),
     ["--phases", "coverage", "--checks", "none", "--include", "listSkills",
      "--max-examples", "2"], "schemathesis"),
    ("a law's request times out", lambda app: broken.ServerErrorOn(
        app, "GET", "/v1/tickets", query=(b"order=desc",), times=1, hang=2.0),
     [*LAWS, "--request-timeout", "0.5"], "laws"),
])
def test_a_5xx_or_lost_response_on_any_request_fails_the_run(
        name: str, wrap: Any, args: list[str], family: str) -> None:
    with served(wrap=wrap) as (url, _):
        result = gate(url, *args)
    found = _server_errors(result)
    assert len(found) == 1, [repr(v) for v in result.violations]  # once per operation
    violation = found[0]
    assert violation.details["sent_by"] == [family], violation.details
    curl = violation.curl or ""
    assert curl.startswith("curl -sS -X GET") and ("/v1/skills" in curl or "/v1/tickets" in curl)
    assert '"Authorization: Bearer $TOKEN"' in curl or family == "auth", curl
    assert result.verdict == "FAIL" and result.exit_code == 1
    if "times out" in name:
        assert "no response (ReadTimeout" in violation.message, violation.message


def test_a_5xx_to_a_request_schemathesis_sends_without_credentials_fails_the_run() -> None:
    """`ignored_auth` resends an accepted request without its token, through a session of its
    own; those requests go through the gate's transport too (paced, counted, watched). In the
    fuzzing phase no other request goes without a token: before, only schemathesis' own
    `ignored_auth` failure reported it, and the request was neither paced nor counted."""
    wrap = lambda app: broken.ServerErrorOn(app, "GET", "/v1/skills", authorized=False)  # noqa: E731
    with served(wrap=wrap) as (url, _):
        result = gate(url, "--phases", "fuzzing", "--checks", "none", "--include", "listSkills",
                      "--max-examples", "5")
    found = _server_errors(result)
    assert len(found) == 1, [repr(v) for v in result.violations]
    assert found[0].details["sent_by"] == ["schemathesis"], found[0].details
    assert "Authorization" not in (found[0].curl or ""), found[0].curl
    assert result.verdict == "FAIL" and result.exit_code == 1


def test_the_correct_mock_passes_the_same_runs() -> None:
    with served() as (url, _):
        for args in (LAWS, ["--phases", "none", "--checks", "auth", "--include", "listSkills"]):
            result = gate(url, *args)
            assert result.violations == [] and result.verdict == "PASS", result.violations


def test_a_run_that_checks_nothing_is_not_pass() -> None:
    with served() as (url, _):
        result = gate(url, "--phases", "none", "--checks", "none")
    assert result.verdict == "INCOMPLETE" and result.exit_code == EXIT_INCOMPLETE
    assert "no check was performed" in result.incomplete


def test_a_time_budget_stops_the_run_incomplete() -> None:
    def slow_walks(app: Any) -> Any:
        async def wrapped(scope: Any, receive: Any, send: Any) -> None:
            # Every answer slow but in time (no fault): the run needs far more than the
            # budget's ten answers, however fast the machine (it passed on a quiet one when
            # only the laws' walks were slowed).
            if scope["type"] == "http":
                await asyncio.sleep(0.05)
            await app(scope, receive, send)
        return wrapped

    with served(wrap=slow_walks) as (url, _):
        result = gate(url, *LAWS, "--max-time", "0.5")
    assert result.verdict == "INCOMPLETE" and result.violations == [], result.violations
    assert result.stopped == "time budget (--max-time) reached"
    assert any(what.startswith("laws") for what in result.not_run), result.not_run


def test_sigint_writes_the_partial_reports(tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    """SIGINT mid-run: the run stops at its next request, the summary names what did not
    run, and the JSON and JUnit reports are written; exit 3."""
    sent = {"n": 0}

    def interrupt_at_the_laws(app: Any) -> Any:
        async def wrapped(scope: Any, receive: Any, send: Any) -> None:
            if scope["type"] == "http" and b"order=asc" in scope["query_string"]:
                sent["n"] += 1
                if sent["n"] == 1:
                    os.kill(os.getpid(), signal.SIGINT)
            await app(scope, receive, send)
        return wrapped

    json_report, junit = tmp_path / "r.json", tmp_path / "r.xml"
    before = signal.getsignal(signal.SIGINT)  # SIG_IGN when the suite runs as a background job
    with served(wrap=interrupt_at_the_laws) as (url, _):
        code = main(["--base-url", url, "--token", WRITE, "--workspace", WORKSPACE,
                     "--rate", "0", "--quiet", "--phases", "none",
                     "--checks", "pagination,laws,auth", "--include", "listTickets",
                     "--report", f"json:{json_report}", "--report", f"junit:{junit}"])
    assert code == EXIT_INCOMPLETE
    data = json.loads(json_report.read_text())
    assert data["stopped"] == "interrupted by SIGINT" and data["verdict"] == "INCOMPLETE"
    assert data["not_run"] == ["laws (interrupted)", "auth (not reached)"], data["not_run"]
    assert ET.parse(junit).getroot().get("tests")
    assert "INCOMPLETE (exit 3)" in capsys.readouterr().out
    assert signal.getsignal(signal.SIGINT) is before  # the run's handler taken back


def _cases(path: Path) -> list[tuple[str | None, str | None]]:
    return [(case.get("classname"), case.get("name"))
            for case in ET.parse(path).getroot().iter("testcase")]


def test_junit_holds_the_same_cases_whether_the_run_passes_or_fails(tmp_path: Path) -> None:
    args = ["--phases", "none", "--checks", "laws", "--include", "re:^(listTickets|getTicket)$"]
    with served() as (url, _):
        passing = gate(url, *args)
    with served(plant=broken.filter_drops_items) as (url, _):
        failing = gate(url, *args)
    from mockserver.conform.report import write_junit

    write_junit(passing, tmp_path / "pass.xml")
    write_junit(failing, tmp_path / "fail.xml")
    assert passing.verdict == "PASS" and failing.verdict == "FAIL"
    assert _cases(tmp_path / "pass.xml") == _cases(tmp_path / "fail.xml")
    assert ("laws", "listTickets") in _cases(tmp_path / "pass.xml")
    root = ET.parse(tmp_path / "fail.xml").getroot()
    failed = [(c.get("classname"), c.get("name")) for c in root.iter("testcase")
              if c.find("failure") is not None]
    assert failed == [("laws", "listTickets")]


def test_a_reference_promise_broken_fails_without_strict() -> None:
    """The ticket `status` filter comes from the vendor's public reference: a server that
    ignores it fails the run, --strict or not."""
    with served(plant=broken.filter_drops_items) as (url, _):
        result = gate(url, *LAWS)
    found = [v for v in result.violations if v.check == "law_filter"]
    assert found and all(v.severity == "error" for v in found), found
    assert result.exit_code == 1
    summary = format_summary(result)
    assert "FAIL:" in summary


def test_the_plan_and_the_progress_lines() -> None:
    """Before the first check: the workspace and why, the steps (and why one is skipped), the
    pace, an estimate of requests and time; while it runs: counts and time left."""
    import io

    from mockserver.conform.cli import parse_config
    from mockserver.conform.runner import run

    out = io.StringIO()
    with served() as (url, _):
        config, _ = parse_config(["--base-url", url, "--token", WRITE, "--rate", "0",
                                  "--seed", "1", "--phases", "none", "--include", "listSkills"])
        config.out, config.progress_every = out, 0.0
        run(config)
    text = out.getvalue()
    plan = text[text.index("plan:"):]
    assert "workspace ws_alpine (the first of the 2 the token lists (ws_alpine, ws_harborview); " \
        "pass --workspace to choose)" in plan, plan
    assert "step       state         skipped: read-only run (pass --allow-writes)" in plan
    assert "pace       unpaced (--rate 0: local mocks only)" in plan
    # A guide to the requests; no time promised unpaced (it said ~2s for a run of 14.8 s),
    # and the run ends with what it sent beside what the plan estimated (issue 43).
    assert "estimate   ~" in plan and " requests (a guide" in plan
    assert "no time estimate unpaced" in plan
    progress = [line for line in text.splitlines() if line.startswith("progress: ")]
    assert progress and " requests of ~" in progress[-1] and " left; " in progress[-1], progress
    estimated = int(plan.split("estimate   ~", 1)[1].split(" ", 1)[0])
    [sent] = [line for line in text.splitlines() if line.startswith("requests    ")]
    assert sent.split()[1].isdigit() and f"the plan estimated ~{estimated}" in sent, sent


def test_a_read_only_run_says_a_scenario_withheld_its_writes_rather_than_errored() -> None:
    """The coverage phase tries methods a path does not declare; a read-only run does not
    send them, and its progress says so instead of "error" (a PASS run full of errors)."""
    import io

    from mockserver.conform.cli import parse_config
    from mockserver.conform.runner import run

    with served() as (url, _):
        config, _ = parse_config(["--base-url", url, "--token", WRITE, "--rate", "0",
                                  "--seed", "1", "--phases", "coverage", "--checks", "none",
                                  "--include", "getApiIndex"])
        config.out = io.StringIO()
        result = run(config)
    progress = config.out.getvalue()
    assert result.verdict == "PASS", result.violations
    assert "coverage  GET /v1: writes withheld (read-only run)" in progress, progress
    assert ": error" not in progress, progress
