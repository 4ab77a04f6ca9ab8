"""What every law shares: walking a list through its pages, the lists discovery reached, and
reading a field or a record out of an answer. No law lives here (see `laws.py`,
`law_hierarchy.py`, `law_patches.py`, `law_creates.py`, `law_failed_writes.py`)."""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..openapi.spec import Operation
    from .gate import Gate
    from .violations import Exchange

__all__ = ["LAW_PAGES", "MISSING", "PAGE", "data_of", "field_value", "lists", "query_enum",
           "query_for", "sort_key", "walk"]

PAGE = 100
# Pages a law walks at most: enough for the mock's datasets; on a large real dataset a law
# compares what it read and says so (a filtered walk is then only checked item by item).
LAW_PAGES = 5


def field_value(item: Any, field: str) -> Any:
    node = item
    for part in field.split("."):
        if not isinstance(node, dict) or part not in node:
            return MISSING
        node = node[part]
    return node


MISSING = object()


def sort_key(value: Any) -> Any:
    if isinstance(value, str) and len(value) >= 10 and value[4:5] == "-" and value[7:8] == "-":
        try:
            parsed = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
            if parsed.tzinfo is None:
                parsed = parsed.replace(tzinfo=dt.UTC)
            return (0, parsed.timestamp())
        except ValueError:
            pass
    if isinstance(value, bool):
        return (1, int(value))
    if isinstance(value, int | float):
        return (1, value)
    return (2, str(value))


def walk(gate: Gate, op: Operation, params: dict[str, dict[str, Any]], extra: dict[str, Any],
         *, limit: int | None = PAGE, max_pages: int | None = None,
         ) -> tuple[list[Any], Exchange | None, bool]:
    """Items of a list walk with `extra` query parameters: (items, first exchange, complete).
    None when a page is not a 200 list (the pagination family reports that)."""
    items: list[Any] = []
    first: Exchange | None = None
    cursor = None
    for _ in range(max_pages or min(LAW_PAGES, gate.config.max_pages)):
        query = {**params.get("query", {}), **extra}
        if limit is not None:
            query["limit"] = limit
        if cursor is not None:
            query["cursor"] = cursor
        exchange = gate.call(op, params=query, path_params=params.get("path"))
        gate.count("laws")
        first = first or exchange
        body = exchange.json()
        if exchange.status != 200 or not isinstance(body, dict) or \
                not isinstance(body.get("data"), list):
            return items, first, False
        items.extend(body["data"])
        cursor = body.get("next_cursor")
        if not body.get("has_more") or not cursor:
            return items, first, True
    return items, first, False


def lists(gate: Gate, *, selected: bool = True) -> list[tuple[Operation, dict[str, dict[str, Any]]]]:
    """Paginated GETs discovery reached (only the selected ones unless `selected=False`)."""
    assert gate.discovery is not None
    found = []
    for op in gate.operations(writes=False) if selected else gate.doc.operations:
        if op.method != "GET" or not op.paginated:
            continue
        params = gate.discovery.ready(op)
        if params is not None:
            found.append((op, params))
    return found


def query_enum(op: Operation, name: str) -> tuple[list[Any], Any] | None:
    for param in op.parameters:
        if param.location == "query" and param.name == name:
            return list(param.schema.get("enum") or []), param.default
    return None


def data_of(exchange: Exchange) -> Any:
    """The `data` of an answer's body (None when it has none)."""
    body = exchange.json()
    return body.get("data") if isinstance(body, dict) else None


def query_for(op: Operation, params: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The query parameters of `params` that `op` declares."""
    names = {p.name for p in op.parameters if p.location == "query"}
    return {k: v for k, v in params.get("query", {}).items() if k in names}
