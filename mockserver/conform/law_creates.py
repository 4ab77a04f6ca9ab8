"""Laws over creates and deletes (only with --allow-writes): a create refused for a property of
the wrong type leaves no record; a create's body defaults are recorded (and an action's, such
as an escalation resolved as `resolved`); the created record reads back through its GET; after
a DELETE the read is 404 and a second delete is 404. Records created are deleted again."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from .bodies import minimal_body, resolved, wrong_type
from .document import item_key
from .law_walk import data_of, query_for, walk
from .records import collection_of, member_operation, record_getter
from .registry import Skip, declare, fail, routine

if TYPE_CHECKING:
    from ..openapi.spec import Operation
    from .gate import Gate
    from .violations import Exchange

__all__ = ["check_action_defaults", "check_creates"]

declare("law_delete_sticks", family="laws", option="laws", writes=True, proofs=[
    ("after every DELETE the read is 404 and a second delete 404", "delete does not stick")])


def _creates(gate: Gate) -> list[Operation]:
    found = []
    for op in gate.operations(writes=True):
        if op.method == "POST" and op.success_status == 201 and op.body_schema is not None \
                and "{" not in op.path:
            found.append(op)
    return found


def _collection_ids(gate: Gate, create: Operation) -> set[Any] | None:
    for op in gate.doc.operations:
        if op.method == "GET" and op.path == create.path and op.paginated:
            params = gate.discovery.ready(op) if gate.discovery else None
            if params is None:
                return None
            items, _, complete = walk(gate, op, params, {})
            return {item_key(i) for i in items} if complete else None
    return None


@routine("write-laws", "creates", order=2)
def check_creates(gate: Gate) -> None:
    for op in _creates(gate):
        try:
            body = minimal_body(gate, op)
        except Skip as skip:
            gate.note(f"laws: {op.operation_id} skipped ({skip})")
            continue
        props = resolved(gate, op.body_schema).get("properties") or {}
        # Failed writes leave no trace: a create with one property of the wrong type.
        optional = next((n for n in props if n not in body and n != "workspace_id"), None)
        if optional is not None:
            before = _collection_ids(gate, op)
            refused = gate.call(op, params=_create_query(gate, op),
                                body={**body, optional: wrong_type(gate, props[optional])})
            gate.count("laws")
            after = _collection_ids(gate, op)
            if not 400 <= (refused.status or 0) < 500:
                fail(gate, "law_failed_write", op,
                      f"a body with {optional} of the wrong type answered {refused.status}, "
                      "expected a 4xx", refused)
            elif before is not None and after is not None and after != before:
                fail(gate, "law_failed_write", op,
                      f"a create refused with {refused.status} left a record "
                      f"{sorted(map(str, after - before))[:3]}", refused)
        created = gate.call(op, params=_create_query(gate, op), body=body)
        gate.count("laws")
        data = data_of(created)
        if created.status != op.success_status or not isinstance(data, dict):
            gate.refused(op, created, f"laws: {op.operation_id} with only its required fields "
                         "(defaults, read-back and deletes not checked)")
            continue
        _check_body_defaults(gate, op, body, data, created)
        _check_create_visible(gate, op, body, data, created)
        deleter = member_operation(gate, op, "DELETE")
        if deleter is not None:
            _check_delete_sticks(gate, deleter, item_key(data))


def _check_create_visible(gate: Gate, op: Operation, sent: dict[str, Any], data: dict[str, Any],
                          exchange: Exchange) -> None:
    """Read-your-writes for a create: the record it answered with reads back through its GET,
    with each sent field the answer showed as sent."""
    getter = member_operation(gate, op, "GET")
    key = item_key(data)
    if getter is None or key is None:
        return
    name = re.findall(r"\{([^}]+)\}", getter.path)[-1]
    read = gate.call(getter, path_params={name: key})
    gate.count("laws")
    if read.status != getter.success_status:
        fail(gate, "law_read_your_writes", op,
              f"the record just created ({exchange.status}, {name}={key}) reads "
              f"{read.status} on {getter.operation_id}", read)
        return
    shown = data_of(read)
    stale = {n: (shown or {}).get(n) for n, v in sent.items()
             if data.get(n) == v and (not isinstance(shown, dict) or shown.get(n) != v)}
    if stale:
        fail(gate, "law_read_your_writes", op,
              f"the read of the record just created ({name}={key}) does not show the created "
              f"field(s) {sorted(stale)} (reads {stale})", read)


def _create_query(gate: Gate, op: Operation) -> dict[str, Any]:
    return {p.name: gate.workspace for p in op.parameters
            if p.location == "query" and p.name == "workspace_id"}


def _check_body_defaults(gate: Gate, op: Operation, sent: dict[str, Any], data: dict[str, Any],
                         exchange: Exchange) -> None:
    props = resolved(gate, op.body_schema).get("properties") or {}
    for name, schema in props.items():
        schema = resolved(gate, schema)
        if "default" not in schema or name in sent or name not in data:
            continue
        if data[name] != schema["default"]:
            fail(gate, "law_default", op,
                  f"{name} omitted from the body is recorded as {data[name]!r}, not its "
                  f"documented default {schema['default']!r}", exchange,
                 provenance=schema.get("x-provenance"), parameter=name)


def _check_delete_sticks(gate: Gate, op: Operation, key: Any) -> None:
    name = re.findall(r"\{([^}]+)\}", op.path)[-1]
    path = {name: key}
    first = gate.call(op, path_params=path, params={})
    gate.count("laws")
    if first.status != op.success_status:
        gate.refused(op, first, f"laws: deleting a record just created with {op.operation_id}")
        return
    getter = record_getter(gate, op)
    if getter is not None:
        read = gate.call(getter, path_params=path)
        if read.status != 404:
            fail(gate, "law_delete_sticks", op,
                  f"the read after a delete answered {read.status}, expected 404", read)
    again = gate.call(op, path_params=path)
    gate.count("laws", 2)
    if again.status != 404:
        fail(gate, "law_delete_sticks", op,
              f"a second delete answered {again.status}, expected 404", again)


@routine("write-laws", "action-defaults", order=3)
def check_action_defaults(gate: Gate) -> None:
    """Action POSTs (on a record) whose body documents a default: send `{}` to a record the
    action applies to and read the default back from the answer."""
    for op in gate.operations(writes=True):
        if op.method != "POST" or "{" not in op.path or op.body_schema is None:
            continue
        props = resolved(gate, op.body_schema).get("properties") or {}
        defaults = {n: resolved(gate, s)["default"] for n, s in props.items()
                    if "default" in resolved(gate, s) and not resolved(gate, op.body_schema).get(
                        "required")}
        collection = collection_of(gate, op.path)
        if not defaults or collection is None or gate.discovery is None:
            continue
        params = gate.discovery.ready(collection)
        if params is None:
            continue
        items, _, _ = walk(gate, collection, params, {}, max_pages=1)
        name = re.findall(r"\{([^}]+)\}", op.path)[-1]
        for item in items:
            field, default = next(iter(defaults.items()))
            if item.get(field) == default:
                continue
            answer = gate.call(op, path_params={name: item_key(item)},
                               params=query_for(op, params), body={})
            gate.count("laws")
            data = data_of(answer)
            if answer.status != op.success_status or not isinstance(data, dict):
                continue  # this record does not take the action (e.g. already resolved)
            for prop, value in defaults.items():
                if prop in data and data[prop] != value:
                    fail(gate, "law_default", op,
                          f"{prop} omitted from the body is recorded as {data[prop]!r}, not "
                          f"its documented default {value!r}", answer, parameter=prop)
            break
