"""Command line of `python -m mockserver record`."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

__all__ = ["add_parser", "main"]

TOKEN_ENV = "MOCK_API_RECORD_TOKEN"


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The `record` subcommand and its options."""
    rec = commands.add_parser(
        "record", help="record a real workspace into a dataset (scrubbed) and a drift report",
        description="Read every documented read operation of the chosen workspaces and write a "
        "dataset that `serve --fixtures DIR` loads, personal data replaced by keyed pseudonyms, "
        "plus DIR/reports/ (drift, scrub report, summary). The token is never written.")
    rec.add_argument("--base-url", required=True, metavar="URL",
                     help="the server to record, e.g. https://api.example.com (paths start /v1)")
    rec.add_argument("--token", default=os.environ.get(TOKEN_ENV), metavar="T",
                     help=f"bearer token to read with (env {TOKEN_ENV}); never written")
    rec.add_argument("--workspace", action="append", default=[], metavar="ID",
                     help="workspace to record (repeatable; default: every one the token reads)")
    rec.add_argument("--out", required=True, metavar="DIR", help="new directory for the dataset")
    rec.add_argument("--scrub-key", default=None, metavar="KEY",
                     help="key of the pseudonyms: the same key gives the same pseudonyms across "
                          "recordings (default: a random key, forgotten when the run ends)")
    rec.add_argument("--keep", action="append", default=[], metavar="FIELD",
                     help="keep this field unscrubbed (e.g. last_message_preview, messages.body)")
    rec.add_argument("--no-scrub", action="store_true",
                     help="keep every field as the server sent it (personal data included)")
    rec.add_argument("--resume", action="store_true",
                     help="continue an interrupted recording into --out")
    rec.add_argument("--max-records", type=int, default=None, metavar="N",
                     help="stop reading after N records (references are kept resolvable)")
    rec.add_argument("--since", default=None, metavar="DATE",
                     help="keep records updated at or after DATE (ISO 8601) and what they name")
    rec.add_argument("--compare", default=None, metavar="OLD_DIR",
                     help="also report per table the records added, removed and changed since "
                          "a previous recording (reports/compare.md)")
    rec.add_argument("--differential", action="store_true",
                     help="then serve the recording in-process and send the same reads to both; "
                          "every difference goes to reports/differential.md")
    rec.add_argument("--rate", type=int, default=120, metavar="N",
                     help="requests per minute at most (default 120, the documented limit)")
    rec.add_argument("--quiet", action="store_true", help="no progress line")
    rec.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    import httpx

    from ..openapi.spec import load_spec
    from .client import MAX_RETRY_AFTER, RecordError
    from .run import Options, record

    if not args.token:
        print(f"error: --token (or {TOKEN_ENV}) is required", file=sys.stderr)
        return 2
    if args.differential and not args.no_scrub and not args.scrub_key:
        print("error: --differential compares through the pseudonyms: give --scrub-key "
              "(or --no-scrub)", file=sys.stderr)
        return 2
    options = Options(out=Path(args.out), workspaces=args.workspace, scrub_key=args.scrub_key,
                      keep=args.keep, scrub=not args.no_scrub, resume=args.resume,
                      max_records=args.max_records, since=args.since, progress=not args.quiet,
                      compare=Path(args.compare) if args.compare else None)
    headers = {"Authorization": f"Bearer {args.token}"}
    with httpx.Client(base_url=args.base_url.rstrip("/"), headers=headers, timeout=60) as http:
        try:
            summary = record(load_spec(), http, options, per_minute=args.rate)
            if args.differential:
                from .differential import run_differential

                differences = run_differential(load_spec(), http, options, summary,
                                               per_minute=args.rate)
                print(f"differential: {differences} difference(s), see "
                      f"{args.out}/reports/differential.md")
        except KeyboardInterrupt:
            print(f"\ninterrupted: continue with the same command and --resume "
                  f"(state in {args.out}/.record/)", file=sys.stderr)
            return 130
        except RecordError as exc:
            print(f"\nerror: {exc}", file=sys.stderr)
            return 1
    print(f"recorded {sum(summary['records'].values())} records of "
          f"{', '.join(summary['workspaces'])} into {args.out} "
          f"({summary['requests']} requests, {summary['seconds']} s)")
    if summary.get("retry_after_capped"):
        print(f"  {summary['retry_after_capped']} Retry-After value(s) longer than "
              f"{MAX_RETRY_AFTER:.0f} s were waited {MAX_RETRY_AFTER:.0f} s")
    for token in summary["tokens"]:
        print(f"  token {token['token']}  {token['access']}")
    print(f"  serve it: python -m mockserver serve --fixtures {args.out}")
    print(f"  reports:  {args.out}/reports/drift.md, scrub.json, summary.json")
    return 0
