"""`serve` and custom tools' code (issue 42, DECISIONS T10-T12): off by default (and what the
banner says), on with --run-tool-code or MOCK_API_RUN_TOOL_CODE, refused at start when bound
off loopback without a control token, --tool-code-dir handed to the mock."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from mockserver.standalone import cli


@pytest.fixture
def started(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """serve binds its sockets first (bind.py) and never listens here: the server is
    replaced by one that records the mock it was given."""
    import uvicorn

    ran: list[Any] = []
    monkeypatch.setattr(uvicorn.Server, "run",
                        lambda self, sockets=None: ran.append(self.config.app))
    monkeypatch.setenv("MOCK_API_PORT", "0")
    return ran


def _mock(app: Any) -> Any:
    return app.mock


def test_off_by_default_and_the_banner_says_so(started: list[Any], capsys) -> None:
    assert cli.main(["serve", "--quiet"]) == 0
    assert _mock(started[0]).services.tools.enabled is False
    assert "custom tools' code not run (--run-tool-code to run it)" in capsys.readouterr().out


def test_on_with_the_flag_or_its_variable(started: list[Any], monkeypatch, capsys,
                                          tmp_path: Path) -> None:
    assert cli.main(["serve", "--quiet", "--run-tool-code", "--tool-code-dir",
                     str(tmp_path)]) == 0
    tools = _mock(started[-1]).services.tools
    assert tools.enabled is True and tools.code_dir == tmp_path
    out = capsys.readouterr().out
    assert f"custom tools' code runs (from {tmp_path}" in out
    assert "network: none (each run in an empty network namespace)" in out or \
        "network: blocked in process only, best effort" in out
    monkeypatch.setenv("MOCK_API_RUN_TOOL_CODE", "1")
    assert cli.main(["serve", "--quiet"]) == 0
    assert _mock(started[-1]).services.tools.enabled is True


def test_refused_off_loopback_without_a_control_token(started: list[Any], monkeypatch,
                                                      capsys) -> None:
    monkeypatch.setenv("MOCK_API_HOST", "0.0.0.0")
    assert cli.main(["serve", "--quiet", "--run-tool-code"]) == 2
    err = capsys.readouterr().err
    assert "--run-tool-code on '0.0.0.0'" in err and "--control-token" in err
    assert started == []  # never served
    assert cli.main(["serve", "--quiet"]) == 0  # without it: served as before
    monkeypatch.setenv("MOCK_API_CONTROL_TOKEN", "s3cret")
    assert cli.main(["serve", "--quiet", "--run-tool-code"]) == 0
    assert _mock(started[-1]).services.tools.enabled is True
