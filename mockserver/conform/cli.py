"""`python -m mockserver conform`: the conformance gate's command line.

Exit status: 0 PASS (every planned check ran, none failed), 1 FAIL (errors; warnings too with
--strict), 2 usage or configuration errors (bad URL, unreachable target, missing or refused
token, bad --report), 3 INCOMPLETE (stopped by --max-requests, --max-time or SIGINT/SIGTERM, or
a planned check did not run; the reports are written all the same).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from urllib.parse import urlparse

from .catalogue import check_options
from .client import DEFAULT_RATE
from .gate import ALL_PHASES, GateConfig
from .report import format_summary, write_json, write_junit

__all__ = ["build_parser", "main", "parse_config"]

EPILOG = """\
--include/--exclude take a glob matched against the operationId and the path template
(e.g. 'list*', '/v1/tickets*'); prefix a pattern with 're:' for a regular expression
(searched, e.g. 're:^get(Ticket|Contact)$'). Both are repeatable.

Tokens may also come from the environment: CONFORM_TOKEN, CONFORM_READ_TOKEN,
CONFORM_FOREIGN_TOKEN (and CONFORM_BASE_URL, CONFORM_WORKSPACE).

Exit status: 0 PASS, 1 FAIL, 2 usage or configuration error, 3 INCOMPLETE (stopped early
or a planned check did not run; reports are written all the same).

