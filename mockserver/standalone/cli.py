"""The standalone server's command line: `serve` (its options, each also settable by a
`MOCK_API_*` variable) and `fixtures generate`, added to the front door's parser
(`mockserver/cli.py`, which dispatches every command) by `add_parsers`."""

from __future__ import annotations

import argparse
import importlib
import json
import os
import signal
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["HelpFormatter", "add_parsers", "main", "worker_app"]

DEFAULT_HOST = "127.0.0.1"  # safe default: loopback only
DEFAULT_RATE_LIMIT = 120  # requests per minute per workspace (the description's figure)
STATE_ENV = "MOCK_API_STATE"  # redis://HOST:PORT/DB, as --state
NAMESPACE_ENV = "MOCK_API_STATE_NAMESPACE"
# uvicorn's httptools protocol with the request head limited as it arrives (protocol.py)
PROTOCOL = "mockserver.standalone.protocol:GuardedHttpToolsProtocol"
_WORKER_ENV = "MOCKSERVER_WORKER_ARGS"  # serve's options, handed to each --workers process


def _config(args: argparse.Namespace) -> Any:
    from ..data.fixtures import default_fixtures_dir
    from ..engine.config import Config

    fixtures = [Path(p) for p in args.fixtures] or [default_fixtures_dir()]
    fixtures += [Path(p) for p in args.overlay]
    base_url = f"http://{args.host}:{args.port}"
    return Config(
        fixtures=fixtures,
        seed=args.seed,
        # An explicit --rate-limit is every workspace's limit, the fixtures' plan limits
        # included (as the plugin's rate_limit); without it, 120 and those plan limits.
        rate_limit=DEFAULT_RATE_LIMIT if args.rate_limit is None else args.rate_limit,
        workspace_limits=args.rate_limit is None,
        frozen_clock=None if args.clock == "real" else args.clock,
        self_check=args.self_check,
        base_url=base_url,
        host=args.host,
        control_token=args.control_token,
        allowed_hosts=tuple(name.strip() for entry in args.allowed_host
                            for name in entry.split(",") if name.strip()),
        fixtures_root=args.fixtures_root,
        storage_secret=args.storage_secret,
        journal_size=args.journal_size,
        journal_bytes=args.journal_bytes,
        response_cache=args.response_cache,
        request_log=not args.quiet,
        strict_params=args.strict_params,
        max_sessions=args.max_sessions,
        max_session_memory=args.max_session_memory * 1024 * 1024,
        session_idle_seconds=args.session_idle,
        sessions_on_use=args.sessions_on_use,
        state=args.state,
        state_namespace=args.state_namespace,
        run_tool_code=args.run_tool_code,
        tool_code_dir=Path(args.tool_code_dir) if args.tool_code_dir else None,
    )


def worker_app() -> Any:
    """The application of one `serve --workers N` process (uvicorn's factory)."""
    from ..engine.requestlog import configure_logging
    from .server import create_app

    fields = json.loads(os.environ[_WORKER_ENV])
    exposed = tuple(fields.pop("exposed"))  # decided by the parent on the bound sockets
    args = argparse.Namespace(**fields)
    if not args.quiet:
        configure_logging(args.log_format)
    config = _config(args)
    config.exposed = exposed
    return create_app(config)


