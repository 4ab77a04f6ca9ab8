"""Variation plans: items checked, drawn from a seed, and described in words.

An item is a JSON object `{"kind", "operation", "describe", ...}` (spec/control-openapi.yaml,
`VariationItem`). Items are independent: any sub-list of a plan is a plan (delta debugging
and hypothesis's shrinking rely on it). `draw_plan` draws a plan deterministically from a
seed over a store (same seed, same records: same plan); `check_plan` refuses, naming the
field, an item the document does not allow (nothing of the plan is applied then).
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import orjson

from ..data.tables import TABLES
from ..engine.errors import BadRequest
from .catalogue import (
    ANSWER_KINDS,
    CONTENT_KINDS,
    EXTRA_FIELDS,
    KINDS,
    PAGING_KINDS,
    VALUED_KINDS,
    Catalogue,
    OperationFacts,
)

__all__ = ["Records", "applies", "check_plan", "describe", "draw_item", "draw_plan"]

# The store as drawing reads it: table -> key -> record (engine.store.Store.rows).
Records = Any

RETRY_AFTER = (1, 2, 7, 30, 120, 3600)  # seconds: a client must wait, not hammer
DELAYS_MS = (100, 500, 2000)  # past a client's patience, short of a test's deadline
MAX_CALL = 3  # answer kinds hit one of an operation's first calls (tests make few)
FLAKY_STATUS = 503
_NAME = re.compile(r"[a-z][a-z0-9_]{0,63}")
_FIELD_KINDS = tuple(k for k in CONTENT_KINDS if k != "extra-field")


def _short(value: Any) -> str:
    text = orjson.dumps(value).decode()
    return text if len(text) <= 40 else f"{text[:37]}...\""[:41]


def describe(item: Mapping[str, Any]) -> str:
    """One line in words: what the item varies."""
    kind, op = item["kind"], item["operation"]
    where = f"{item.get('table')} {item.get('record')}.{item.get('field')}"
    call = item.get("call")
    text = {
        "null": lambda: f"{where} = null",
        "absent": lambda: f"{where} absent",
        "empty-array": lambda: f"{where} = []",
        "one-item": lambda: f"{where} cut to one item",
        "max-items": lambda: f"{where} filled to its maximum number of items",
        "empty-string": lambda: f'{where} = ""',
        "extra-field": lambda: (f"{item.get('table')} {item.get('record')} gains the "
                                f"undocumented field {item.get('field')} = "
                                f"{_short(item.get('value'))}"),
        "page-of-one": lambda: "every page holds one item",
        "empty-last-page": lambda: "the last page is empty (has_more was true one page more)",
        "status": lambda: f"call {call} answers {item.get('status')}",
        "rate-limit": lambda: f"call {call} answers 429 Retry-After {item.get('retry_after')}",
        "flaky": lambda: (f"call {call} answers {item.get('status', FLAKY_STATUS)}, then "
                          "success" if item.get("failures", 1) == 1 else
                          f"calls {call}-{call + item['failures'] - 1} answer "
                          f"{item.get('status', FLAKY_STATUS)}, then success"),
        "slow": lambda: f"call {call} answers after {item.get('delay_ms')} ms",
        "drop": lambda: f"call {call} loses its connection",
    }.get(kind, lambda: f"{where} = {_short(item.get('value'))}")()
    return f"{op}: {text}"


# -- which kinds apply where ----------------------------------------------------------------

def applies(catalogue: Catalogue, kind: str, facts: OperationFacts) -> bool:
    """Whether the document lets `kind` vary the answers of this operation."""
    key = (kind, facts.operation_id)
    found = catalogue.applies.get(key)
    if found is None:
        found = catalogue.applies[key] = _applies(catalogue, kind, facts)
    return found


def _applies(catalogue: Catalogue, kind: str, facts: OperationFacts) -> bool:
    if kind in ANSWER_KINDS:
        return {"status": bool(facts.error_statuses), "rate-limit": facts.rate_limited}.get(
            kind, True)
    if kind in PAGING_KINDS:
        return facts.paged
    if kind == "extra-field":
        return bool(facts.tables)
    return any(kind in f.kinds() for t in facts.tables for f in catalogue.fields(t).values())


# -- drawing ------------------------------------------------------------------------------

def draw_plan(catalogue: Catalogue, records: Records, seed: int, *,
              kinds: Sequence[str] | None = None, operations: Sequence[str] | None = None,
              size: int | None = None) -> list[dict[str, Any]]:
    """A plan drawn from `seed` (1-6 items unless `size`): the same seed over the same
    records draws the same plan."""
    rng = random.Random(seed)
    key = (tuple(kinds or KINDS), tuple(operations or sorted(catalogue.operations)))
    pairs = catalogue.pairs.get(key)
    if pairs is None:
        ops = [catalogue.operations[o] for o in key[1]]
        pairs = catalogue.pairs[key] = [(k, f) for k in key[0] for f in ops
                                        if applies(catalogue, k, f)]
    plan: list[dict[str, Any]] = []
    if not pairs:
        return plan
    keys: dict[str, list[str]] = {}  # each table's keys listed once per plan (100k contacts)
    wanted = size if size is not None else rng.randint(1, 6)
    for _ in range(wanted * 8):
        if len(plan) >= wanted:
            break
        kind, facts = rng.choice(pairs)
        item = draw_item(catalogue, records, kind, facts.operation_id, rng, keys)
        if item is not None:
            plan.append(item)
    return plan


def draw_item(catalogue: Catalogue, records: Records, kind: str, operation: str,
              rng: random.Random, keys: dict[str, list[str]] | None = None,
              ) -> dict[str, Any] | None:
    """One item of `kind` on `operation`, or None when this draw found nothing to vary;
    `keys` caches each table's record keys across the draws of one plan."""
    facts = catalogue.operations[operation]
    item: dict[str, Any] = {"kind": kind, "operation": operation}
    if kind in ANSWER_KINDS:
        item["call"] = rng.randint(1, MAX_CALL)
        if kind == "status":
            item["status"] = rng.choice(facts.error_statuses)
        elif kind == "rate-limit":
            item["retry_after"] = rng.choice(RETRY_AFTER)
        elif kind == "flaky":
            item.update(status=FLAKY_STATUS, failures=rng.randint(1, 2))
        elif kind == "slow":
            item["delay_ms"] = rng.choice(DELAYS_MS)
    elif kind not in PAGING_KINDS:
        found = _draw_content(catalogue, records, kind, facts, rng, {} if keys is None else keys)
        if found is None:
            return None
        item.update(found)
    item["describe"] = describe(item)
    return item


