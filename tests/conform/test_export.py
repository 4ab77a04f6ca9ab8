"""`--export DIR`: a planted failure written as a standalone pytest file (httpx only) that
fails against the planted server and passes against the correct mock, run from a directory
where this package cannot be imported."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from . import broken
from .conftest import WRITE, gate, served

# A check's failure after set-up writes: create an agent, delete it, read it (404 expected).
DELETE = ["--phases", "none", "--checks", "laws", "--allow-writes",
          "--include", "re:^(createAgent|deleteAgent)$"]
# Python run with the package unimportable and no pytest plugin auto-loaded (this package
# registers one): the exported file must need nothing of it.
RUNNER = """
import sys
class Refuse:
    def find_spec(self, name, path=None, target=None):
        if name == "mockserver" or name.startswith("mockserver."):
            raise ImportError("the exported test imported " + name)
        return None
sys.meta_path.insert(0, Refuse())
import pytest
sys.exit(pytest.main(["-q", "-p", "no:cacheprovider", *sys.argv[1:]]))
"""


def _replay(directory: Path, url: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "PYTHONPATH"))}
    env.update(BASE_URL=url, TOKEN=WRITE, PYTEST_DISABLE_PLUGIN_AUTOLOAD="1")
    return subprocess.run([sys.executable, "-c", RUNNER, "."], cwd=directory, env=env,
                          capture_output=True, text=True, timeout=120)


def test_an_exported_failure_fails_on_the_planted_server_and_passes_on_the_mock(
        tmp_path: Path) -> None:
    out = tmp_path / "exported"
    with served(plant=broken.delete_does_not_stick) as (url, _):
        result = gate(url, *DELETE, "--export", str(out))
        files = sorted(out.glob("test_*.py"))
        assert result.exit_code == 1 and files, result.violations
        assert result.exported == [f.name for f in files]
        text = files[0].read_text()
        assert "mockserver" not in text and "import httpx" in text
        assert "'POST', '/v1/agents" in text  # the create is replayed before the read
        planted = _replay(out, url)
    assert planted.returncode == 1, planted.stdout + planted.stderr
    assert "AssertionError" in planted.stdout or "assert" in planted.stdout
    with served() as (url, _):
        correct = _replay(out, url)
    assert correct.returncode == 0, correct.stdout + correct.stderr
    assert "README.md" in {p.name for p in out.iterdir()}


def test_an_exported_server_error_replays_the_request_that_met_it(tmp_path: Path) -> None:
    out = tmp_path / "exported"
    plant = lambda app: broken.ServerErrorOn(app, "GET", "/v1/tickets",  # noqa: E731
                                             query=(b"order=desc",))
    with served(wrap=plant) as (url, _):
        result = gate(url, "--phases", "none", "--checks", "laws", "--include", "listTickets",
                      "--export", str(out))
        assert [v.check for v in result.errors] == ["server_error"]
        assert _replay(out, url).returncode == 1
    with served() as (url, _):
        replay = _replay(out, url)
    assert replay.returncode == 0, replay.stdout + replay.stderr
