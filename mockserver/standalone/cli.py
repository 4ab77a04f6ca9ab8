"""Command line: `python -m mockserver serve | fixtures generate | conform | proxy`."""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import secrets
import signal
import sys
from pathlib import Path
from typing import Any

__all__ = ["main"]

DEFAULT_HOST = "127.0.0.1"  # safe default: loopback only
STATE_ENV = "MOCK_API_STATE"  # redis://HOST:PORT/DB, as --state
NAMESPACE_ENV = "MOCK_API_STATE_NAMESPACE"
# uvicorn's httptools protocol with the request head limited as it arrives (protocol.py)
PROTOCOL = "mockserver.standalone.protocol:GuardedHttpToolsProtocol"
_WORKER_ENV = "MOCKSERVER_WORKER_ARGS"  # serve's options, handed to each --workers process


def _config(args: argparse.Namespace) -> Any:
    from ..data.fixtures import default_fixtures_dir
    from ..engine.app import Config

    fixtures = [Path(p) for p in args.fixtures] or [default_fixtures_dir()]
    fixtures += [Path(p) for p in args.overlay]
    base_url = f"http://{args.host}:{args.port}"
    return Config(
        fixtures=fixtures,
        seed=args.seed,
        rate_limit=args.rate_limit,
        self_check=args.self_check,
        base_url=base_url,
        host=args.host,
        control_token=args.control_token,
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
    app = create_app(mock=mock)
    print(f"Workspace API mock serving {base_url}/v1", flush=True)
    print(f"  reference page: {base_url}/docs   document: {base_url}/openapi.json", flush=True)
    for principal in mock.state.tokens:
        scope = ", ".join(sorted(principal.workspace_ids))
        print(f"  token {principal.token:<22} {principal.access:<5} {scope}", flush=True)
    limit = f"{args.rate_limit}/min per workspace" if args.rate_limit else "off"
    print(f"  rate limit: {limit}; fixtures: {', '.join(map(str, fixtures))}", flush=True)
    print(f"  control API: {base_url}/__mock__/  inspector: {base_url}/__mock__/inspector",
          flush=True)
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
            # One storage secret for all workers: a URL one signs, another must verify.
            args.storage_secret = args.storage_secret or secrets.token_hex(32)
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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m mockserver",
        description="Mock server and conformance gate for the Workspace Messaging and "
        "Automation API v1.",
    )
    commands = parser.add_subparsers(dest="command", required=True)

    serve = commands.add_parser("serve", help="run the mock on the fixtures")
    serve.add_argument("--host", default=DEFAULT_HOST, help="bind address (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=8080)
    serve.add_argument("--fixtures", action="append", default=[], metavar="DIR",
                       help="fixture directory to load instead of the defaults (repeatable)")
    serve.add_argument("--overlay", action="append", default=[], metavar="DIR",
                       help="fixture directory overlaid on the others, record by record")
    serve.add_argument("--seed", type=int, default=0, help="seed of generated ids")
    serve.add_argument("--rate-limit", type=int, default=120, metavar="N",
                       help="requests per minute per workspace; 0 turns limits off")
    serve.add_argument("--self-check", action="store_true",
                       help="validate every response against the document (fail loudly)")
    serve.add_argument("--log-format", choices=("text", "json"), default="text",
                       help="one line per request: method, path, status, latency")
    serve.add_argument("--quiet", action="store_true", help="no per-request log lines")
    serve.add_argument("--control-token", default=None, metavar="TOKEN",
                       help="X-Mock-Control-Token required by /__mock__/ (needed off loopback)")
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
    serve.add_argument("--workers", type=int, default=1, metavar="N",
                       help="worker processes (more than 1 needs --state)")
    serve.set_defaults(func=_serve)

    fixtures = commands.add_parser("fixtures", help="work with fixture datasets")
    fixture_commands = fixtures.add_subparsers(dest="fixtures_command", required=True)
    generate = fixture_commands.add_parser("generate", help="write a deterministic dataset")
    generate.add_argument("--scale", type=int, required=True, metavar="N",
                          help="number of contacts")
    generate.add_argument("--seed", type=int, default=0)
    generate.add_argument("--out", required=True, metavar="DIR")
    generate.set_defaults(func=_generate)

    # Listed for --help only: main() hands these their own argument lines.
    commands.add_parser("conform", add_help=False,
                        help="fuzz a server against the document (conform --help)")
    commands.add_parser("proxy", add_help=False,
                        help="validate traffic to a real server (proxy --help)")
    return parser


GATE_DEPENDENCIES = ("schemathesis", "hypothesis", "pytest")  # the `conform` extra


def missing_gate_dependencies() -> list[str]:
    """The conformance gate's packages (the `conform` extra) that cannot be imported."""
    return [name for name in GATE_DEPENDENCIES if importlib.util.find_spec(name) is None]


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    # `conform` and `proxy` own their options; hand them the rest of the line untouched.
    if argv and argv[0] == "conform":
        missing = missing_gate_dependencies()
        if missing:
            print(f"python -m mockserver conform: the conformance gate needs {', '.join(missing)}, "
                  "which this installation lacks. Install the gate's extra:\n"
                  "    pip install 'workspace-api-mock[conform]'", file=sys.stderr)
            return 2
        from ..conform.cli import main as conform_main

        return conform_main(argv[1:])
    if argv and argv[0] == "proxy":
        from ..proxy import main as proxy_main

        return proxy_main(argv[1:])
    args = build_parser().parse_args(argv)
    return int(args.func(args))
