"""Differential reads: the same read requests to two servers (the recorded server and the mock
serving its recording), every difference in status, membership, order, paging or field value.

The requests are the recording's own walk: every list of the plan (each workspace's, and each
recorded parent's scoped lists) paged to the end in every documented order, and every detail
read. The recorded server's answers are scrubbed with the recording's key before comparing,
so a correct server and the mock of its own recording agree exactly.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx

from ..data.tables import TABLES
from ..openapi.spec import Operation, Spec
from .client import PacedClient
from .drift import Drift
from .plan import CHILDREN, DETAIL, ROOTS, detail_path
from .run import _duration, _print_waits
from .scrub import Scrubber, rule_for
from .walk import _PARAM

__all__ = ["Difference", "differential"]

ODD_PAGE = 7  # a second page size for each workspace list (the walk reads 100 a page)


@dataclass
class Difference:
    request: str
    what: str  # status | membership | order | paging | value
    detail: str
    # which side the document supports: source | reference | both (it does not decide) |
    # neither (both answers break it)
    supported_by: str = "both"


@dataclass
class _Run:
    spec: Spec
    source: Any  # httpx.Client or PacedClient: get(path, params=...)
    reference: httpx.Client
    transform: Callable[[str, Any], Any]
    unordered: Callable[[Operation, str], bool]
    differences: list[Difference] = field(default_factory=list)
    requests: int = 0
    drift: Drift | None = None

    def broken(self, op: Operation, statuses: list[int], bodies: list[Any],
               order: str | None) -> bool:
        """Whether these answers (all pages) break the document."""
        assert self.drift is not None
        before = sum(g["count"] for g in self.drift.groups.values())
        last = None
        for status, body in zip(statuses, bodies, strict=False):
            self.drift.check(op, status, body, last, order)
            data = body.get("data") if isinstance(body, dict) else None
            if isinstance(data, list) and data and isinstance(data[-1], dict):
                last = self.drift.order_key(op, data[-1])
        return sum(g["count"] for g in self.drift.groups.values()) > before


def _orders(op: Operation) -> list[str | None]:
    names = {p.name: p for p in op.parameters if p.location == "query"}
    if "order" not in names:
        return [None]
    return [None, *names["order"].schema.get("enum", [])]


def _requests(spec: Spec, tables: dict[str, dict[str, dict[str, Any]]],
              workspaces: list[str]) -> Iterator[tuple[Operation, str, dict[str, Any], str]]:
    ops = {op.operation_id: op for op in spec.operations}

    def query_for(op: Operation, ws: Any) -> dict[str, Any]:
        names = {p.name for p in op.parameters if p.location == "query"}
        return {"workspace_id": ws} if "workspace_id" in names else {}

    for ws in workspaces:
        for source in ROOTS:
            op = ops[source.op]
            path = _PARAM.sub(ws, op.path)
            base = {**query_for(op, ws), **dict(source.query)}
            for order in _orders(op):
                yield op, path, {**base, **({"order": order} if order else {})}, source.table
            rows = [r for r in tables.get(source.table, {}).values()
                    if r.get(TABLES[source.table].workspace_field or "workspace_id", ws) == ws]
            for name, value in _filter_values(op, source.table, rows):
                yield op, path, {**base, name: value}, source.table
            if op.paginated:  # another page size: pages cut elsewhere
                yield op, path, {**base, "limit": ODD_PAGE}, source.table
    for table, children in CHILDREN.items():
        for key, record in tables.get(table, {}).items():
            scope = record.get(TABLES[table].workspace_field or "workspace_id")
            for source in children:
                op = ops[source.op]
                params = {"id": record.get("workflow_id", key)
                          if table == "workflow_executions" else key, "execution_id": key}
                path = _format(op.path, params)
                for order in _orders(op):
                    query = {**query_for(op, scope), **({"order": order} if order else {})}
                    yield op, path, query, source.table
    for table, op_id in DETAIL.items():
        op = ops[op_id]
        for key, record in tables.get(table, {}).items():
            yield (op, _format(op.path, detail_path(table, key, record)),
                   query_for(op, record.get("workspace_id")), table)


def _filter_values(op: Operation, table: str, rows: list[dict[str, Any]]
                   ) -> Iterator[tuple[str, str]]:
    """Each documented filter of a list with each of its values: an enumeration's every
    value; otherwise up to two values the recorded records hold, when the field is not
    scrubbed (a pseudonym would select nothing on the server)."""
    params = {p.name: p for p in op.parameters if p.location == "query"}
    for facts in op.filters:
        enum = params[facts.param].schema.get("enum") if facts.param in params else None
        if enum:
            for value in enum:
                yield facts.param, str(value)
            continue
        path = tuple(facts.field.split("."))
        if rule_for(table, path) is not None:
            continue
        held = set()
        for row in rows:
            node: Any = row
            for part in path:
                node = node.get(part) if isinstance(node, dict) else None
            if isinstance(node, str):
                held.add(node)
        for value in sorted(held)[:2]:
            yield facts.param, value


def _format(path: str, params: dict[str, Any]) -> str:
    return _PARAM.sub(lambda m: str(params[m.group(1)]), path)


def _pages(client: Any, op: Operation, path: str, query: dict[str, Any]
           ) -> tuple[list[int], list[Any], list[bool], list[Any]]:
    bodies: list[Any] = []
    statuses: list[int] = []
    items: list[Any] = []
    more: list[bool] = []
    cursor = None
    while True:
        params = {**query, **({"limit": query.get("limit", 100)} if op.paginated else {}),
                  **({"cursor": cursor} if cursor else {})}
        response = client.get(path, params=params)
        statuses.append(response.status_code)
        body = response.json() if response.content else None
        bodies.append(body)
        if response.status_code != 200 or not isinstance(body, dict):
            return statuses, [body], more, bodies
        data = body.get("data")
        if not op.paginated:  # a data-only list is its records; a single answer, one
            return statuses, data if isinstance(data, list) else [data], more, bodies
        items.extend(data or [])
        more.append(bool(body.get("has_more")))
        cursor = body.get("next_cursor")
        if not body.get("has_more") or not cursor:
            return statuses, items, more, bodies


def _compare(run: _Run, op: Operation, path: str, query: dict[str, Any], table: str) -> None:
    name = f"GET {path}?{httpx.QueryParams(query)}"
    a_status, a_items, a_more, a_bodies = _pages(run.source, op, path, query)
    b_status, b_items, b_more, b_bodies = _pages(run.reference, op, path, query)
    run.requests += len(a_status) + len(b_status)
    count = len(run.differences)
    _differences(run, op, name, table, (a_status, a_items, a_more), (b_status, b_items, b_more))
    if len(run.differences) > count:
        a_broken = run.broken(op, a_status, a_bodies, query.get("order"))
        b_broken = run.broken(op, b_status, b_bodies, query.get("order"))
        side = {(True, False): "reference", (False, True): "source",
                (True, True): "neither"}.get((a_broken, b_broken), "both")
        for difference in run.differences[count:]:
            difference.supported_by = side


def _differences(run: _Run, op: Operation, name: str, table: str,
                 a: tuple[list[int], list[Any], list[bool]],
                 b: tuple[list[int], list[Any], list[bool]]) -> None:
    (a_status, a_items, a_more), (b_status, b_items, b_more) = a, b
    if a_status != b_status:
        run.differences.append(Difference(name, "status", f"{a_status} != {b_status}"))
        return
    if a_status[-1] != 200:
        return
    a_items = [run.transform(table, item) for item in a_items]
    if a_more != b_more:
        run.differences.append(Difference(name, "paging", f"has_more {a_more} != {b_more}"))
    if a_items == b_items:
        return
    ids_a = [_key(i) for i in a_items]
    ids_b = [_key(i) for i in b_items]
    if sorted(map(str, ids_a)) != sorted(map(str, ids_b)):
        run.differences.append(Difference(name, "membership", _membership(ids_a, ids_b)))
    elif ids_a != ids_b and not run.unordered(op, table):
        run.differences.append(Difference(name, "order", "the same records in another order"))
    else:
        by_key = {str(_key(item)): item for item in b_items}
        for mine in a_items:
            theirs = by_key.get(str(_key(mine)))
            if mine != theirs:
                fields = sorted(k for k in {*mine, *theirs} if mine.get(k) != theirs.get(k)) \
                    if isinstance(mine, dict) and isinstance(theirs, dict) else ["(value)"]
                run.differences.append(Difference(name, "value", f"{_key(mine)}: {fields}"))
                break


def _key(item: Any) -> Any:
    if isinstance(item, dict):
        for name in ("id", "workflow_id", "execution_id", "content_sid", "role_id",
                     "model_string"):
            if name in item:
                return item[name]
    return item


def _membership(a: list[Any], b: list[Any]) -> str:
    only_a = sorted(set(map(str, a)) - set(map(str, b)))
    only_b = sorted(set(map(str, b)) - set(map(str, a)))
    return f"only in source: {only_a[:5]} ({len(only_a)}); only in reference: " \
           f"{only_b[:5]} ({len(only_b)})"


def differential(spec: Spec, source: Any, reference: httpx.Client,
                 tables: dict[str, dict[str, dict[str, Any]]], workspaces: list[str],
                 scrubber: Scrubber | None = None,
                 progress: Callable[[int, int, int], None] | None = None
                 ) -> tuple[int, list[Difference]]:
    """(requests sent, differences) of every read of the plan sent to both servers. With a
    scrubber (the recording's key), the source's answers are scrubbed before comparing, and
    a list sorted by a scrubbed field (users by e-mail) is compared without its order: the
    pseudonyms sort otherwise."""
    def transform(table: str, item: Any) -> Any:
        return scrubber.record(table, item) if scrubber and isinstance(item, dict) else item

    def unordered(op: Operation, table: str) -> bool:
        fields = op.order.fields() if op.order is not None else None
        return scrubber is not None and any(
            (rule := rule_for(table, (f,))) is not None and not scrubber.kept(table, rule)
            for f in fields or ())

    run = _Run(spec, source, reference, transform, unordered,
               drift=Drift(spec, scrubber or Scrubber(key=b"differential")))
    reads = list(_requests(spec, tables, workspaces))
    for done, (op, path, query, table) in enumerate(reads, 1):
        _compare(run, op, path, query, table)
        if progress is not None:  # (reads compared, of, differences so far)
            progress(done, len(reads), len(run.differences))
    return run.requests, run.differences


def _progress(paced: PacedClient, clock: Callable[[], float]
              ) -> Callable[[int, int, int], None]:
    """The differential step's own progress line (its phase, reads compared of the plan's,
    requests, an estimate from the time they have taken, waits included) and each wait
    longer than a second with its reason (decision U18)."""
    started = clock()
    last = [-1.0]

    def show(done: int, total: int, found: int) -> None:
        now = clock()
        if now - last[0] < 0.5 and done < total:
            return
        last[0] = now
        per_read = (now - started) / max(done, 1)
        sys.stderr.write(f"\rdifferential: {done}/{total} reads compared, {paced.requests} "
                         f"requests to the source ({paced.retried_429} after 429), {found} "
                         f"difference(s), ~{_duration(per_read * (total - done))} left   ")
        sys.stderr.flush()

    _print_waits(paced, "differential", last)
    return show


def run_differential(spec: Spec, source: httpx.Client, options: Any,
                     summary: dict[str, Any], *, per_minute: int = 120,
                     sleep: Callable[[float], None] = time.sleep,
                     clock: Callable[[], float] = time.monotonic) -> int:
    """Serve the recording in `options.out` in-process and compare it with `source`; writes
    reports/differential.{json,md}; the number of differences. The source is read as the
    recording read it: at most `per_minute` requests a minute, a 429 waited out after its
    `Retry-After` (not a difference: the mock of the recording has no limit)."""
    import json
    import warnings

    with warnings.catch_warnings():  # starlette's notice on its httpx client, not the user's
        warnings.filterwarnings("ignore", message="Using `httpx` with `starlette.testclient`")
        from starlette.testclient import TestClient

    from ..data.fixtures import load_dataset
    from ..engine.config import Config
    from ..engine.progression import KINDS
    from ..standalone.server import create_app

    out = options.out
    app = create_app(Config(fixtures=[out], rate_limit=0, request_log=False))
    token = summary["tokens"][0]["token"]
    scrubber = (Scrubber(key=options.scrub_key.encode(), keep=frozenset(options.keep))
                if options.scrub and options.scrub_key else None)
    if options.scrub and scrubber is None:
        raise ValueError("--differential of a scrubbed recording needs its --scrub-key")
    tables = load_dataset([out], spec=spec).tables
    paced = PacedClient(source, per_minute=per_minute, sleep=sleep, clock=clock)
    show = _progress(paced, clock) if getattr(options, "progress", False) else None
    with TestClient(app, base_url="http://recording",
                    headers={"Authorization": f"Bearer {token}"}) as reference:
        # The recording is one instant of the workspace: its runs, executions, messages and
        # files are compared as recorded, not progressed (DECISIONS P1).
        manual = {kind: {"mode": "manual"} for kind in KINDS}
        reference.put("/__mock__/progression", json={"kinds": manual}).raise_for_status()
        sent, differences = differential(spec, paced, reference, tables,
                                         summary["workspaces"], scrubber, show)
    if show is not None:
        sys.stderr.write("\n")
    found = [d.__dict__ for d in differences]
    (out / "reports" / "differential.json").write_text(
        json.dumps({"requests": sent, "retried_after_429": paced.retried_429,
                    "differences": found}, indent=2))
    lines = ["# Differential reads: the server and the mock of its recording", "",
             f"{sent} requests, {len(found)} difference(s) ({paced.retried_429} answer(s) 429 "
             "from the server waited out and sent again).", "",
             "| request | what | detail | the document supports |", "|---|---|---|---|"]
    lines += [f"| `{d['request']}` | {d['what']} | {d['detail']} | {d['supported_by']} |"
              for d in found]
    (out / "reports" / "differential.md").write_text("\n".join(lines) + "\n")
    return len(found)