def _serve(args: argparse.Namespace) -> int:
    import uvicorn
    from uvicorn.supervisors import Multiprocess

    from ..data.fixtures import FixtureError
    from ..engine.app import MockApp
    from ..engine.requestlog import configure_logging
    from .bind import bind_sockets, exposed_addresses
    from .server import create_app

    if args.env_errors:
        for error in args.env_errors:
            print(f"error: environment: {error}", file=sys.stderr)
        return 2
    if args.workers < 1:
        print("error: --workers must be at least 1", file=sys.stderr)
        return 2
    if args.workers > 1 and not args.state:
        print(f"error: --workers {args.workers} needs shared state: each worker would keep its "
              f"own copy of the mock (ids, records, rate limits and resets would diverge). "
              f"Start Redis and add --state redis://127.0.0.1:6379/0 (or set {STATE_ENV})",
              file=sys.stderr)
        return 2
    config = _config(args)
    base_url = config.base_url
    fixtures = config.fixtures
    if not args.quiet:
        configure_logging(args.log_format)
    try:
        mock = MockApp(config)
    except FixtureError as exc:
        print(f"error: fixtures: {exc}", file=sys.stderr)
        return 2
    except RuntimeError as exc:  # shared.SharedStateError: redis-py, Redis, namespace
        if type(exc).__name__ != "SharedStateError":
            raise
        print(f"error: --state: {exc}", file=sys.stderr)
        return 2
    try:
        sockets = bind_sockets(args.host, args.port)
    except OSError as exc:
        print(f"error: cannot listen on {args.host!r} port {args.port}: {exc}", file=sys.stderr)
        return 2
    config.exposed = tuple(exposed_addresses(sockets))
    if args.run_tool_code and config.exposed and not args.control_token:
        # Never a door (DECISIONS T10): code sent by anyone who reaches the port would run.
        for sock in sockets:
            sock.close()
        print(f"error: --run-tool-code on {args.host!r} (reachable from off this host: "
              f"{', '.join(config.exposed)}) runs code anyone who reaches the port sends; "
              f"refused without a control token: add --control-token TOKEN (or "
              f"{ENV_PREFIX}CONTROL_TOKEN), or bind to 127.0.0.1", file=sys.stderr)
        return 2
    app = create_app(mock=mock)
    print(f"Workspace API mock serving {base_url}/v1", flush=True)
    print(f"  reference page: {base_url}/docs   document: {base_url}/openapi.json", flush=True)
    for principal in mock.state.tokens:
        scope = ", ".join(sorted(principal.workspace_ids))
        print(f"  token {principal.token:<22} {principal.access:<5} {scope}", flush=True)
    print(f"  rate limit: {rate_limit_summary(mock.state.rate_limits())}", flush=True)
    clock = mock.state.clock
    print(f"  clock: {'frozen at ' if clock.frozen else 'real time, now '}{clock.now()}",
          flush=True)
    print(f"  fixtures: {', '.join(map(str, fixtures))}", flush=True)
    print(f"  control API: {base_url}/__mock__/  inspector: {base_url}/__mock__/inspector",
          flush=True)
    if not args.control_token and config.exposed:
        print(f"  control API off: bound to {args.host} without a control token; turn it on "
              f"with --control-token TOKEN (or {ENV_PREFIX}CONTROL_TOKEN=TOKEN) and send it as "
              "X-Mock-Control-Token", flush=True)
    if args.run_tool_code:
        where = f" (from {args.tool_code_dir} where a file is named after the tool)" \
            if args.tool_code_dir else ""
        print(f"  custom tools' code runs{where}: python {sys.executable}; javascript "
              f"{_javascript_summary()}; network: {_network_summary()}", flush=True)
    else:
        print("  custom tools' code not run (--run-tool-code to run it)", flush=True)
    if args.state:
        print(f"  shared state: {args.state} namespace {args.state_namespace!r}; "
              f"{args.workers} worker(s)", flush=True)
    if config.exposed:
        _warn_exposed(config.exposed, bool(args.control_token))
    # uvicorn installs its own SIGINT/SIGTERM handlers: both shut the server down cleanly,
    # after which uvicorn restores the previous handlers and raises the signal again. The
    # SIGTERM handler below turns that into a normal exit (0), as Ctrl-C already is.
    previous = signal.signal(signal.SIGTERM, _stop)
    try:
        if args.workers > 1:  # processes that build their own worker of the shared mock
            # One storage key for all workers and processes: unpinned, derived from the
            # namespace's secret in Redis (DECISIONS H12).
            os.environ[_WORKER_ENV] = json.dumps({**{k: v for k, v in vars(args).items()
                                                     if k != "func"},
                                                  "exposed": list(config.exposed)})
            del app, mock
            uv_config = uvicorn.Config("mockserver.standalone.cli:worker_app", factory=True,
                                       workers=args.workers, **_UVICORN)
            Multiprocess(uv_config, sockets=sockets).run()
        else:
            uvicorn.Server(uvicorn.Config(app, **_UVICORN)).run(sockets=sockets)
    except (_Stopped, KeyboardInterrupt):
        pass
    finally:
        signal.signal(signal.SIGTERM, previous)
        for sock in sockets:
            sock.close()
    print("mock stopped", flush=True)
    return 0


