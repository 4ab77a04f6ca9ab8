"""The gate against a session's base URL (`/sessions/{name}`): the mock passes there too, and
every request the gate sent reached that session, none the default session."""

from __future__ import annotations

import json
from pathlib import Path

from mockserver.conform.cli import main
from mockserver.engine.app import Config, MockApp
from mockserver.standalone.server import create_app

from .conftest import OTHER, READ, WORKSPACE, WRITE
from .serve import serve


def test_gate_passes_against_a_session_base_url(tmp_path: Path) -> None:
    mock = MockApp(Config(rate_limit=0))
    mock.sessions.create("gate")
    report = tmp_path / "conform.json"
    with serve(create_app(mock=mock)) as url:
        code = main(["--base-url", f"{url}/sessions/gate", "--token", WRITE,
                     "--read-token", READ, "--foreign-token", OTHER, "--workspace", WORKSPACE,
                     "--allow-writes", "--phases", "examples", "--max-examples", "2",
                     "--seed", "3", "--rate", "0", "--quiet", "--report", f"json:{report}"])
    data = json.loads(report.read_text())
    errors = [v for v in data["violations"] if v["severity"] == "error"]
    assert code == 0, json.dumps(errors, indent=2)[:4000]
    performed = data["checks_performed"]
    for family in ("pagination", "auth", "state"):
        assert performed.get(family, 0) > 0, performed
    session = mock.sessions.state("gate")
    assert len(session.journal) > 100
    assert session.changes > 0  # the state rules wrote there
    assert len(mock.state.journal) == 0 and mock.state.changes == 0
