"""Exit statuses and the usage errors of `python -m mockserver conform`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mockserver.cli import main as top_level_main
from mockserver.conform.cli import main

from .conftest import WORKSPACE, WRITE, served
from .serve import refused_port


@pytest.mark.parametrize("argv, message", [
    (["--token", WRITE], "--base-url is required"),
    (["--base-url", "ftp://example.com", "--token", WRITE], "expected http(s)"),
    (["--base-url", "not a url", "--token", WRITE], "expected http(s)"),
    (["--base-url", "http://127.0.0.1:1"], "--token is required"),
    (["--base-url", "http://127.0.0.1:1", "--token", WRITE, "--report", "xml:out.xml"],
     "junit:PATH or json:PATH"),
    (["--base-url", "http://127.0.0.1:1", "--token", WRITE, "--report", "junit"],
     "junit:PATH or json:PATH"),
    (["--base-url", "http://127.0.0.1:1", "--token", WRITE, "--phases", "everything"],
     "unknown"),
    (["--base-url", "http://127.0.0.1:1", "--token", WRITE, "--no-such-option"], ""),
])
def test_usage_errors_exit_2(argv: list[str], message: str, capsys: pytest.CaptureFixture[str],
                             monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("CONFORM_BASE_URL", "CONFORM_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_unreachable_target_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    with refused_port() as port:
        assert main(["--base-url", f"http://127.0.0.1:{port}", "--token", WRITE, "--rate", "0",
                     "--quiet"]) == 2
    assert "cannot reach" in capsys.readouterr().err


def test_unreachable_target_is_a_usage_error_alone(capsys: pytest.CaptureFixture[str]) -> None:
    """Not quiet: the usage error is the one thing said (a `FAIL [server_error]` line for
    the preflight's request came before it: issue 43)."""
    with refused_port() as port:
        assert main(["--base-url", f"http://127.0.0.1:{port}", "--token", WRITE, "--rate",
                     "0"]) == 2
    said = capsys.readouterr()
    assert "cannot reach" in said.err
    assert "FAIL" not in said.out + said.err and "server_error" not in said.out + said.err


def test_refused_token_and_unknown_workspace_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    with served() as (url, _):
        assert main(["--base-url", url, "--token", "nope", "--rate", "0", "--quiet"]) == 2
        assert "refuses --token" in capsys.readouterr().err
        assert main(["--base-url", url, "--token", WRITE, "--workspace", "ws_desert",
                     "--rate", "0", "--quiet"]) == 2
        assert "not among" in capsys.readouterr().err


def test_top_level_cli_dispatches_to_conform(capsys: pytest.CaptureFixture[str]) -> None:
    assert top_level_main(["conform", "--base-url", "bad", "--token", "t"]) == 2


def test_env_vars_and_max_requests(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """--max-requests stops gracefully, the report says so and what did not run, and the
    verdict is INCOMPLETE (exit 3), never PASS; tokens may come from env."""
    report = tmp_path / "r.json"
    with served() as (url, _):
        monkeypatch.setenv("CONFORM_BASE_URL", url)
        monkeypatch.setenv("CONFORM_TOKEN", WRITE)
        monkeypatch.setenv("CONFORM_WORKSPACE", WORKSPACE)
        code = main(["--rate", "0", "--max-requests", "150", "--quiet",
                     "--report", f"json:{report}"])
    data = json.loads(report.read_text())
    assert code == 3
    assert data["verdict"] == "INCOMPLETE"
    assert data["stopped"] == "request budget of 150 reached"
    assert data["requests"] <= 150
    assert "schemathesis (not reached)" in data["not_run"], data["not_run"]
    assert "stopped: request budget of 150 reached" in data["incomplete"]