def _javascript_summary() -> str:
    from ..engine.toolexec import javascript_runtime

    found = javascript_runtime()
    return "none (neither bun nor node installed: JavaScript runs fail)" if found is None \
        else f"{found[0]} {found[1]}"


def _network_summary() -> str:
    from ..engine.toolexec import network_isolation

    return ("none (each run in an empty network namespace)" if network_isolation() else
            "blocked in process only, best effort (no network namespace here: "
            "docs/tool-authors.md)")


def rate_limit_summary(limits: dict[str, Any]) -> str:
    """The limits in force, as the banner prints them: the default and each workspace's own."""
    if not limits["enabled"] or not limits["per_minute"]:
        return "off"
    own = "".join(f"; {ws} {limit}/min" for ws, limit in sorted(limits["workspaces"].items()))
    return f"{limits['per_minute']}/min per workspace{own}"


# How serve runs uvicorn, on the sockets bound first (bind.py): its httptools protocol with
# the request head limited as it arrives (protocol.py).
_UVICORN: dict[str, Any] = {"log_level": "warning", "access_log": False, "lifespan": "on",
                            "http": PROTOCOL}


def _warn_exposed(where: tuple[str, ...], token: bool) -> None:
    """Said loudly at start-up: the mock can be reached from off this host."""
    lines = [f"WARNING: the mock listens on {', '.join(where)}, which is not loopback: anyone "
             "who can reach it can call the API with the fixture tokens."]
    if token:
        lines.append("WARNING: the control API (/__mock__/) requires X-Mock-Control-Token.")
    else:
        lines.append("WARNING: the control API (/__mock__/) is DISABLED (403): start with "
                     "--control-token to use it.")
    for line in lines:
        print(line, file=sys.stderr, flush=True)


class _Stopped(Exception):
    """SIGTERM, raised again by uvicorn after a clean shutdown."""


def _stop(signum: int, frame: object) -> None:
    raise _Stopped()


def _generate(args: argparse.Namespace) -> int:
    from ..data.generate import generate

    generate(scale=args.scale, seed=args.seed, out=Path(args.out))
    print(f"wrote a dataset of {args.scale} contacts (seed {args.seed}) to {args.out}")
    return 0


ENV_PREFIX = "MOCK_API_"  # every serve option: MOCK_API_<OPTION> (--rate-limit: MOCK_API_RATE_LIMIT)
_TRUE, _FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off")


def env_name(action: argparse.Action) -> str:
    """The environment variable that sets this option's default: MOCK_API_ and its dest."""
    return ENV_PREFIX + action.dest.upper()


def _env_value(action: argparse.Action, raw: str) -> Any:
    """An option's value from its environment variable, converted as the command line would
    (flags take 1/true/yes/on or 0/false/no/off; repeatable options a list joined by
    os.pathsep). Raises ValueError naming what is wrong."""
    if isinstance(action, argparse._StoreTrueAction):
        word = raw.strip().lower()
        if word not in _TRUE + _FALSE:
            raise ValueError(f"expected one of {', '.join(_TRUE + _FALSE)}")
        return word in _TRUE
    convert = action.type if callable(action.type) else str
    if isinstance(action, argparse._AppendAction):
        return [convert(part) for part in raw.split(os.pathsep) if part]
    try:
        value = convert(raw)
    except argparse.ArgumentTypeError as exc:  # a converter that says what is wrong
        raise ValueError(str(exc)) from None
    except (TypeError, ValueError):
        name = getattr(convert, "__name__", "value")
        raise ValueError(f"invalid {name} value") from None
    if action.choices is not None and value not in action.choices:
        raise ValueError(f"expected one of {', '.join(map(str, action.choices))}")
    return value