Against a local mock pass --rate 0: the default pace (1.8 requests/s, under the documented
120/minute) is for real services, and a full read-only run at that pace takes most of an hour.
"""


class UsageError(Exception):
    pass


def build_parser(prog: str = "python -m mockserver conform") -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Fuzz an implementation of the Workspace Messaging and Automation API v1 "
        "against the document (schemathesis phases + the gate's own checks).",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--base-url", default=os.environ.get("CONFORM_BASE_URL"),
                        help="the target's base URL, without /v1 (e.g. http://127.0.0.1:8080)")
    parser.add_argument("--token", default=os.environ.get("CONFORM_TOKEN"),
                        help="a read/write token of --workspace (required)")
    parser.add_argument("--read-token", default=os.environ.get("CONFORM_READ_TOKEN"),
                        help="a read-only token of the same workspace: every write must be 403")
    parser.add_argument("--foreign-token", default=os.environ.get("CONFORM_FOREIGN_TOKEN"),
                        help="a token of ANOTHER workspace: must never see --workspace's data")
    parser.add_argument("--workspace", default=os.environ.get("CONFORM_WORKSPACE"),
                        help="workspace under test (default: the first the token lists)")
    parser.add_argument("--allow-writes", action="store_true",
                        help="also send writes (fuzz non-GET operations, run the state rules); "
                        "never against production data")
    parser.add_argument("--max-examples", type=int, default=20, metavar="N",
                        help="hypothesis examples per operation in the fuzzing phases (default 20)")
    parser.add_argument("--seed", type=int, default=None, metavar="N",
                        help="the same seed sends the same requests (default: a random seed, "
                        "printed in the plan and the report)")
    parser.add_argument("--hypothesis-database", default=None, metavar="DIR",
                        help="keep hypothesis' example database in DIR (default: none, so a "
                        "run depends on its seed alone)")
    parser.add_argument("--include", action="append", default=[], metavar="PATTERN",
                        help="check only operations whose operationId or path template matches "
                        "this glob (repeatable; default: every operation)")
    parser.add_argument("--exclude", action="append", default=[], metavar="PATTERN",
                        help="leave out operations whose operationId or path template matches "
                        "this glob (repeatable; default: none)")
    parser.add_argument("--rate-limit-probe", action="store_true",
                        help="burst a cheap read until 429 and check Retry-After and the body")
    parser.add_argument("--max-requests", type=int, default=None, metavar="N",
                        help="stop (and report) after N requests in total")
    parser.add_argument("--max-time", type=float, default=None, metavar="SECONDS",
                        help="stop (and report, INCOMPLETE) after SECONDS")
    parser.add_argument("--request-timeout", type=float, default=30.0, metavar="SECONDS",
                        help="seconds to wait for each response (default 30); a time-out "
                        "fails the run like a 5xx")
    parser.add_argument("--rate", type=float, default=DEFAULT_RATE, metavar="N",
                        help=f"requests per second (default {DEFAULT_RATE}, under 120/minute); "
                        "0 for unpaced (local mocks only)")
    parser.add_argument("--phases", default=",".join(ALL_PHASES),
                        help="schemathesis phases to run, comma-separated, or 'none' "
                        f"(default {','.join(ALL_PHASES)})")
    parser.add_argument("--checks", default=",".join(check_options()),
                        help="the gate's own check families to run, comma-separated, or 'none' "
                        f"(default {','.join(check_options())}; state needs --allow-writes, "
                        "ratelimit needs --rate-limit-probe)")
    parser.add_argument("--report", action="append", default=[], metavar="KIND:PATH",
                        help="junit:PATH or json:PATH (repeatable)")
    parser.add_argument("--export", default=None, metavar="DIR",
                        help="write each failure as a standalone pytest file (httpx only) "
                        "replaying its requests, with a README on running them")
    parser.add_argument("--min-status-coverage", type=float, default=None, metavar="PCT",
                        help="fail the run when fewer than PCT%% of the documented statuses of "
                        "the operations in scope were observed (the summary lists, per "
                        "operation, the statuses never seen)")
    parser.add_argument("--strict", action="store_true",
                        help="warnings (reference/inferred provenance) fail the run too")
    parser.add_argument("--quiet", action="store_true", help="no progress lines")
    return parser


def _reports(specs: list[str]) -> list[tuple[str, Path]]:
    reports = []
    for spec in specs:
        kind, sep, path = spec.partition(":")
        if not sep or kind not in ("junit", "json") or not path:
            raise UsageError(f"--report {spec!r}: expected junit:PATH or json:PATH")
        reports.append((kind, Path(path)))
    return reports


def parse_config(argv: list[str], prog: str | None = None,
                 ) -> tuple[GateConfig, list[tuple[str, Path]]]:
    """Arguments to a GateConfig and the reports to write; UsageError when they are wrong."""
    parser = build_parser(prog) if prog else build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse has printed its message (or the help: code 0)
        if exc.code == 0:
            raise
        raise UsageError("") from exc
    if not args.base_url:
        raise UsageError("--base-url is required (or CONFORM_BASE_URL)")
    url = urlparse(args.base_url)
    if url.scheme not in ("http", "https") or not url.netloc:
        raise UsageError(f"--base-url {args.base_url!r}: expected http(s)://host[:port]")
    if not args.token:
        raise UsageError("--token is required (or CONFORM_TOKEN)")
    if args.max_examples < 1:
        raise UsageError("--max-examples must be at least 1")
    if args.max_requests is not None and args.max_requests < 1:
        raise UsageError("--max-requests must be at least 1")
    if args.min_status_coverage is not None and not 0 <= args.min_status_coverage <= 100:
        raise UsageError("--min-status-coverage must be between 0 and 100")
    if args.request_timeout <= 0:
        raise UsageError("--request-timeout must be positive")
    if args.max_time is not None and args.max_time <= 0:
        raise UsageError("--max-time must be positive")
    if args.rate < 0:
        raise UsageError("--rate must not be negative")
    phases: tuple[str, ...] = ()
    if args.phases.strip() != "none":
        phases = tuple(p.strip() for p in args.phases.split(",") if p.strip())
        unknown = sorted(set(phases) - set(ALL_PHASES))
        if unknown:
            raise UsageError(f"--phases: unknown {unknown}; known: {', '.join(ALL_PHASES)}")
    checks: tuple[str, ...] = ()
    if args.checks.strip() != "none":
        checks = tuple(c.strip() for c in args.checks.split(",") if c.strip())
        unknown = sorted(set(checks) - set(check_options()))
        if unknown:
            raise UsageError(f"--checks: unknown {unknown}; known: {', '.join(check_options())}")
    reports = _reports(args.report)
    base_url = args.base_url.rstrip("/")
    if base_url.endswith("/v1"):
        base_url = base_url[: -len("/v1")]
    config = GateConfig(
        base_url=base_url, token=args.token, read_token=args.read_token,
        foreign_token=args.foreign_token, workspace=args.workspace,
        allow_writes=args.allow_writes, max_examples=args.max_examples, seed=args.seed,
        include=args.include, exclude=args.exclude, rate_limit_probe=args.rate_limit_probe,
        max_requests=args.max_requests, rate=args.rate, strict=args.strict, phases=phases,
        checks=checks, quiet=args.quiet, min_status_coverage=args.min_status_coverage,
        max_time=args.max_time, hypothesis_database=args.hypothesis_database,
        export=args.export, request_timeout=args.request_timeout,
    )
    return config, reports


def main(argv: list[str], prog: str | None = None) -> int:
    """`conform`'s command line; `prog` is how the user called it (for usage lines)."""
    from .runner import ConfigurationError, run

    try:
        config, reports = parse_config(list(argv), prog)
    except SystemExit:  # --help, printed
        return 0
    except UsageError as exc:
        if str(exc):
            print(f"conform: error: {exc}", file=sys.stderr)
        return 2
    try:
        result = run(config)
    except ConfigurationError as exc:
        print(f"conform: error: {exc}", file=sys.stderr)
        return 2
    print(format_summary(result), file=sys.stdout, flush=True)
    if config.export:
        print(f"exported {len(result.exported)} failure(s) to {config.export} (README.md there "
              "says how to run them)", file=sys.stderr)
    for kind, path in reports:
        (write_junit if kind == "junit" else write_json)(result, path)
        print(f"wrote {kind} report to {path}", file=sys.stderr)
    return result.exit_code
