"""The front door: `python -m mockserver COMMAND` and the `workspace-api-mock` console script.

Every command belongs to a product's own command-line module, named once in the tables below:

- `PARSED`: products whose subcommands join this parser (`add_parsers(commands)`: the
  standalone server's `serve` and `fixtures generate`, `record`), so `--help` walks them all;
- `OWN_LINE`: products that parse their own argument line, handed the rest of it untouched
  (`conform`, `proxy`, `robust`), imported only when called (the gate's packages are an
  extra: a missing one is named, exit 2).

This module imports the products; none imports it (pyproject.toml's layers put it on top).
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .record import cli as record_cli
from .standalone import cli as standalone_cli
from .standalone.cli import HelpFormatter

__all__ = ["OWN_LINE", "PARSED", "build_parser", "main", "program_name"]

Commands = argparse._SubParsersAction  # what `add_parsers` adds a product's subcommands to


@dataclass(frozen=True)
class OwnLine:
    """A command whose product parses its own argument line: `run(argv, prog)`."""

    help: str
    run: Callable[[list[str], str], int]
    needs: tuple[str, ...] = ()  # packages it cannot run without: `extra`, named when missing
    extra: str = ""
    what: str = ""  # what needs them, for that message


def _conform(argv: list[str], prog: str) -> int:
    from .conform.cli import main as conform_main

    return conform_main(argv, prog=prog)


def _proxy(argv: list[str], prog: str) -> int:
    from .proxy import main as proxy_main

    return proxy_main(argv, prog=prog)


def _robust(argv: list[str], prog: str) -> int:
    from .robust_cli import main as robust_main

    return robust_main(argv, prog=prog)


PARSED: tuple[Callable[[Commands], None], ...] = (standalone_cli.add_parsers,
                                                 record_cli.add_parser)
OWN_LINE: dict[str, OwnLine] = {
    "conform": OwnLine("fuzz a server against the document (conform --help)", _conform,
                       needs=("schemathesis", "hypothesis", "pytest"), extra="conform",
                       what="the conformance gate"),
    "proxy": OwnLine("validate traffic to a real server (proxy --help)", _proxy),
    "robust": OwnLine("run a client's tests against varied answers (robust --help)", _robust),
}


def program_name(argv0: str | None = None) -> str:
    """How the user called us: `python -m mockserver`, or the console script's own name."""
    name = Path(argv0 if argv0 is not None else sys.argv[0]).name
    return "python -m mockserver" if name in ("__main__.py", "", "-c") else name


def build_parser(prog: str | None = None) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=prog or program_name(),
        description="Mock server and conformance gate for the Workspace Messaging and "
        "Automation API v1.",
        formatter_class=HelpFormatter,
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for add_parsers in PARSED:
        add_parsers(commands)
    for name, command in OWN_LINE.items():  # listed for --help; main() hands them their line
        commands.add_parser(name, add_help=False, help=command.help)
    return parser


def missing(command: OwnLine) -> list[str]:
    """The packages `command` needs that cannot be imported."""
    return [name for name in command.needs if importlib.util.find_spec(name) is None]


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    prog = program_name()
    command = OWN_LINE.get(argv[0]) if argv else None
    if command is not None:
        lacking = missing(command)
        if lacking:
            print(f"{prog} {argv[0]}: {command.what} needs {', '.join(lacking)}, which this "
                  f"installation lacks. Install the {command.extra} extra:\n"
                  f"    pip install 'workspace-api-mock[{command.extra}]'", file=sys.stderr)
            return 2
        return command.run(argv[1:], f"{prog} {argv[0]}")
    args = build_parser(prog).parse_args(argv)
    return int(args.func(args))
