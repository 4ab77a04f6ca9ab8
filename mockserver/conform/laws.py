"""Promises of the description as laws, derived from the document and checked on every
operation they apply to (never hand-written for one resource).

The facts a law needs come from the document: parameter defaults and enums, and the gate's
extensions (`x-order` on a list: the record field it is sorted over, per `sort_by` value
where there is one, and its default direction; `x-filter` on a filter parameter: the record
field it constrains and what a virtual value such as ticket `status=open` stands for).

Read laws (run without --allow-writes):
- ordering: each list with `x-order` is sorted by its field, for each `order` and `sort_by`
  value and when they are omitted (the declared default direction);
- filters: every item a filtered list returns satisfies the filter, and the filtered walk is
  the unfiltered walk filtered on the client;
- defaults: omitting a query parameter answers as sending its documented default (page size
  20 without `limit`, `all_versions=false`, `order`, `sort_by`, ...);
- namespaces: every item of a list for workspace A that names a workspace names A, and a
  token's lists for two of its workspaces share no record.

Hierarchy (reads too): `law_hierarchy.py`. Write laws (only with --allow-writes): `law_patches.py`
(PATCH read-your-writes), `law_creates.py` (creates, body defaults, deletes),
`law_failed_writes.py` (refused writes leave no trace). Shared walking: `law_walk.py`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .document import item_key
from .law_walk import MISSING, PAGE, field_value, lists, query_enum, sort_key, walk
from .registry import declare, fail, routine

if TYPE_CHECKING:
    from ..openapi.spec import Filter, Operation, Order
    from .gate import Gate
    from .violations import Exchange

__all__ = ["check_defaults", "check_filters", "check_namespaces", "check_ordering",
           "filter_spec", "missing_law_walks", "order_spec", "order_walks"]

declare("law_ordering", family="laws", option="laws", proofs=[
    ("lists are sorted by their `x-order` field, for each `order`/`sort_by` value and by "
     "default", "order ignored"),
    ("the same, for `sort_by`", "sort_by ignored"),
    ("the same, over several fields (knowledge nodes: `depth`, then `title`)",
     "nodes sorted by title alone"),
    ("a law walks every list it applies to: a defect in the second list of a run is caught",
     "sort_by ignored on the second list")])
declare("law_filter", family="laws", option="laws", proofs=[
    ("filtered items satisfy the filter; filtered = unfiltered filtered on the client",
     "status=open filter leaks"),
    ("the same: no matching item missing from a filtered list", "status filter misses items")])
declare("law_default", family="laws", option="laws", proofs=[
    ("omitting a parameter answers as its documented default (page size 20, `order`, "
     "`sort_by`, `all_versions` ...)", "50 items without limit"),
    ("a body property omitted is recorded with its documented default",
     "escalation resolved as reviewed by default")])
declare("law_namespace", family="laws", option="laws", proofs=[
    ("a list for workspace A holds only A's records", "list holds another workspace's record")])
declare("law_coverage", family="laws", option="laws", proofs=[
    ("a law that stops early leaves walks it owed: the run is INCOMPLETE, naming them",
     "a law stops after its first list")])


def order_spec(gate: Gate, op: Operation) -> Order | None:
    """The list's `x-order`, as the document loader reads it for the mock too."""
    return op.order


def filter_spec(gate: Gate, op: Operation) -> dict[str, Filter]:
    """Filter parameter name -> its `x-filter` (field, values, provenance)."""
    return {facts.param: facts for facts in op.filters}


# -- ordering ------------------------------------------------------------------------------


def _check_sorted(gate: Gate, op: Operation, items: list[Any], fields: tuple[str, ...],
                  descending: bool, exchange: Exchange | None, label: str,
                  provenance: str | None) -> None:
    field = ", ".join(fields)
    previous: tuple[Any, ...] | None = None
    for index, item in enumerate(items):
        values = tuple(field_value(item, f) for f in fields)
        if any(v is MISSING or v is None for v in values):
            continue  # records without the sort key are placed by the server's own rule
        if previous is not None:
            before, now = tuple(map(sort_key, previous)), tuple(map(sort_key, values))
            if (now > before) if descending else (now < before):
                direction = "descending" if descending else "ascending"
                shown = values[0] if len(values) == 1 else values
                after = previous[0] if len(previous) == 1 else previous
                fail(gate, "law_ordering", op,
                     f"{label}: items are not {direction} by {field}: item {index} "
                     f"({item_key(item)!r}) has {field}={shown!r} after {after!r}",
                     exchange, provenance=provenance, field=field)
                return
        previous = values


