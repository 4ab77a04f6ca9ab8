"""The pytest entry runs the same gate against a URL from the environment."""

from __future__ import annotations

import os
import subprocess
import sys

from .conftest import OTHER, WORKSPACE, WRITE, served


def test_pytest_suite_runs_against_the_mock() -> None:
    with served() as (url, _):
        env = {**os.environ, "CONFORM_BASE_URL": url, "CONFORM_TOKEN": WRITE,
               "CONFORM_FOREIGN_TOKEN": OTHER, "CONFORM_WORKSPACE": WORKSPACE,
               "CONFORM_ARGS": "--rate 0 --phases examples --max-examples 2 --quiet "
                               "--include re:^(listSkills|getSkill)$"}
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-p", "mockserver.conform.plugin", "--pyargs",
             "mockserver.conform.suite", "-q", "-rs", "--conform-token", WRITE],
            env=env, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "7 passed, 3 skipped" in done.stdout, done.stdout