class _AppendOverEnv(argparse._AppendAction):
    """A repeatable option given on the command line replaces its environment's list."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        if getattr(namespace, self.dest, None) is self.default:
            setattr(namespace, self.dest, [])
        super().__call__(parser, namespace, values, option_string)


def _env_defaults(parser: argparse.ArgumentParser, environ: Mapping[str, str]) -> None:
    """Make every option of `parser` settable by MOCK_API_<DEST>: the variable, when set,
    replaces the option's default (the command line still wins), and --help names it. A value
    that does not convert is kept in `env_errors` for the command to report (exit 2)."""
    errors: list[str] = []
    for action in parser._actions:
        if not action.option_strings or action.dest in ("help", argparse.SUPPRESS):
            continue
        name = env_name(action)
        if action.help is not None and name not in action.help:
            action.help = f"{action.help} [env {name}]"
        elif action.help is None:
            action.help = f"[env {name}]"
        raw = environ.get(name)
        if not raw:  # unset or empty (as compose's ${VAR:-} gives): the default stands
            continue
        try:
            action.default = _env_value(action, raw)
            if isinstance(action, argparse._AppendAction):
                action.__class__ = _AppendOverEnv
        except ValueError as exc:
            errors.append(f"{name}={raw!r} (for {action.option_strings[0]}): {exc}")
    parser.set_defaults(env_errors=errors)


class HelpFormatter(argparse.HelpFormatter):
    """argparse's help, with each option's default added where its help does not state one
    (and it has one worth stating: not None, False or an empty list)."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        default = action.default
        unstated = default is None or default is False or default == [] or (
            default == argparse.SUPPRESS)
        if "default" in text or unstated or not action.option_strings:
            return text
        return f"{text} (default: {default})"


def _clock_option(value: str) -> str:
    """--clock's value: 'real', or an instant a clock may stand at (argparse's error names
    the range otherwise)."""
    from ..engine.clock import parse_clock

    if value.strip().lower() == "real":
        return "real"
    try:
        parse_clock(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"{value!r} is {exc} (or 'real')") from None
    return value