def order_walks(op: Operation) -> list[tuple[dict[str, Any], tuple[str, ...]]]:
    """The walks the ordering law owes a list: (query parameters, sort fields) for each
    `sort_by` value and `order`, and with neither (the declared defaults)."""
    spec = op.order
    if spec is None:
        return []
    orders = query_enum(op, "order")
    sorts = query_enum(op, "sort_by")
    fields: dict[Any, tuple[str, ...] | None]
    if spec.by_sort and sorts is not None:
        fields = dict(spec.by_sort)
        default_sort = sorts[1]
    else:
        fields = {None: spec.by}
        default_sort = None
    directions: list[str | None] = [None] + (list(orders[0]) if orders else [])
    walks = []
    for sort_value, field in fields.items():
        if not field:
            continue  # the documented order is over a field the items do not carry
        for direction in directions:
            extra: dict[str, Any] = {}
            if sort_value is not None and sort_value != default_sort:
                extra["sort_by"] = sort_value
            elif sort_value is not None and direction is not None:
                extra["sort_by"] = sort_value  # the default named explicitly once
            if direction is not None:
                extra["order"] = direction
            walks.append((extra, field))
    return walks


def walk_label(extra: dict[str, Any]) -> str:
    return " ".join(f"{k}={v}" for k, v in extra.items()) or "no order parameter"


@routine("laws", "ordering", order=1)
def check_ordering(gate: Gate) -> None:
    for op, params in lists(gate):
        spec = order_spec(gate, op)
        if spec is None:
            continue
        for extra, field in order_walks(op):
            items, exchange, _ = walk(gate, op, params, extra, max_pages=3)
            descending = (extra.get("order") or spec.direction) == "desc"
            label = walk_label(extra)
            gate.law_walked("law_ordering", op, label)
            _check_sorted(gate, op, items, field, descending, exchange, label, spec.provenance)


def missing_law_walks(gate: Gate) -> list[str]:
    """What the laws owed and did not walk (a law that stops early shows here, and the run is
    then INCOMPLETE): every `sort_by`/`order` walk of each list with `x-order`, and each list
    the other read laws apply to. Computed from the document, apart from the laws' loops."""
    if "laws" not in gate.config.checks or gate.discovery is None:
        return []
    gaps = []
    walked = gate.law_walks
    for op, _params in lists(gate):
        done = set(walked.get("law_ordering", {}).get(op.operation_id, []))
        owed = [walk_label(extra) for extra, _ in order_walks(op)]
        missing = [label for label in owed if label not in done]
        if missing:
            gaps.append(f"law_ordering on {op.operation_id}: {', '.join(missing)} not walked")
        owes = {"law_namespace": True, "law_filter": bool(op.filters)}
        for law, applies in owes.items():
            if applies and op.operation_id not in walked.get(law, {}):
                gaps.append(f"{law} on {op.operation_id}: not walked")
    return gaps


# -- filters -------------------------------------------------------------------------------


def _matches(item: Any, spec: Filter, value: Any) -> bool:
    actual = field_value(item, spec.field)
    for candidate in spec.allowed(value):
        if actual == candidate:
            return True
        if isinstance(actual, bool) and str(actual).lower() == str(candidate).lower():
            return True
    return False


@routine("laws", "filters", order=2)
def check_filters(gate: Gate) -> None:
    for op, params in lists(gate):
        filters = filter_spec(gate, op)
        if not filters:
            continue
        whole, _, complete = walk(gate, op, params, {})
        gate.law_walked("law_filter", op, "unfiltered")
        for name, spec in filters.items():
            if name in params.get("query", {}):
                continue  # discovery fixed it (a required filter): nothing to compare with
            enum = query_enum(op, name)
            values: list[Any] = list(enum[0]) if enum and enum[0] else []
            if not values:
                seen = [field_value(item, spec.field) for item in whole]
                values = sorted({v for v in seen if isinstance(v, str) and v})[:2]
            for value in values:
                items, exchange, done = walk(gate, op, params, {name: value})
                gate.law_walked("law_filter", op, f"{name}={value}")
                wrong = [item for item in items if not _matches(item, spec, value)]
                if wrong:
                    fail(gate, "law_filter", op,
                         f"{name}={value}: item {item_key(wrong[0])!r} has "
                         f"{spec.field}={field_value(wrong[0], spec.field)!r}",
                         exchange, provenance=spec.provenance, parameter=name)
                    continue
                if complete and done:
                    expected = {item_key(i) for i in whole if _matches(i, spec, value)}
                    got = {item_key(i) for i in items}
                    if expected != got:
                        missing = sorted(map(str, expected - got))[:5]
                        fail(gate, "law_filter", op,
                             f"{name}={value}: the filtered list is not the unfiltered list "
                             f"filtered on {spec.field}: missing {missing}, "
                             f"extra {sorted(map(str, got - expected))[:5]}",
                             exchange, provenance=spec.provenance, parameter=name)


