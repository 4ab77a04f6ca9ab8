"""`scripts/test` installs only when pyproject.toml changed since its last install, and shows
Redocly CLI's findings without the boxed notice (a Node deprecation banner) it prints on every
run. The script runs in a scratch copy of the repository's layout whose venv and npm tools are
stand-ins that record what they were asked to do: no install, no lint, no test run."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

RECORDER = """#!/bin/sh
echo "$(basename "$0") $*" >> "{log}"
"""

BANNER = """
    ╔══════════════════════════════════════════════╗
    ║                                              ║
    ║  Deprecation warning: Node.js 20 support is ending
    ║                                              ║
    ╚══════════════════════════════════════════════╝

validating spec/openapi.yaml...
"""

FAKE_REDOCLY = """#!/bin/sh
echo "redocly $*" >> "{log}"
cat >&2 <<'END'
{banner}END
if [ -e "{fail}" ]; then
    echo "spec/openapi.yaml:3:1 error  a finding" >&2
    exit 1
fi
echo "Woohoo! Your API description is valid." >&2
"""


def _checkout(tmp_path: Path) -> tuple[Path, Path]:
    repo = tmp_path / "repo"
    (repo / "scripts").mkdir(parents=True)
    shutil.copy(ROOT / "scripts" / "test", repo / "scripts" / "test")
    shutil.copy(ROOT / "pyproject.toml", repo / "pyproject.toml")
    log = repo / "calls.log"
    venv_bin = repo / ".venv" / "bin"
    venv_bin.mkdir(parents=True)
    npm_bin = repo / "node_modules" / ".bin"
    npm_bin.mkdir(parents=True)
    for tool in (venv_bin / "python", venv_bin / "lint-imports", venv_bin / "mkdocs",
                 npm_bin / "spectral", npm_bin / "openapi-typescript", npm_bin / "tsc"):
        tool.write_text(RECORDER.format(log=log))
        tool.chmod(0o755)
    redocly = npm_bin / "redocly"
    redocly.write_text(FAKE_REDOCLY.format(log=log, banner=BANNER, fail=repo / "redocly-fails"))
    redocly.chmod(0o755)
    return repo, log


def _run(repo: Path, log: Path) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    log.unlink(missing_ok=True)
    done = subprocess.run([str(repo / "scripts" / "test"), "tests/x"], capture_output=True,
                          text=True, timeout=60, env={**os.environ, "LC_ALL": "C"})
    return done, log.read_text().splitlines()


def test_installs_only_when_pyproject_changed(tmp_path: Path) -> None:
    repo, log = _checkout(tmp_path)
    install = "python -m pip install -q -e .[dev]"
    done, calls = _run(repo, log)
    assert done.returncode == 0, done.stdout + done.stderr
    assert calls[0] == install
    assert "python -m pytest -q tests/x" in calls
    assert calls[-1] == "mkdocs build --strict --quiet"  # the docs, last
    done, calls = _run(repo, log)
    assert install not in calls and "python -m pytest -q tests/x" in calls
    with (repo / "pyproject.toml").open("a") as fh:
        fh.write("\n# a dependency changed\n")
    assert _run(repo, log)[1][0] == install
    assert install not in _run(repo, log)[1]


def test_redocly_findings_without_its_banner(tmp_path: Path) -> None:
    repo, log = _checkout(tmp_path)
    done, _ = _run(repo, log)
    assert done.returncode == 0
    out = done.stdout + done.stderr
    assert "Deprecation warning" not in out and "╔" not in out and "║" not in out
    assert "validating spec/openapi.yaml..." in out and "Woohoo!" in out
    (repo / "redocly-fails").touch()
    done, calls = _run(repo, log)
    assert done.returncode == 1  # a finding still fails the run, before anything else
    assert "spec/openapi.yaml:3:1 error  a finding" in done.stdout + done.stderr
    assert "Deprecation warning" not in done.stdout + done.stderr
    assert not any(c.startswith("python -m pytest") for c in calls)