def add_parsers(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The `serve` and `fixtures` subcommands and their options."""
    serve = commands.add_parser(
        "serve", help="run the mock on the fixtures", formatter_class=HelpFormatter,
        description="Serve the mock of the API on the fixtures, with its control API "
        "(/__mock__/), reference page (/docs) and request inspector. Stop it with Ctrl-C.")
    serve.add_argument("--host", default=DEFAULT_HOST, help="bind address (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=8080, help="port to listen on")
    serve.add_argument("--fixtures", action="append", default=[], metavar="DIR",
                       help="fixture directory to load instead of the defaults (repeatable)")
    serve.add_argument("--overlay", action="append", default=[], metavar="DIR",
                       help="fixture directory overlaid on the others, record by record")
    serve.add_argument("--seed", type=int, default=0, help="seed of generated ids (and of "
                       "probability faults' draws): the same seed gives the same ids")
    serve.add_argument("--rate-limit", type=int, default=None, metavar="N",
                       help="requests per minute for every workspace, overriding the "
                       "fixtures' per-workspace limits; 0 turns limits off (default: "
                       f"{DEFAULT_RATE_LIMIT}, and a workspace's _rate_limit_per_minute in "
                       "the fixtures)")
    serve.add_argument("--clock", type=_clock_option, default="real", metavar="ISO|real",
                       help="the mock's clock: an ISO 8601 instant freezes it there (it then "
                       "moves only by POST /__mock__/clock), 'real' runs with wall time "
                       "(default: real)")
    serve.add_argument("--self-check", action="store_true",
                       help="validate every response against the document (fail loudly)")
    serve.add_argument("--log-format", choices=("text", "json"), default="text",
                       help="one line per request: method, path, status, latency")
    serve.add_argument("--quiet", action="store_true", help="no per-request log lines")
    serve.add_argument("--control-token", default=None, metavar="TOKEN",
                       help="X-Mock-Control-Token required by /__mock__/ (needed off loopback)")
    serve.add_argument("--allowed-host", action="append", default=[], metavar="NAME",
                       help="a Host name the control API and the pages answer to besides "
                            "loopback names and the bound addresses (repeatable, or "
                            "comma-separated; a check against DNS rebinding; with "
                            "--control-token any Host is answered)")
    serve.add_argument("--fixtures-root", default=None, metavar="DIR",
                       help="the directory POST /__mock__/fixtures may read under (needed "
                            "with --control-token or off loopback; default: anywhere when "
                            "loopback only without a token)")
    serve.add_argument("--storage-secret", default=None, metavar="SECRET",
                       help="key of upload URLs, storage ids and file URLs' signatures "
                            "(default: random per start; pin it for reproducible URLs, or to "
                            "share signed URLs between processes on one --state namespace)")
    serve.add_argument("--journal-size", type=int, default=1000, metavar="N",
                       help="requests kept for GET /__mock__/requests (0 turns the journal off)")
    serve.add_argument("--journal-bytes", type=int, default=64 * 1024 * 1024, metavar="N",
                       help="bytes the journal keeps in all (oldest entries go first; bodies "
                            "over 64 KiB are not kept, only their size)")
    serve.add_argument("--response-cache", type=int, default=256, metavar="N",
                       help="answers of repeated reads kept until the next write (0 turns it off)")
    serve.add_argument("--strict-params", action="store_true",
                       help="refuse unknown query parameters with 400 (default: ignore them, "
                            "as the real service does, and report them in the log and journal)")
    serve.add_argument("--max-sessions", type=int, default=10_000, metavar="N",
                       help="sessions at once (/sessions/{name}/v1/...; default 10000)")
    serve.add_argument("--max-session-memory", type=int, default=512, metavar="MIB",
                       help="memory the sessions' and snapshots' changes may hold (default 512)")
    serve.add_argument("--session-idle", type=float, default=3600, metavar="SECONDS",
                       help="delete a session after this long without requests (0: never)")
    serve.add_argument("--sessions-on-use", action="store_true",
                       help="a request naming an unknown session creates it (instead of 404)")
    serve.add_argument("--state", default=os.environ.get(STATE_ENV) or None,
                       metavar="redis://HOST:PORT/DB",
                       help="share the mock's state through Redis, so that several workers "
                       f"and processes serve one mock (env {STATE_ENV}; needs the redis extra)")
    serve.add_argument("--state-namespace", default=os.environ.get(NAMESPACE_ENV) or "mock",
                       metavar="NAME", help="mocks sharing one Redis are apart by namespace "
                       f"(default 'mock'; env {NAMESPACE_ENV})")
    serve.add_argument("--run-tool-code", action="store_true",
                       help="run custom tools' code for real (POST /v1/custom-tools/{id}/run): "
                       "Python in a child of this interpreter, JavaScript in Bun or Node, "
                       "within the limits of docs/tool-authors.md; off: deterministic answers "
                       "that say nothing ran. Off loopback it needs --control-token")
    serve.add_argument("--tool-code-dir", default=None, metavar="DIR",
                       help="run <name>.py / <name>.js from DIR in place of a custom tool's "
                       "stored code, read again on every run (with --run-tool-code)")
    serve.add_argument("--workers", type=int, default=1, metavar="N",
                       help="worker processes (more than 1 needs --state)")
    serve.set_defaults(func=_serve)
    _env_defaults(serve, os.environ)

    fixtures = commands.add_parser(
        "fixtures", help="work with fixture datasets", formatter_class=HelpFormatter,
        description="Work with fixture datasets (directories `serve --fixtures DIR` loads).")
    fixture_commands = fixtures.add_subparsers(dest="fixtures_command", required=True,
                                               metavar="COMMAND")
    generate = fixture_commands.add_parser(
        "generate", help="write a deterministic dataset", formatter_class=HelpFormatter,
        description="Write a deterministic dataset of N contacts, each with a conversation "
        "and, on average, messages, tickets, reservations and more. The same seed gives the "
        "same bytes.")
    generate.add_argument("--scale", type=int, required=True, metavar="N",
                          help="number of contacts (required)")
    generate.add_argument("--seed", type=int, default=0, metavar="N",
                          help="seed of the generated records")
    generate.add_argument("--out", required=True, metavar="DIR",
                          help="directory to write the dataset to (required; created if missing)")
    generate.set_defaults(func=_generate)


def main(argv: list[str] | None = None) -> int:
    """The console script of an installation made before the front door moved to
    `mockserver.cli` (pyproject.toml names `mockserver.cli:main` now): the front door's
    `main`. Remove once no environment installed before it is left."""
    front_door = importlib.import_module("mockserver.cli")  # imported when called: no cycle
    return int(front_door.main(argv))
