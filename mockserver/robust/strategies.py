"""Hypothesis strategies for variation plans (the pytest side of robustness mode).

`plans(...)` draws lists of items the server accepts as they are (`check_plan`): each item
is drawn from explicit choices (kind, operation, table, record, field, value, call ...), so
hypothesis shrinks a failing plan by dropping items (the list) and by moving each choice
towards the first offered (the simplest: call 1, the first value).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hypothesis import strategies as st

from .catalogue import ANSWER_KINDS, EXTRA_FIELDS, KINDS, PAGING_KINDS, VALUED_KINDS, Catalogue
from .plan import DELAYS_MS, FLAKY_STATUS, MAX_CALL, RETRY_AFTER, Records, applies, describe

__all__ = ["items", "plans"]


def plans(catalogue: Catalogue, records: Records, *, kinds: Sequence[str] | None = None,
          operations: Sequence[str] | None = None,
          max_items: int = 6) -> st.SearchStrategy[list[dict[str, Any]]]:
    """Plans of up to `max_items` items of these kinds on these operations."""
    return st.lists(items(catalogue, records, kinds=kinds, operations=operations),
                    max_size=max_items)


def items(catalogue: Catalogue, records: Records, *, kinds: Sequence[str] | None = None,
          operations: Sequence[str] | None = None) -> st.SearchStrategy[dict[str, Any]]:
    """One item of the given kinds (default all) on the given operations (default all)."""
    ops = list(operations or sorted(catalogue.operations))
    unknown = [o for o in ops if o not in catalogue.operations]
    if unknown:
        raise ValueError(f"operations: {unknown[0]!r} is not an operation of the document")
    wanted = list(kinds or KINDS)
    bad = [k for k in wanted if k not in KINDS]
    if bad:
        raise ValueError(f"kinds: {bad[0]!r} is not a kind (one of {', '.join(KINDS)})")
    pairs = []
    for kind in wanted:
        for op in ops:
            if not applies(catalogue, kind, catalogue.operations[op]):
                continue
            if kind in ANSWER_KINDS or kind in PAGING_KINDS or _targets(
                    catalogue, records, kind, op):
                pairs.append((kind, op))
    if not pairs:
        raise ValueError("no kind of these varies an answer of these operations")
    keys: dict[tuple[str, str], list[str]] = {}  # the records a draw picks from, listed once

    @st.composite
    def item(draw: st.DrawFn) -> dict[str, Any]:
        # (a composite: a failing example prints as the plan's plain JSON)
        kind, operation = draw(st.sampled_from(pairs))
        return _described(draw(_item(catalogue, records, keys, kind, operation)))

    return item()


def _described(item: dict[str, Any]) -> dict[str, Any]:
    return {**item, "describe": describe(item)}


def _targets(catalogue: Catalogue, records: Records, kind: str,
             operation: str) -> list[tuple[str, str]]:
    """(table, field) pairs of the operation's records the kind can vary."""
    found = []
    for table in catalogue.operations[operation].tables:
        if not records.rows(table):
            continue
        if kind == "extra-field":
            found.append((table, ""))
            continue
        found += [(table, f.name) for f in catalogue.fields(table).values() if kind in f.kinds()]
    return found


def _item(catalogue: Catalogue, records: Records, keys: dict[tuple[str, str], list[str]],
          kind: str, operation: str) -> st.SearchStrategy[dict[str, Any]]:
    base = {"kind": kind, "operation": operation}
    calls = st.integers(1, MAX_CALL)
    if kind in PAGING_KINDS:
        return st.just(base)
    if kind == "status":
        return st.builds(lambda c, s: {**base, "call": c, "status": s}, calls,
                         st.sampled_from(catalogue.operations[operation].error_statuses))
    if kind == "rate-limit":
        return st.builds(lambda c, r: {**base, "call": c, "retry_after": r}, calls,
                         st.sampled_from(RETRY_AFTER))
    if kind == "flaky":
        return st.builds(lambda c, f: {**base, "call": c, "status": FLAKY_STATUS,
                                       "failures": f}, calls, st.integers(1, 2))
    if kind == "slow":
        return st.builds(lambda c, d: {**base, "call": c, "delay_ms": d}, calls,
                         st.sampled_from(DELAYS_MS))
    if kind == "drop":
        return st.builds(lambda c: {**base, "call": c}, calls)
    return st.sampled_from(_targets(catalogue, records, kind, operation)).flatmap(
        lambda target: _content(catalogue, records, keys, base, *target))


def _keys(catalogue: Catalogue, records: Records, table: str, name: str) -> list[str]:
    rows = records.rows(table)
    if not name or catalogue.own_fields(table, {}) == set():
        return list(rows)
    # a kb folder never gets a file's field (nor a file a folder's)
    return [k for k in rows if name not in catalogue.own_fields(table, rows[k])]


def _content(catalogue: Catalogue, records: Records, keys: dict[tuple[str, str], list[str]],
             base: dict[str, Any], table: str, name: str) -> st.SearchStrategy[dict[str, Any]]:
    kind = base["kind"]
    found = keys.get((table, name))
    if found is None:
        found = keys[(table, name)] = _keys(catalogue, records, table, name)
    if not found:
        return st.nothing()
    record = st.sampled_from(found)
    target = {**base, "table": table}
    if kind == "extra-field":
        documented = catalogue.documented(table)
        extras = [e for e in EXTRA_FIELDS if e[0] not in documented]
        return st.builds(lambda k, e: {**target, "record": k, "field": e[0], "value": e[1]},
                         record, st.sampled_from(extras))
    if kind in VALUED_KINDS:
        values = catalogue.fields(table)[name].values(kind)
        return st.builds(lambda k, v: {**target, "record": k, "field": name, "value": v},
                         record, st.sampled_from(values))
    return st.builds(lambda k: {**target, "record": k, "field": name}, record)
