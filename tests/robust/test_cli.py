"""`python -m mockserver robust`: reducing a failure (with a stand-in for the command's runs),
the usage errors, and, end to end on the served mock, a failure found, reduced to the one item
that breaks the command, and replayed."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from mockserver.robust_cli import Outcome, main, reduce_failure

ROOT = Path(__file__).resolve().parents[2]


def _item(n: int) -> dict[str, Any]:
    return {"kind": "null", "operation": "listContacts", "n": n, "describe": f"item {n}"}


def _runs(breaks: set[int] | None, log: list[list[int]]):  # type: ignore[no-untyped-def]
    """A stand-in for running the command on a plan: fails when the plan holds an item of
    `breaks` (None: fails on every plan, the empty one too)."""
    def run(plan: list[dict[str, Any]]) -> Outcome:
        numbers = [item["n"] for item in plan]
        log.append(numbers)
        failed = breaks is None or bool(breaks & set(numbers))
        return Outcome(1 if failed else 0, f"plan {numbers}", plan, list(range(len(plan))),
                       None, 0.0)
    return run


def _failed(size: int, applied: list[int]) -> Outcome:
    return Outcome(1, "", [_item(n) for n in range(size)], applied, 7, 0.0)


def test_reduction_asks_the_empty_plan_first_then_only_the_applied_items() -> None:
    log: list[list[int]] = []
    reduction = reduce_failure(_runs({5}, log), _failed(8, [1, 5, 6]))
    assert reduction.plan == [_item(5)] and not reduction.faithful
    assert log[0] == [] and log[1] == [1, 5, 6]  # the empty plan, then what changed answers
    assert all(set(asked) <= {1, 5, 6} for asked in log[1:])
    assert reduction.outcome.output == "plan [5]" and reduction.runs == len(log)


def test_a_failure_without_any_variation_is_reported_as_such() -> None:
    log: list[list[int]] = []
    reduction = reduce_failure(_runs(None, log), _failed(4, [0, 1]))
    assert reduction.faithful and reduction.plan == [] and log == [[]]


def test_a_failure_that_does_not_come_back_is_not_reduced() -> None:
    log: list[list[int]] = []
    reduction = reduce_failure(_runs(set(), log), _failed(4, [0, 2]))
    assert reduction.plan is None and log == [[], [0, 2], [0, 1, 2, 3]]


def test_when_the_applied_items_alone_pass_the_whole_plan_is_reduced() -> None:
    log: list[list[int]] = []
    reduction = reduce_failure(_runs({3}, log), _failed(4, [0]))
    assert reduction.plan == [_item(3)] and log[:3] == [[], [0], [0, 1, 2, 3]]


@pytest.mark.parametrize("argv, message", [
    (["--runs", "2"], "give the command to run after --"),
    (["--runs", "0", "--", "true"], "--runs must be at least 1"),
])
def test_usage_errors(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        main(argv)
    assert stopped.value.code == 2 and message in capsys.readouterr().err


@pytest.mark.parametrize("plan, message", [
    ("[1, 2]", "not a JSON list of variation objects"),
    ("[{", "is not JSON"),
    ("no-such-file.json", "neither a JSON list nor a readable file"),
])
def test_a_replay_plan_that_is_not_one(plan: str, message: str,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--replay", plan, "--", "true"]) == 2
    assert message in capsys.readouterr().err


# -- end to end --------------------------------------------------------------------------------

# A client that reads every contact of the workspace three times and fails on a 429.
CLIENT = """
import os, sys, httpx
base, token = os.environ["MOCK_API_BASE_URL"], os.environ["MOCK_API_TOKEN"]
for _ in range(3):
    r = httpx.get(base + "/v1/contacts", params={"workspace_id": os.environ["MOCK_API_WORKSPACE"]},
                  headers={"Authorization": "Bearer " + token})
    if r.status_code == 429:
        sys.exit("throttled: " + r.headers["Retry-After"])
    r.raise_for_status()
"""


def _robust(*argv: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mockserver", "robust", *argv], cwd=cwd,
                          capture_output=True, text=True, timeout=300)


def _replayed(line: str) -> list[str]:
    words = shlex.split(line)
    assert words[:4] == ["python", "-m", "mockserver", "robust"], line
    return words[4:]


def test_a_failure_is_reduced_to_the_item_that_breaks_and_the_replay_reproduces_it(
        tmp_path: Path) -> None:
    report = tmp_path / "report.json"
    command = ["--", sys.executable, "-c", CLIENT]
    found = _robust("--seed", "1", "--size", "6", "--kinds", "rate-limit,null,extra-field",
                    "--operations", "listContacts", "--report", str(report), *command)
    assert found.returncode == 1, found.stdout + found.stderr
    result = json.loads(report.read_text())
    minimal = result["minimal_plan"]
    assert [item["kind"] for item in minimal] == ["rate-limit"], found.stdout
    assert f"  - {minimal[0]['describe']}" in found.stdout
    assert f"throttled: {minimal[0]['retry_after']}" in found.stdout
    replay = _replayed(result["replay"])
    again = _robust(*replay)
    assert again.returncode == 1 and f"throttled: {minimal[0]['retry_after']}" in again.stdout
    # The faithful mock (the empty plan) passes the same command.
    assert _robust("--replay", "[]", *command).returncode == 0


def test_a_command_that_hangs_fails_at_its_timeout() -> None:
    hang = _robust("--runs", "1", "--seed", "0", "--timeout", "1", "--", sys.executable, "-c",
                   "import time; time.sleep(60)")
    assert hang.returncode == 1
    assert "fails on the faithful mock too (no variation needed), timed out" in hang.stdout