def _draw_content(catalogue: Catalogue, records: Records, kind: str, facts: OperationFacts,
                  rng: random.Random, keys: dict[str, list[str]]) -> dict[str, Any] | None:
    tables = [t for t in facts.tables if kind == "extra-field" or any(
        kind in f.kinds() for f in catalogue.fields(t).values())]
    if not tables:
        return None
    table = rng.choice(tables)
    rows = records.rows(table)
    if not rows:
        return None
    listed = keys.get(table)
    if listed is None:
        listed = keys[table] = list(rows)
    for _ in range(8):
        key = rng.choice(listed)
        record = rows[key]
        if kind == "extra-field":
            documented = catalogue.documented(table)
            name, value = rng.choice([e for e in EXTRA_FIELDS if e[0] not in documented])
            return {"table": table, "record": key, "field": name, "value": value}
        skip = catalogue.own_fields(table, record)
        fields = [f for f in catalogue.fields(table).values()
                  if kind in f.kinds() and f.name not in skip]
        rng.shuffle(fields)
        for facts_ in fields:
            found = _varies(kind, facts_.values(kind), record.get(facts_.name, _MISSING),
                            facts_.name in record, rng)
            if found is not None:
                return {"table": table, "record": key, "field": facts_.name, **found}
    return None


_MISSING = object()


def _varies(kind: str, values: tuple[Any, ...], current: Any, present: bool,
            rng: random.Random) -> dict[str, Any] | None:
    """The item's fields when `kind` changes this value ({} when it needs none), or None."""
    if kind in VALUED_KINDS:
        other = [v for v in values if v != current]
        return {"value": rng.choice(other)} if other else None
    changes = {
        "null": present and current is not None,
        "absent": present,
        "empty-array": isinstance(current, list) and len(current) > 0,
        "one-item": isinstance(current, list) and len(current) > 1,
        "max-items": isinstance(current, list) and len(current) > 0,
        "empty-string": isinstance(current, str) and current != "",
    }
    return {} if changes.get(kind) else None


# -- checking a given plan ------------------------------------------------------------------

