"""The walk: every read of the plan (plan.py) for the chosen workspaces, page by page, each
record scrubbed as it arrives and merged into its table; a resumable state after each page.

Work is a queue of steps (a list read with its cursor, or a detail read). A step changes the
state only once its page is fully processed (records merged, further steps queued, cursor
moved), and the state written on an interrupt is the one after the last such page: a resumed
run repeats at most the page in flight, and records are keyed, so nothing is duplicated or
missed.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from ..data.tables import TABLES
from ..openapi.spec import Operation, Spec
from .client import PacedClient, RecordError
from .drift import Drift
from .plan import CHILDREN, DETAIL, ROOTS, Source, detail_path
from .scrub import Scrubber

__all__ = ["Walk"]

PAGE_SIZE = 100  # the documented maximum of `limit`
_PARAM = re.compile(r"{(\w+)}")


def _segment(value: Any) -> str:
    """A path parameter as one path segment: every reserved character escaped (`/`, `?`,
    `#`, `%`), and `.` and `..` refused, which would address another path of the host with
    the token attached (DECISIONS H31)."""
    text = str(value)
    if text in ("", ".", ".."):
        raise RecordError(f"record id {text!r} is not a path segment: not followed")
    return quote(text, safe="")


@dataclass
class Walk:
    """One recording's progress: tables (scrubbed), the queue of steps, counters."""

    spec: Spec
    scrubber: Scrubber
    drift: Drift
    tables: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    queue: deque[dict[str, Any]] = field(default_factory=deque)
    steps_done: int = 0
    max_records: int | None = None
    _ops: dict[str, Operation] = field(default_factory=dict)
    # The cursors each list step was answered so far (by the step's id, while it is queued):
    # a server whose next_cursor never advances, or cycles, is stopped with an error.
    _cursors: dict[int, set[str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._ops = {op.operation_id: op for op in self.spec.operations}

    @property
    def records(self) -> int:
        return sum(len(rows) for rows in self.tables.values())

    def plan(self, workspaces: list[str]) -> None:
        """Queue the roots: the model list, then each workspace's reads."""
        self.queue.append({"op": "listModels", "table": "models", "ws": None})
        for ws in workspaces:
            for source in ROOTS:
                self.queue.append(self._step(source, ws, {"id": ws}))

    def _step(self, source: Source, ws: str | None, path: dict[str, str]) -> dict[str, Any]:
        return {"op": source.op, "table": source.table, "ws": ws, "path": path,
                "query": dict(source.query), "internal_ws": source.internal_ws,
                "single": source.single}

    def full(self) -> bool:
        return self.max_records is not None and self.records >= self.max_records

    def run(self, client: PacedClient, progress: Callable[[Walk], None] = lambda w: None) -> None:
        """Work through the queue (an interrupt leaves the state at the last whole page)."""
        while self.queue and not self.full():
            step = self.queue[0]
            more = self._page(client, step)
            if not more:
                self.queue.popleft()
                self._cursors.pop(id(step), None)
                self.steps_done += 1
            progress(self)

    def _request(self, step: dict[str, Any]) -> tuple[Operation, str, dict[str, Any]]:
        op = self._ops[step["op"]]
        path = _PARAM.sub(lambda m: _segment(step.get("path", {})[m.group(1)]), op.path)
        names = {p.name for p in op.parameters if p.location == "query"}
        query = dict(step.get("query") or {})
        if "workspace_id" in names and step.get("ws"):
            query["workspace_id"] = step["ws"]
        if "limit" in names:
            query["limit"] = PAGE_SIZE
        if step.get("cursor"):
            query["cursor"] = step["cursor"]
        return op, path, query

    def _page(self, client: PacedClient, step: dict[str, Any]) -> bool:
        """Read one page of `step`; True when the step has more pages."""
        op, path, query = self._request(step)
        response = client.get(path, query)
        try:
            body = response.json()
        except ValueError:
            body = None
        self.drift.check(op, response.status_code, body, step.get("last"))
        if response.status_code != op.success_status or not isinstance(body, dict):
            if response.status_code == 404 and step.get("detail"):
                return False  # deleted since its list was read
            if response.status_code >= 400 and response.status_code != 404:
                raise RecordError(f"GET {path}: {response.status_code}: {response.text[:200]}")
            return False
        data = body.get("data")
        items = [data] if step.get("detail") or step.get("single") else (data or [])
        for item in items:
            if isinstance(item, dict):
                self._merge(step, op, item)
        if op.paginated and body.get("has_more") and body.get("next_cursor"):
            cursor = body["next_cursor"]
            if not isinstance(cursor, str):
                raise RecordError(f"GET {path}: next_cursor is not a string: "
                                  f"{str(cursor)[:80]!r}")
            seen = self._cursors.setdefault(id(step), set())
            if cursor == step.get("cursor") or cursor in seen:
                raise RecordError(f"GET {path}: next_cursor {str(cursor)[:80]!r} does not "
                                  "advance (the server answered it for an earlier page); "
                                  "stopped rather than read the same pages forever")
            seen.add(cursor)
            step["cursor"] = cursor
            if items and isinstance(items[-1], dict):
                step["last"] = self.drift.order_key(op, items[-1])
            return True
        return False

    def _merge(self, step: dict[str, Any], op: Operation, item: dict[str, Any]) -> None:
        table = step["table"]
        if step["op"] == "listAgentTools":
            agent = self.tables.get("agents", {}).get(step["path"]["id"])
            if agent is not None and "id" in item:
                agent.setdefault("_tool_states", {})[item["id"]] = bool(item.get("enabled"))
            return
        if table == "builtin_tools" and item.get("source") != "builtin":
            return
        scrubbed = self.scrubber.record(table, item)
        if step["op"] == "getConversation":
            self._summary(scrubbed)
        record = self._project(table, scrubbed)
        if step.get("internal_ws"):
            record[step["internal_ws"]] = step["ws"]
        if table == "users":
            record["_workspace_ids"] = [step["ws"]]
        key_field = TABLES[table].key
        key = record.get(key_field)
        if key is None:
            return
        rows = self.tables.setdefault(table, {})
        known = rows.get(key)
        if table == "users" and known is not None:
            record["_workspace_ids"] = sorted({*known.get("_workspace_ids", []), step["ws"]})
        rows[key] = {**known, **record} if known else record
        if known is None:
            self._queue_under(table, record, step["ws"])

    def _summary(self, detail: dict[str, Any]) -> None:
        if detail.get("summary") is not None or detail.get("sentiment") is not None:
            self.tables.setdefault("conversation_summaries", {})[detail["id"]] = {
                "id": detail["id"], "summary": detail.get("summary"),
                "sentiment": detail.get("sentiment")}

    def _project(self, table: str, record: dict[str, Any]) -> dict[str, Any]:
        """The record's fields that the table's schemas document (what the loader accepts)."""
        known: set[str] = set()
        for name in TABLES[table].schemas:
            known.update(self.spec.schema_fields(name))
        derived = set(TABLES[table].derived)
        return {k: v for k, v in record.items() if k in known and k not in derived}

    def _queue_under(self, table: str, record: dict[str, Any], ws: str | None) -> None:
        key = record[TABLES[table].key]
        detail = DETAIL.get(table)
        if detail is not None:
            self.queue.append({"op": detail, "table": table, "ws": ws,
                               "path": detail_path(table, key, record), "detail": True})
        for source in CHILDREN.get(table, ()):
            path = {"id": record.get("workflow_id", key) if table == "workflow_executions"
                    else key, "execution_id": key}
            self.queue.append(self._step(source, ws, path))

    # -- resume state ---------------------------------------------------------------------------
    def state(self) -> dict[str, Any]:
        return {"tables": self.tables, "queue": list(self.queue), "steps_done": self.steps_done}

    def restore(self, state: dict[str, Any]) -> None:
        self.tables = state["tables"]
        self.queue = deque(state["queue"])
        self.steps_done = state["steps_done"]
