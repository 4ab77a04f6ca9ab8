"""Every `serve` option settable by MOCK_API_<OPTION> (the container image's configuration):
converted as on the command line, overridden by it, named in --help, refused with exit 2
naming the variable; and the banner of a mock bound off loopback without a control token."""

from __future__ import annotations

import argparse
from typing import Any

import pytest

from mockserver import cli
from mockserver.standalone.cli import env_name


def _serve_parser() -> argparse.ArgumentParser:
    parser = cli.build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return commands.choices["serve"]


def _options() -> list[argparse.Action]:
    return [a for a in _serve_parser()._actions if a.option_strings and a.dest != "help"]


def test_every_serve_option_names_its_variable_in_help() -> None:
    helps = _serve_parser().format_help().replace("\n", " ").replace("  ", " ")
    names = [env_name(action) for action in _options()]
    assert len(names) >= 20 and "MOCK_API_CONTROL_TOKEN" in names
    for name in names:
        assert name in " ".join(helps.split()), name


def test_variables_set_defaults_converted_as_the_command_line(monkeypatch) -> None:
    monkeypatch.setenv("MOCK_API_HOST", "0.0.0.0")
    monkeypatch.setenv("MOCK_API_PORT", "9123")
    monkeypatch.setenv("MOCK_API_SELF_CHECK", "true")
    monkeypatch.setenv("MOCK_API_QUIET", "0")
    monkeypatch.setenv("MOCK_API_FIXTURES", "/a:/b")
    monkeypatch.setenv("MOCK_API_LOG_FORMAT", "json")
    monkeypatch.setenv("MOCK_API_SESSION_IDLE", "2.5")
    monkeypatch.setenv("MOCK_API_CONTROL_TOKEN", "s3cret")
    monkeypatch.setenv("MOCK_API_RATE_LIMIT", "")  # empty: the default stands
    args = cli.build_parser().parse_args(["serve"])
    assert (args.host, args.port, args.self_check, args.quiet) == ("0.0.0.0", 9123, True, False)
    assert args.fixtures == ["/a", "/b"] and args.log_format == "json"
    assert args.session_idle == 2.5 and args.control_token == "s3cret"
    assert args.rate_limit is None and args.env_errors == []  # None: not given (120 + plans)
    # The command line wins over the environment.
    args = cli.build_parser().parse_args(["serve", "--port", "7000", "--fixtures", "/c"])
    assert args.port == 7000 and args.fixtures == ["/c"]


@pytest.mark.parametrize(("name", "value", "says"), [
    ("MOCK_API_PORT", "eighty", "invalid int value"),
    ("MOCK_API_SELF_CHECK", "maybe", "expected one of 1, true"),
    ("MOCK_API_LOG_FORMAT", "xml", "expected one of text, json"),
])
def test_a_bad_variable_stops_serve_naming_it(monkeypatch, capsys, name: str, value: str,
                                               says: str) -> None:
    monkeypatch.setenv(name, value)
    assert cli.main(["serve"]) == 2
    err = capsys.readouterr().err
    assert f"{name}={value!r}" in err and says in err


def test_off_loopback_without_a_token_the_banner_says_how_to_turn_control_on(
        monkeypatch, capsys) -> None:
    import uvicorn

    ran: list[Any] = []
    # serve binds its sockets first (bind.py) and never listens here: the server is replaced.
    monkeypatch.setattr(uvicorn.Server, "run",
                        lambda self, sockets=None: ran.append(sockets[0].getsockname()[0]))
    monkeypatch.setenv("MOCK_API_HOST", "0.0.0.0")
    monkeypatch.setenv("MOCK_API_PORT", "0")
    assert cli.main(["serve", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert ran[0] == "0.0.0.0"
    assert "control API off: bound to 0.0.0.0 without a control token" in out
    assert "MOCK_API_CONTROL_TOKEN=TOKEN" in out
    monkeypatch.setenv("MOCK_API_CONTROL_TOKEN", "s3cret")
    assert cli.main(["serve", "--quiet"]) == 0
    assert "control API off" not in capsys.readouterr().out


def test_the_container_page_lists_every_variable_in_one_table() -> None:
    from pathlib import Path

    page = Path(__file__).resolve().parents[2] / "docs" / "getting-started" / "container.md"
    section = page.read_text()
    rows = {line.split("`")[1]: line.split("`")[3] for line in section.splitlines()
            if line.startswith("| `MOCK_API_")}
    assert rows == {env_name(a): a.option_strings[0] for a in _options()}