# -- documented defaults -------------------------------------------------------------------


@routine("laws", "defaults", order=3)
def check_defaults(gate: Gate) -> None:
    """Omitting a query parameter that documents a default answers as sending the default."""
    for op, params in lists(gate):
        fixed = params.get("query", {})
        for param in op.parameters:
            if param.location != "query" or param.default is None or param.name in fixed:
                continue
            default = param.default
            text = str(default).lower() if isinstance(default, bool) else default
            if param.name == "limit":
                omitted = gate.call(op, params=dict(fixed), path_params=params.get("path"))
                sent = gate.call(op, params={**fixed, "limit": default},
                                 path_params=params.get("path"))
            else:
                omitted = gate.call(op, params={**fixed, "limit": PAGE},
                                    path_params=params.get("path"))
                sent = gate.call(op, params={**fixed, "limit": PAGE, param.name: text},
                                 path_params=params.get("path"))
            gate.count("laws", 2)
            gate.law_walked("law_default", op, param.name)
            a, b = omitted.json(), sent.json()
            if omitted.status != 200 or sent.status != 200 or not isinstance(a, dict) \
                    or not isinstance(b, dict):
                continue
            if a.get("data") != b.get("data"):
                count = len(a.get("data") or [])
                fail(gate, "law_default", op,
                     f"omitting {param.name} does not answer as {param.name}={text} (its "
                     f"documented default): {count} item(s) vs {len(b.get('data') or [])}, "
                     "or a different order or content", omitted,
                     provenance=gate.doc.parameter_provenance(op, param.name),
                     parameter=param.name)


# -- namespaces ----------------------------------------------------------------------------


@routine("laws", "namespaces", order=4)
def check_namespaces(gate: Gate) -> None:
    """A list for workspace A holds only A's records (those that name a workspace), and the
    token's lists for two of its workspaces share no record."""
    assert gate.discovery is not None
    others = [w for w in gate.discovery.workspaces if w != gate.workspace]
    for op, params in lists(gate):
        items, exchange, _ = walk(gate, op, params, {}, max_pages=2)
        gate.law_walked("law_namespace", op, gate.workspace)
        foreign = [i for i in items if isinstance(i, dict) and "workspace_id" in i
                   and i["workspace_id"] not in (gate.workspace, None)]
        if foreign:
            fail(gate, "law_namespace", op,
                 f"a list for {gate.workspace} holds {item_key(foreign[0])!r} of workspace "
                 f"{foreign[0]['workspace_id']!r}", exchange)
            continue
        if not others or not _workspace_scoped(op):
            continue
        # Only records that belong to one workspace (users, say, belong to several).
        mine = {item_key(i) for i in items if isinstance(i, dict) and "workspace_id" in i}
        other_params = _for_workspace(op, params, others[0])
        theirs, other_exchange, _ = walk(gate, op, other_params, {}, max_pages=2)
        shared = sorted(map(str, mine & {item_key(i) for i in theirs} - {None}))
        if shared:
            fail(gate, "law_namespace", op,
                 f"the lists for {gate.workspace} and {others[0]} share {shared[:5]}",
                 other_exchange)


def _workspace_scoped(op: Operation) -> bool:
    return op.workspace_source == "path" or any(
        p.name == "workspace_id" and p.location == "query" and p.required for p in op.parameters)


def _for_workspace(op: Operation, params: dict[str, dict[str, Any]],
                   workspace: str) -> dict[str, dict[str, Any]]:
    copy = {k: dict(v) for k, v in params.items()}
    if op.workspace_source == "path":
        copy.setdefault("path", {})["id"] = workspace
    else:
        copy.setdefault("query", {})["workspace_id"] = workspace
    return copy