def check_plan(catalogue: Catalogue, records: Records,
               plan: Iterable[Any]) -> list[dict[str, Any]]:
    """The plan with each item checked and described; BadRequest names the first field the
    document does not allow (`plan/2/field: ...`)."""
    return [_check_item(catalogue, records, i, item) for i, item in enumerate(plan)]


def _check_item(catalogue: Catalogue, records: Records, index: int,
                item: Any) -> dict[str, Any]:
    where = f"plan/{index}"
    if not isinstance(item, dict):
        raise BadRequest(f"field '{where}': an item is an object")
    kind, operation = item.get("kind"), item.get("operation")
    if kind not in KINDS:
        raise BadRequest(f"field '{where}/kind': {kind!r} is not a kind (one of "
                         f"{', '.join(KINDS)})")
    facts = catalogue.operations.get(operation) if isinstance(operation, str) else None
    if facts is None:
        raise BadRequest(f"field '{where}/operation': {operation!r} is not an operation of "
                         "the document")
    if not applies(catalogue, kind, facts):
        raise BadRequest(f"field '{where}/kind': the document does not let {kind!r} vary "
                         f"the answers of {operation}")
    out: dict[str, Any] = {"kind": kind, "operation": operation}
    if kind in ANSWER_KINDS:
        out.update(_check_answer(facts, where, item))
    elif kind not in PAGING_KINDS:
        out.update(_check_content(catalogue, records, facts, where, item))
    out["describe"] = describe(out)
    return out


def _integer(item: Mapping[str, Any], name: str, where: str, low: int, high: int,
             default: int | None = None) -> int:
    value = item.get(name, default)
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        raise BadRequest(f"field '{where}/{name}': {value!r} is not a whole number from "
                         f"{low} to {high}")
    return value


def _check_answer(facts: OperationFacts, where: str, item: Mapping[str, Any]) -> dict[str, Any]:
    kind = item["kind"]
    out: dict[str, Any] = {"call": _integer(item, "call", where, 1, 1_000_000)}
    if kind == "status":
        status = item.get("status")
        if status not in facts.error_statuses:
            raise BadRequest(f"field '{where}/status': {status!r} is not a documented error "
                             f"status of {facts.operation_id} (one of "
                             f"{', '.join(map(str, facts.error_statuses))})")
        out["status"] = status
    elif kind == "rate-limit":
        # The document's Retry-After is whole seconds, at least 1.
        out["retry_after"] = _integer(item, "retry_after", where, 1, 86_400)
    elif kind == "flaky":
        out["status"] = _integer(item, "status", where, 500, 599, FLAKY_STATUS)
        out["failures"] = _integer(item, "failures", where, 1, 10, 1)
    elif kind == "slow":
        out["delay_ms"] = _integer(item, "delay_ms", where, 0, 600_000)
    return out


def _check_content(catalogue: Catalogue, records: Records, facts: OperationFacts, where: str,
                   item: Mapping[str, Any]) -> dict[str, Any]:
    kind, table, key, name = item["kind"], item.get("table"), item.get("record"), item.get("field")
    if table not in facts.tables:
        raise BadRequest(f"field '{where}/table': {table!r} is not a table whose records "
                         f"{facts.operation_id} answers (one of {', '.join(facts.tables)})")
    record = records.get(table, key) if isinstance(key, str) else None
    if record is None:
        raise BadRequest(f"field '{where}/record': no {table} record {key!r}")
    out = {"table": table, "record": key, "field": name}
    if kind == "extra-field":
        if not isinstance(name, str) or not _NAME.fullmatch(name) or (
                name in catalogue.documented(table)):
            raise BadRequest(f"field '{where}/field': {name!r} is not a field name the "
                             f"document leaves unlisted for {table} (lower case, digits, '_')")
        if "value" not in item:
            raise BadRequest(f"field '{where}/value': the extra field's value is required")
        return {**out, "value": item["value"]}
    facts_ = catalogue.fields(table).get(name) if isinstance(name, str) else None
    if facts_ is None or kind not in facts_.kinds() or name in catalogue.own_fields(
            table, record):
        raise BadRequest(f"field '{where}/field': the document does not let {kind!r} vary "
                         f"{table}.{name}")
    if kind in VALUED_KINDS:
        if item.get("value", _MISSING) not in facts_.values(kind):
            raise BadRequest(f"field '{where}/value': {item.get('value')!r} is not a {kind} "
                             f"value of {table}.{name}")
        out["value"] = item["value"]
    return out


def key_field(table: str) -> str:
    return TABLES[table].key
