"""Pagination rules the schemas cannot express, on every reachable paginated list.

For each operation with a `cursor` parameter whose required parameters discovery could fill:
- walking with limit=2 yields each item exactly once (by its key: id, workflow_id, ...), and
  the same set as a walk with limit=100;
- `next_cursor` is null exactly when `has_more` is false;
- limit=0 and limit=101 are refused with 400, and so is a forged cursor.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .document import item_key
from .registry import declare, fail, routine

if TYPE_CHECKING:
    from ..openapi.spec import Operation
    from .gate import Gate
    from .violations import Exchange

__all__ = ["check_pagination"]


def _declare(name: str, what: str, defect: str) -> None:
    declare(name, family="pagination", option="pagination", proofs=[(what, defect)])


_declare("pagination_unique", "a limit=2 walk yields each item once", "duplicate item across pages")
_declare("pagination_complete", "a limit=2 walk and a limit=100 walk list the same items",
         "duplicate item across pages")
_declare("pagination_walk", "every page of a walk answers 200 with a `data` array",
         "later pages answer 500")
_declare("pagination_limit", "no page holds more items than its `limit`",
         "page holds more items than limit")
_declare("pagination_next_cursor", "`next_cursor` is null exactly when `has_more` is false",
         "has_more false beside a next_cursor")
_declare("pagination_refuses_limit", "limit=0 and limit=101 → 400", "out-of-range limit ignored")
_declare("pagination_refuses_cursor", "a forged cursor → 400",
         "forged cursor read as the first page")

FORGED_CURSOR = "Zm9yZ2VkLWJ5LXRoZS1jb25mb3JtYW5jZS1nYXRl"  # base64 of a made-up cursor


@routine("pagination", "lists")
def check_pagination(gate: Gate) -> None:
    assert gate.discovery is not None
    for op in gate.operations(writes=False):
        if op.method != "GET" or not op.paginated:
            continue
        params = gate.discovery.ready(op)
        if params is None:
            gate.note(f"pagination: {op.operation_id} skipped (no parameters reach it)")
            continue
        gate.progress(f"pagination  {op.operation_id}")
        _check_operation(gate, op, params)


def _walk(gate: Gate, op: Operation, params: dict[str, dict[str, Any]], limit: int,
          ) -> tuple[list[Any], list[Exchange], bool]:
    """Follow next_cursor to the end (or max_pages). Returns keys, exchanges, completed."""
    keys: list[Any] = []
    exchanges: list[Exchange] = []
    cursor: str | None = None
    for _ in range(gate.config.max_pages):
        query = dict(params.get("query", {}))
        query["limit"] = limit
        if cursor is not None:
            query["cursor"] = cursor
        exchange = gate.call(op, params=query, path_params=params.get("path"))
        exchanges.append(exchange)
        gate.count("pagination")
        body = exchange.json()
        if exchange.status != 200 or not isinstance(body, dict):
            fail(gate, "pagination_walk", op, f"page request answered {exchange.status}",
                       exchange)
            return keys, exchanges, False
        items = body.get("data")
        if not isinstance(items, list):
            fail(gate, "pagination_walk", op, "page has no data array", exchange)
            return keys, exchanges, False
        if len(items) > limit:
            fail(gate, "pagination_limit", op, f"page of limit={limit} holds {len(items)} items",
                 exchange, provenance=gate.doc.parameter_provenance(op, "limit"))
        keys.extend(item_key(item) for item in items)
        has_more, next_cursor = body.get("has_more"), body.get("next_cursor")
        if (next_cursor is None) != (has_more is False):
            fail(gate, "pagination_next_cursor", op,
                       f"next_cursor={next_cursor!r} with has_more={has_more!r}; next_cursor "
                       "must be null exactly when has_more is false", exchange,
                 provenance=gate.doc.parameter_provenance(op, "cursor"))
        if not has_more or not next_cursor:
            return keys, exchanges, True
        cursor = next_cursor
    gate.note(f"pagination: {op.operation_id} walk stopped after {gate.config.max_pages} pages",
              whose="run")
    return keys, exchanges, False


def _check_operation(gate: Gate, op: Operation, params: dict[str, dict[str, Any]]) -> None:
    keys, exchanges, completed = _walk(gate, op, params, 2)
    if exchanges and exchanges[-1].status == 200:
        seen: set[Any] = set()
        for index, key in enumerate(keys):
            if key in seen:
                page = index // 2
                fail(gate, "pagination_unique", op,
                           f"item {key!r} appears more than once in a limit=2 walk "
                           f"(again on page {page + 1})",
                           exchanges[min(page, len(exchanges) - 1)],
                     provenance=gate.doc.parameter_provenance(op, "cursor"), key=key)
                break
            seen.add(key)
        if completed:
            whole, whole_exchanges, whole_done = _walk(gate, op, params, 100)
            if whole_done and set(whole) != seen:
                missing = sorted(map(str, set(whole) - seen))[:5]
                extra = sorted(map(str, seen - set(whole)))[:5]
                fail(gate, "pagination_complete", op,
                           f"a limit=2 walk and a limit=100 walk disagree: missing from the "
                           f"limit=2 walk {missing}, only in it {extra}",
                     whole_exchanges[0], provenance=gate.doc.parameter_provenance(op, "cursor"))
    _refusals(gate, op, params)


def _refusals(gate: Gate, op: Operation, params: dict[str, dict[str, Any]]) -> None:
    base = dict(params.get("query", {}))
    cases: list[tuple[str, dict[str, Any], str]] = [
        ("limit", {"limit": 0}, "limit=0"),
        ("limit", {"limit": 101}, "limit=101"),
        ("cursor", {"cursor": FORGED_CURSOR, "limit": 2}, "a forged cursor"),
    ]
    for parameter, extra, label in cases:
        exchange = gate.call(op, params={**base, **extra}, path_params=params.get("path"))
        gate.count("pagination")
        if exchange.status != 400:
            fail(gate, f"pagination_refuses_{parameter}", op,
                       f"{label} answered {exchange.status}, expected 400", exchange,
                 provenance=gate.doc.parameter_provenance(op, parameter))

