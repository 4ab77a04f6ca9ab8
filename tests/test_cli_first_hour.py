"""The command line as a new user meets it: help that explains (every option with its help and
default, every subcommand with a description, --help exiting 0 everywhere, the console script
naming itself) and one rate-limit story (`serve --rate-limit N` is every workspace's limit,
and the banner lists the limits in force)."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from mockserver.cli import build_parser, main, program_name
from mockserver.engine.app import MockApp
from mockserver.standalone.cli import rate_limit_summary
from mockserver.standalone.server import create_app

COMMANDS = [["serve"], ["fixtures"], ["fixtures", "generate"], ["conform"], ["proxy"], ["robust"],
            []]


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c) or "top")
def test_help_exits_0_everywhere(command: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        assert main([*command, "--help"]) == 0  # conform returns 0, argparse exits 0
        raise SystemExit(0)
    assert stopped.value.code in (0, None)
    assert "usage:" in capsys.readouterr().out


def _parsers() -> dict[str, argparse.ArgumentParser]:
    found: dict[str, argparse.ArgumentParser] = {}

    def walk(name: str, parser: argparse.ArgumentParser) -> None:
        found[name] = parser
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for sub, child in action.choices.items():
                    if child.add_help:  # conform and proxy: listed only, their own parsers
                        walk(f"{name} {sub}".strip(), child)

    walk("", build_parser("prog"))
    return found


def test_every_subcommand_has_a_description() -> None:
    for name, parser in _parsers().items():
        assert parser.description, f"`{name or 'top'}` has no description"


def test_every_option_has_help_and_its_default() -> None:
    for name, parser in _parsers().items():
        text = parser.format_help()
        for action in parser._actions:
            if not action.option_strings or isinstance(action, argparse._HelpAction):
                continue
            option = action.option_strings[-1]
            assert action.help, f"`{name} {option}` has no help"
            stated = parser.formatter_class(prog="x")._get_help_string(action)  # type: ignore[attr-defined]
            meaningful = not (action.default is None or action.default is False
                              or action.default == [] or action.required)
            if meaningful:
                assert "default" in stated, f"`{name} {option}` does not state its default"
        assert "usage:" in text
    proxy_help = subprocess.run([sys.executable, "-m", "mockserver", "proxy", "--help"],
                                capture_output=True, text=True, check=True).stdout
    for option in ("--host", "--port", "--spec", "--log-format"):  # proxy's parser is in main()
        line = proxy_help.split("options:", 1)[1].split(f"\n  {option}", 1)[1]
        line = line.split("\n  -", 1)[0]
        assert "default" in line, f"proxy {option} does not state its default"


def test_the_console_script_names_itself() -> None:
    assert program_name("/usr/lib/python3/site-packages/mockserver/__main__.py") == (
        "python -m mockserver")
    assert program_name("/home/me/.venv/bin/workspace-api-mock") == "workspace-api-mock"
    script = Path(sys.executable).parent / "workspace-api-mock"
    assert script.exists(), "the package's console script is not installed"
    shown = subprocess.run([str(script), "serve", "--help"], capture_output=True, text=True,
                           check=True).stdout
    assert shown.startswith("usage: workspace-api-mock serve")
    shown = subprocess.run([str(script), "proxy", "--help"], capture_output=True, text=True,
                           check=True).stdout
    assert shown.startswith("usage: workspace-api-mock proxy")
    shown = subprocess.run([str(script), "conform", "--help"], capture_output=True, text=True,
                           check=True).stdout
    assert shown.startswith("usage: workspace-api-mock conform")


def test_every_conform_option_has_help() -> None:
    from mockserver.conform.cli import build_parser as conform_parser

    for action in conform_parser()._actions:
        if action.option_strings:
            assert action.help, f"`conform {action.option_strings[-1]}` has no help"


# -- one rate-limit story ----------------------------------------------------------------------

def _serve_mock(*options: str) -> MockApp:
    from mockserver.standalone.cli import _config

    args = build_parser("prog").parse_args(["serve", *options])
    return MockApp(_config(args))


def _statuses(mock: MockApp, workspace: str, n: int) -> list[int]:
    with TestClient(create_app(mock=mock),
                    headers={"Authorization": "Bearer mock-write-token"}) as client:
        return [client.get("/v1/tickets", params={"workspace_id": workspace}).status_code
                for _ in range(n)]


def test_serve_rate_limit_is_every_workspaces_limit() -> None:
    mock = _serve_mock("--rate-limit", "5", "--quiet")
    assert mock.state.rate_limits() == {"per_minute": 5, "enabled": True, "workspaces": {}}
    assert _statuses(mock, "ws_alpine", 8) == [200] * 5 + [429] * 3  # its fixture says 600


def test_without_rate_limit_the_fixtures_plan_limits_apply() -> None:
    mock = _serve_mock("--quiet")
    assert mock.state.rate_limits() == {"per_minute": 120, "enabled": True,
                                        "workspaces": {"ws_alpine": 600}}


def test_the_banner_lists_the_limits_in_force() -> None:
    assert rate_limit_summary({"per_minute": 120, "enabled": True,
                               "workspaces": {"ws_alpine": 600}}) == (
        "120/min per workspace; ws_alpine 600/min")
    assert rate_limit_summary({"per_minute": 5, "enabled": True, "workspaces": {}}) == (
        "5/min per workspace")
    assert rate_limit_summary({"per_minute": 0, "enabled": False, "workspaces": {}}) == "off"


def test_serve_prints_the_limits_in_force() -> None:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen([sys.executable, "-m", "mockserver", "serve", "--port", str(port),
                                "--quiet"], stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        banner = [process.stdout.readline() for _ in range(9)]
    finally:
        process.kill()  # a clean stop is tests/standalone/test_serve_cli.py's
        process.communicate(timeout=20)
    assert "  rate limit: 120/min per workspace; ws_alpine 600/min\n" in banner, banner
