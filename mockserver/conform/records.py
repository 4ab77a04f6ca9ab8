"""How a law finds and reads a record: the list that holds it, its GET, the operations on
one record of a collection, and a record under a parent no link of the document reached."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from .discovery import fill_required
from .document import item_key
from .law_walk import data_of, query_for, walk

if TYPE_CHECKING:
    from ..openapi.spec import Operation
    from .gate import Gate

__all__ = ["PARENTS", "collection_of", "member_operation", "read_record", "record_getter",
           "target_key", "through_parents"]

PARENTS = 20


def collection_of(gate: Gate, path: str) -> Operation | None:
    """The paginated GET listing the records addressed by `path` (up to its last parameter)."""
    index = path.rfind("/{")
    if index < 0:
        return None
    prefix = path[:index]
    for op in gate.doc.operations:
        if op.method == "GET" and op.path == prefix and op.paginated:
            return op
    return None


def record_getter(gate: Gate, op: Operation) -> Operation | None:
    for candidate in gate.doc.operations:
        if candidate.method == "GET" and candidate.path == op.path:
            return candidate
    return None


def read_record(gate: Gate, op: Operation, params: dict[str, dict[str, Any]], key: Any) -> Any:
    """The record `op` addresses as a read shows it: its GET, else found in its list."""
    getter = record_getter(gate, op)
    if getter is not None:
        return data_of(gate.call(getter, path_params=params.get("path"),
                               params=query_for(getter, params)))
    collection = collection_of(gate, op.path)
    if collection is None:
        return None
    path = {k: v for k, v in params.get("path", {}).items() if "{" + k + "}" in collection.path}
    items, _, _ = walk(gate, collection, {"path": path, "query": query_for(collection, params)},
                        {})
    return next((i for i in items if item_key(i) == key), None)


def target_key(op: Operation, params: dict[str, dict[str, Any]]) -> Any:
    names = re.findall(r"\{([^}]+)\}", op.path)
    return params.get("path", {}).get(names[-1]) if names else None


# Free-text fields first: patching them has no side effect a law would trip on.


def member_operation(gate: Gate, create: Operation, method: str) -> Operation | None:
    """The `method` operation on one record of the collection `create` adds to (GET or
    DELETE `/v1/agents/{id}` for createAgent)."""
    for op in gate.doc.operations:
        if op.method == method and op.path.startswith(create.path + "/{") \
                and op.path.count("/") == create.path.count("/") + 1:
            return op
    return None


def through_parents(gate: Gate, op: Operation) -> dict[str, dict[str, Any]] | None:
    """Parameters reaching a record under a parent (`/v1/tickets/{id}/notes/{note_id}`) that
    no link reached (the links follow the first parent, which may have none): the first
    record listed under one of the first PARENTS parents (at most PARENTS + 1 reads)."""
    assert gate.discovery is not None
    names = re.findall(r"\{([^}]+)\}", op.path)
    children = collection_of(gate, op.path)
    if len(names) != 2 or children is None:
        return None
    parents = collection_of(gate, children.path)
    found = gate.discovery.ready(parents) if parents is not None else None
    if parents is None or found is None:
        return None
    items, _, _ = walk(gate, parents, found, {}, limit=PARENTS, max_pages=1)
    for parent in items:
        params: dict[str, dict[str, Any]] = {"path": {names[0]: item_key(parent)}}
        fill_required(children, params, gate.workspace)
        listed, _, _ = walk(gate, children, params, {}, max_pages=1)
        if listed:
            params = {"path": {names[0]: item_key(parent), names[1]: item_key(listed[0])}}
            fill_required(op, params, gate.workspace)
            return params
    return None
