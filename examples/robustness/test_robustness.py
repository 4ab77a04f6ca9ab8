"""The robustness examples, as CI runs them (`pytest -q examples/robustness`).

For the Python and the Node desk client: each planted bug (DESK_BUG) is found by
`python -m mockserver robust` within the default number of runs, reduced to a plan of the one
variation that breaks it, and the printed replay command reproduces the failure; the fixed
client passes every run, and passes the replayed plans too.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
CLIENTS = {
    "python": [sys.executable, str(HERE / "python" / "check_desk.py")],
    "node": ["node", str(HERE / "node" / "check_desk.mjs")],
}
# What the desk tool calls: the variations are drawn for these operations only.
OPERATIONS = "listContacts,listTickets,resolveTicket"
SEED = "1"  # any seed finds each bug within the default runs; a fixed one keeps CI repeatable
# The one variation each planted bug cannot survive, and what its failure prints.
# (The symptom: Python's message or Node's.)
BUGS: dict[str, tuple[dict[str, Any], str]] = {
    "null-type": ({"kind": "null", "operation": "listContacts", "field": "type"},
                  r"'NoneType' object has no attribute 'lower'|"
                  r"Cannot read properties of null \(reading 'toLowerCase'\)"),
    "empty-page": ({"kind": "empty-last-page", "operation": "listContacts"},
                   r"IndexError: list index out of range|"
                   r"Cannot read properties of undefined \(reading 'last_message_at'\)"),
    "retry-after": ({"kind": "rate-limit"}, r"after a 429 whose Retry-After was [1-9]"),
}


def robust(argv: list[str], bug: str | None, report: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "DESK_BUG"}
    if bug:
        env["DESK_BUG"] = bug
    if report is not None:
        argv = ["--report", str(report), *argv]
    return subprocess.run([sys.executable, "-m", "mockserver", "robust", *argv], env=env,
                          capture_output=True, text=True, timeout=600)


def replay_argv(line: str) -> list[str]:
    """The printed replay command's arguments after `python -m mockserver robust`."""
    words = shlex.split(line)
    assert words[:4] == ["python", "-m", "mockserver", "robust"], line
    return words[4:]


@pytest.fixture(params=sorted(CLIENTS))
def client(request: pytest.FixtureRequest) -> list[str]:
    if request.param == "node" and shutil.which("node") is None:
        pytest.fail("node is not installed (Node 18+ runs the JavaScript example)")
    return CLIENTS[str(request.param)]


@pytest.mark.parametrize("bug", sorted(BUGS))
def test_each_planted_bug_is_found_reduced_and_replayed(client: list[str], bug: str,
                                                        tmp_path: Path) -> None:
    expected, symptom = BUGS[bug]
    report = tmp_path / "report.json"
    found = robust(["--seed", SEED, "--operations", OPERATIONS, "--", *client], bug, report)
    assert found.returncode == 1, found.stdout + found.stderr
    result = json.loads(report.read_text())
    minimal = result["minimal_plan"]
    assert len(minimal) == 1, found.stdout
    assert {k: minimal[0].get(k) for k in expected} == expected, found.stdout
    assert f"  - {minimal[0]['describe']}" in found.stdout
    assert re.search(symptom, found.stdout), found.stdout
    # The printed replay reproduces the failure; the fixed client passes the same plan.
    assert f"  {result['replay']}" in found.stdout
    again = robust(replay_argv(result["replay"]), bug)
    assert again.returncode == 1 and re.search(symptom, again.stdout), again.stdout + again.stderr
    fixed = robust(replay_argv(result["replay"]), None)
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr


def test_the_fixed_client_passes_every_run(client: list[str], tmp_path: Path) -> None:
    report = tmp_path / "report.json"
    passed = robust(["--seed", SEED, "--operations", OPERATIONS, "--", *client], None, report)
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert json.loads(report.read_text())["result"] == "passed"
