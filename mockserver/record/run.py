"""A recording from start to end: plan, walk (resumable), bound, write, check, report."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from ..data.fixtures import FixtureError, load_dataset, record_check
from ..data.tables import TABLES
from ..openapi.spec import Spec
from .client import PacedClient, RecordError
from .drift import Drift
from .scrub import Scrubber
from .walk import Walk

__all__ = ["Options", "record"]

STATE_DIR = ".record"  # inside the output directory while a recording is unfinished
REPORTS_DIR = "reports"  # no table file: the loader reads only files, not directories
SAVE_EVERY = 200  # steps between two saves of the resume state, at least
# ... and at least this many times the last save's duration: a save writes the whole state, so
# on a fast server and a large workspace saving every 200 steps made the run quadratic.
SAVE_SPACING = 20


@dataclass
class Options:
    out: Path
    workspaces: list[str] = field(default_factory=list)
    scrub_key: str | None = None
    keep: list[str] = field(default_factory=list)
    scrub: bool = True
    resume: bool = False
    max_records: int | None = None
    since: str | None = None
    progress: bool = True
    compare: Path | None = None  # a previous recording: reports/compare.{json,md}


def _state_path(out: Path) -> Path:
    return out / STATE_DIR / "state.json"


def _scrubber(options: Options, saved: dict[str, Any] | None) -> tuple[Scrubber, str | None]:
    """The scrubber; the generated key (kept only in the resume state) when none was given."""
    generated = None
    if options.scrub_key:
        key = options.scrub_key.encode()
    elif saved and saved.get("generated_key"):
        generated = saved["generated_key"]
        key = bytes.fromhex(generated)
    else:
        generated = secrets.token_hex(32)
        key = bytes.fromhex(generated)
    keep = frozenset(options.keep)
    if not options.scrub:
        from .scrub import RULES

        keep = frozenset(RULES)
    return Scrubber(key=key, keep=keep), generated


def _save(out: Path, walk: Walk, extra: dict[str, Any]) -> None:
    path = _state_path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    previous = set(extra.get("original_digests", []))
    previous.update(walk.scrubber.original_digest(v) for v in walk.scrubber.originals)
    state = {**walk.state(), **extra, "original_digests": sorted(previous),
             "drift": [[list(k), v] for k, v in walk.drift.groups.items()],
             "answers": walk.drift.answers}
    tmp = path.with_suffix(".tmp")
    tmp.write_bytes(orjson.dumps(state))
    os.replace(tmp, path)


def _progress(started: float, client: PacedClient,
              clock: Callable[[], float] = time.monotonic) -> Callable[[Walk], None]:
    """The walk's progress line: its phase, counts, an estimate from the time each request
    has really taken so far (waits included: pacing and 429s, not only the answers), and a
    wait longer than a second on a line of its own, with its reason (decision U18)."""
    last = [-1.0]

    def show(walk: Walk) -> None:
        now = clock()
        if now - last[0] < 0.5 and walk.queue:
            return
        last[0] = now
        spent = client.elapsed + client.waited
        per_request = max(spent / max(client.requests, 1),
                          60.0 / client.per_minute if client.per_minute else 0.0)
        left = len(walk.queue) * per_request
        sys.stderr.write(f"\rrecording: {walk.records} records, {client.requests} requests "
                         f"({client.retried_429} after 429), {len(walk.queue)} reads queued, "
                         f"~{_duration(left)} left, {_duration(now - started)} elapsed   ")
        sys.stderr.flush()

    _print_waits(client, "recording", last)
    return show


def _print_waits(client: PacedClient, phase: str, last: list[float]) -> None:
    """Each wait of a second or more on its own line, with its reason; the progress line
    (`last`: when it was last written) is written again after it."""
    def waiting(seconds: float, reason: str) -> None:
        if seconds >= 1.0:
            sys.stderr.write(f"\n{phase}: waiting {_duration(seconds)}: {reason}\n")
            sys.stderr.flush()
            last[0] = -1.0

    client.on_wait = waiting


def _duration(seconds: float) -> str:
    seconds = int(seconds)
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m" if seconds >= 3600 else \
        f"{seconds // 60}m{seconds % 60:02d}s"


def _workspaces(client: PacedClient, walk: Walk, wanted: list[str]) -> list[str]:
    op = next(op for op in walk.spec.operations if op.operation_id == "listWorkspaces")
    response = client.get(op.path, {})
    body = response.json() if response.status_code == 200 else None
    walk.drift.check(op, response.status_code, body)
    if body is None:
        raise RecordError(f"GET {op.path}: {response.status_code}: {response.text[:200]}")
    listed = {w["id"]: w for w in body.get("data", []) if isinstance(w, dict) and "id" in w}
    missing = [w for w in wanted if w not in listed]
    if missing:
        raise RecordError(f"the token has no access to workspace(s) {', '.join(missing)} "
                          f"(it can read: {', '.join(sorted(listed))})")
    chosen = wanted or sorted(listed)
    rows = walk.tables.setdefault("workspaces", {})
    for ws in chosen:
        rows[ws] = walk._project("workspaces", walk.scrubber.record("workspaces", listed[ws]))
    return chosen


def record(spec: Spec, http: Any, options: Options, *, per_minute: int = 120,
           sleep: Callable[[float], None] = time.sleep,
           clock: Callable[[], float] = time.monotonic) -> dict[str, Any]:
    """Record into `options.out`; returns the summary (also written to reports/summary.json).
    KeyboardInterrupt leaves the resume state and propagates. `sleep` and `clock` pace the
    requests (tests pass a clock that their sleep moves)."""
    out = options.out
    saved = None
    if options.resume:
        if not _state_path(out).exists():
            raise RecordError(f"{out}: nothing to resume (no {STATE_DIR}/state.json)")
        saved = orjson.loads(_state_path(out).read_bytes())
        options.workspaces = saved["workspaces"]
    elif out.exists() and any(out.iterdir()):
        raise RecordError(f"{out}: not empty (choose a new directory, or --resume)")
    out.mkdir(parents=True, exist_ok=True)
    scrubber, generated = _scrubber(options, saved)
    drift = Drift(spec, scrubber)
    walk = Walk(spec, scrubber, drift, max_records=options.max_records)
    client = PacedClient(http, per_minute=per_minute, sleep=sleep, clock=clock)
    extra: dict[str, Any] = {"generated_key": generated}
    if saved is not None:
        walk.restore(saved)
        for name, rows in walk.tables.items():
            for row in rows.values():
                scrubber.note_kept(name, row)
        drift.groups = {tuple(k): v for k, v in saved["drift"]}
        drift.answers = saved["answers"]
        extra["original_digests"] = saved.get("original_digests", [])
        chosen = saved["workspaces"]
    else:
        chosen = _workspaces(client, walk, options.workspaces)
        walk.plan(chosen)
    extra["workspaces"] = chosen
    started = time.monotonic()
    show = _progress(clock(), client, clock) if options.progress else (lambda w: None)
    saver = _periodic_save(out, walk, extra, show)
    try:
        walk.run(client, saver)
    except BaseException:
        _save(out, walk, extra)
        raise
    if options.progress:
        sys.stderr.write("\n")
    return _finish(spec, out, walk, client, options, extra, time.monotonic() - started)


def _periodic_save(out: Path, walk: Walk, extra: dict[str, Any],
                   show: Callable[[Walk], None],
                   clock: Callable[[], float] = time.monotonic) -> Callable[[Walk], None]:
    """After each page: the progress line, and the resume state saved once SAVE_EVERY steps
    have completed since the last save and SAVE_SPACING times that save's duration has passed
    (at most 1/SAVE_SPACING of the run spent saving, whatever the workspace's size)."""
    last = {"steps": 0, "at": clock(), "took": 0.0}

    def step(w: Walk) -> None:
        show(w)
        now = clock()
        if (w.steps_done - last["steps"] >= SAVE_EVERY
                and now - last["at"] >= SAVE_SPACING * last["took"]):
            _save(out, walk, extra)
            done = clock()
            last.update(steps=w.steps_done, at=done, took=done - now)

    return step


def _finish(spec: Spec, out: Path, walk: Walk, client: PacedClient, options: Options,
            extra: dict[str, Any], seconds: float) -> dict[str, Any]:
    from .bound import bound

    invalid = _drop_invalid(spec, walk.tables)
    dropped = bound(walk.tables, options.since)
    tokens = _tokens(walk.tables, extra["workspaces"])
    written = []
    for name, rows in sorted(walk.tables.items()):
        if rows:
            path = out / f"{name}.json"
            path.write_bytes(orjson.dumps(list(rows.values()), option=orjson.OPT_SORT_KEYS))
            written.append(path)
    (out / "tokens.json").write_bytes(orjson.dumps(tokens, option=orjson.OPT_INDENT_2))
    written.append(out / "tokens.json")
    reports = out / REPORTS_DIR
    reports.mkdir(exist_ok=True)
    walk.drift.write(reports)
    scrub = walk.scrubber.report()
    (reports / "scrub.json").write_text(json.dumps(scrub, indent=2, sort_keys=True))
    summary = {"workspaces": extra["workspaces"], "seconds": round(seconds, 1),
               "requests": client.requests, "retried_after_429": client.retried_429,
               "retried_transient": client.retried_transient,
               "retry_after_capped": client.capped_retry_after,
               "records": {n: len(r) for n, r in sorted(walk.tables.items()) if r},
               "dropped_by_bounds": dropped, "dropped_not_loadable": invalid, "complete": not walk.queue,
               "tokens": [{"token": t["token"], "access": t["access"]} for t in tokens]}
    (reports / "summary.json").write_text(json.dumps(summary, indent=2, sort_keys=True))
    if options.compare is not None:
        from .compare import compare, write_compare

        write_compare(compare(options.compare, out), reports, options.compare)
    try:
        load_dataset([out], spec=spec)
    except FixtureError as exc:
        raise RecordError(f"the recording does not load: {exc}") from None
    files = [*written, *sorted(reports.iterdir())]
    previous = frozenset(extra.get("original_digests", []))
    leftover = walk.scrubber.leftovers(
        ((str(p), p.stem if p.parent == out and p.stem in TABLES else None, p.read_text())
         for p in files if p.suffix == ".json"), previous)
    if leftover:
        raise RecordError("an original personal value remains in " + ", ".join(leftover)
                          + " (nothing else was removed; delete the directory)")
    shutil.rmtree(out / STATE_DIR, ignore_errors=True)
    return summary


def _drop_invalid(spec: Spec, tables: dict[str, dict[str, dict[str, Any]]]) -> dict[str, int]:
    """Drop the records the loader would refuse (a value outside the document: the drift
    report names it); their dependents go with the dangling references (bound.py)."""
    check = record_check(spec)
    dropped = {}
    for name, rows in tables.items():
        bad = [k for k, r in rows.items() if check.schema_problem(name, r) is not None]
        for key in bad:
            del rows[key]
        if bad:
            dropped[name] = len(bad)
    return dropped


def _tokens(tables: dict[str, dict[str, dict[str, Any]]], workspaces: list[str]) -> list[Any]:
    """Generated tokens for the recorded workspaces (never the token used to record)."""
    users = tables.get("users", {})
    everywhere = [u for u in users.values() if set(workspaces) <= set(u.get("_workspace_ids", []))]
    candidates = everywhere or list(users.values())
    if not candidates:
        raise RecordError("no workspace user was recorded: a token needs one")
    user = candidates[0]
    scope = sorted(set(workspaces) & set(user.get("_workspace_ids", [])) or workspaces)
    return [{"token": f"rec-{access}-{secrets.token_hex(8)}", "user_id": user["id"],
             "access": access, "workspace_ids": scope} for access in ("write", "read")]


def known_tables() -> list[str]:
    return sorted(TABLES)
