"""`scripts/serve` installs only when needed: when .venv is missing or pyproject.toml changed
since the last install, so a second start takes as long as the server itself.

The script runs in a scratch copy of the repository's layout with stand-ins for `python3`
(creates the venv) and the venv's `python` (records what it was asked to do): no install,
no server, a few milliseconds per run."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

FAKE_VENV_PYTHON = """#!/bin/sh
echo "$*" >> "$(dirname "$0")/../../calls.log"
"""

FAKE_PYTHON3 = """#!/bin/sh
# `python3 -m venv .venv`: a venv whose python records its calls
mkdir -p .venv/bin
cat > .venv/bin/python <<'END'
{venv_python}END
chmod +x .venv/bin/python
"""


def _checkout(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    repo = tmp_path / "repo"
    (repo / "scripts").mkdir(parents=True)
    shutil.copy(ROOT / "scripts" / "serve", repo / "scripts" / "serve")
    shutil.copy(ROOT / "pyproject.toml", repo / "pyproject.toml")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "python3").write_text(FAKE_PYTHON3.format(venv_python=FAKE_VENV_PYTHON))
    (bin_dir / "python3").chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    return repo, env


def _start(repo: Path, env: dict[str, str], *args: str) -> list[str]:
    log = repo / "calls.log"
    log.unlink(missing_ok=True)
    done = subprocess.run([str(repo / "scripts" / "serve"), *args], env=env, check=True,
                          timeout=30, capture_output=True, text=True)
    calls = log.read_text().splitlines()
    # An install says what it is doing (it used to print nothing for a minute and a half).
    said = "installing the mock into .venv" in done.stderr
    assert said == any("pip install" in call for call in calls), done.stderr
    return calls


def test_scripts_serve_installs_only_when_needed(tmp_path: Path) -> None:
    """And only what serving needs: the package without extras (the dev extra brought
    playwright, openapi-generator and its jar, mypy, schemathesis)."""
    repo, env = _checkout(tmp_path)
    install = "-m pip install -q -e ."  # what serving needs: no dev extra (issue 43)
    assert _start(repo, env, "--port", "9000") == [install, "-m mockserver serve --port 9000"]
    assert _start(repo, env) == ["-m mockserver serve"]  # installed: straight to the server
    with (repo / "pyproject.toml").open("a") as fh:
        fh.write("\n# a dependency changed\n")
    assert _start(repo, env) == [install, "-m mockserver serve"]
    assert _start(repo, env) == ["-m mockserver serve"]
    shutil.rmtree(repo / ".venv")
    assert _start(repo, env) == [install, "-m mockserver serve"]  # a fresh venv installs
