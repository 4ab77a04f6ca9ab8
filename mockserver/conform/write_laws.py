"""Laws over writes (only with --allow-writes), derived from the document for every operation
they apply to:

- read-your-writes: after every PATCH the next read shows each patched field; after a
  create, its record reads back through its GET with the fields sent;
- deletes stick: after every DELETE the next read is 404 and a second delete is 404;
- body defaults: a property a request body documents a default for, when omitted, is
  recorded with that default (a create's `enabled`, an escalation resolved as `resolved`);
- failed writes leave no trace: a PATCH (one valid field beside one of the wrong type, or a
  valid field for a workspace the token cannot access, documented: 403) or an action on a
  record (every POST on a path with an id: resolve, close, assign, run, a reply, a note ...)
  refused in the same ways changes nothing a read can see: not the record, not what is
  listed under it, and not the records it refers to by `<name>_id` (a note's ticket and
  contact, a conversation's `last_message_at`, a contact's `ai_paused`: counters other
  records keep); a create refused for a property of the wrong type leaves no record in its
  collection;
- hierarchy: a sub-resource addressed through a parent it does not belong to is 404 (reads
  are checked too, and without --allow-writes).

Records a law creates are deleted again where the API allows; fields a law patches are put back.
"""

from __future__ import annotations

import re
import uuid
from typing import TYPE_CHECKING, Any

from .discovery import fill_required
from .document import item_key
from .laws import _fail, _lists, _walk
from .violations import Exchange

if TYPE_CHECKING:
    from ..openapi.spec import Operation
    from .gate import Gate

__all__ = ["WRITE_LAWS", "check_hierarchy", "check_write_laws", "minimal_body"]

MARKER = "conformance law"


class _Skip(Exception):
    pass


def _schema(gate: Gate, schema: Any) -> dict[str, Any]:
    resolved = gate.doc.spec.resolve(schema)
    return resolved if isinstance(resolved, dict) else {}


def _value(gate: Gate, name: str, schema: dict[str, Any]) -> Any:
    schema = _schema(gate, schema)
    if name == "workspace_id":
        return gate.workspace
    if "default" in schema:
        return schema["default"]
    if schema.get("enum"):
        return schema["enum"][0]
    kind = schema.get("type")
    if kind == "boolean":
        return False
    if kind in ("integer", "number"):
        return schema.get("minimum", 1)
    if kind == "array":
        if schema.get("minItems"):
            raise _Skip(f"no value for the array {name}")
        return []
    if kind == "object":
        return {}
    if _is_string(schema) and not schema.get("format"):
        tag = uuid.uuid4().hex[:8]
        for text in (f"{MARKER} {tag}", f"conformance-law-{tag}", f"conformancelaw{tag}"):
            text = text[: schema.get("maxLength", len(text))]
            if not schema.get("pattern") or re.search(schema["pattern"], text):
                return text
    raise _Skip(f"no value for {name}")


def _is_string(schema: dict[str, Any]) -> bool:
    kind = schema.get("type")
    return kind == "string" or (isinstance(kind, list) and "string" in kind)


def minimal_body(gate: Gate, op: Operation) -> dict[str, Any]:
    """A body with only the required properties, each a plain valid value."""
    body = _schema(gate, op.body_schema)
    props = body.get("properties") or {}
    return {name: _value(gate, name, props.get(name, {})) for name in body.get("required") or []}


def _wrong_type(gate: Gate, schema: Any) -> Any:
    kind = _schema(gate, schema).get("type")
    return "not-a-boolean" if kind in ("boolean", "integer", "number", "array", "object") \
        else {"not": "a string"}


def _data(exchange: Exchange) -> Any:
    body = exchange.json()
    return body.get("data") if isinstance(body, dict) else None


def _collection(gate: Gate, path: str) -> Operation | None:
    """The paginated GET listing the records addressed by `path` (up to its last parameter)."""
    index = path.rfind("/{")
    if index < 0:
        return None
    prefix = path[:index]
    for op in gate.doc.operations:
        if op.method == "GET" and op.path == prefix and op.paginated:
            return op
    return None


def _getter(gate: Gate, op: Operation) -> Operation | None:
    for candidate in gate.doc.operations:
        if candidate.method == "GET" and candidate.path == op.path:
            return candidate
    return None


def _read(gate: Gate, op: Operation, params: dict[str, dict[str, Any]], key: Any) -> Any:
    """The record `op` addresses as a read shows it: its GET, else found in its list."""
    getter = _getter(gate, op)
    if getter is not None:
        return _data(gate.call(getter, path_params=params.get("path"),
                               params=_query_for(getter, params)))
    collection = _collection(gate, op.path)
    if collection is None:
        return None
    path = {k: v for k, v in params.get("path", {}).items() if "{" + k + "}" in collection.path}
    items, _, _ = _walk(gate, collection, {"path": path, "query": _query_for(collection, params)},
                        {})
    return next((i for i in items if item_key(i) == key), None)


def _query_for(op: Operation, params: dict[str, dict[str, Any]]) -> dict[str, Any]:
    names = {p.name for p in op.parameters if p.location == "query"}
    return {k: v for k, v in params.get("query", {}).items() if k in names}


def _target_key(op: Operation, params: dict[str, dict[str, Any]]) -> Any:
    names = re.findall(r"\{([^}]+)\}", op.path)
    return params.get("path", {}).get(names[-1]) if names else None


# Free-text fields first: patching them has no side effect a law would trip on.
_PREFERRED = ("description", "title", "instructions", "summary", "body", "content", "text")


def _patchable(gate: Gate, op: Operation) -> dict[str, Any]:
    """Up to two free-text properties of the body (no enum, pattern or format) and values."""
    props = _schema(gate, op.body_schema).get("properties") or {}
    names = sorted(props, key=lambda n: (_PREFERRED.index(n) if n in _PREFERRED else 99, n))
    fields = {}
    for name in names:
        schema = _schema(gate, props[name])
        if _is_string(schema) and not schema.get("enum") and not schema.get("pattern") \
                and not schema.get("format") and not name.endswith("_id") \
                and name in _PREFERRED:
            fields[name] = _value(gate, name, schema)
        if len(fields) == 2:
            break
    return fields


# -- read-your-writes and failed writes -----------------------------------------------------


def check_patches(gate: Gate) -> None:
    assert gate.discovery is not None
    for op in gate.operations(writes=True):
        if op.method != "PATCH":
            continue
        params = gate.discovery.ready(op) or _through_parents(gate, op)
        if params is None:
            gate.note(f"laws: read-your-writes and failed-write check skipped for "
                      f"{op.operation_id} (no record reached)")
            continue
        patch = _patchable(gate, op)
        # Failed writes leave no trace: one valid field beside one of the wrong type, and a
        # valid field for a workspace the token cannot access.
        _check_refused(gate, op, params, "a PATCH", dict(list(patch.items())[:1]))
        if not patch:
            gate.note(f"laws: read-your-writes skipped for {op.operation_id} "
                      "(no plain field to patch)")
            continue
        key = _target_key(op, params)
        before = _read(gate, op, params, key)
        if not isinstance(before, dict):
            gate.note(f"laws: read-your-writes skipped for {op.operation_id} (no read shows it)")
            continue
        query = _query_for(op, params)
        patched = gate.call(op, path_params=params.get("path"), params=query, body=patch)
        gate.count("laws")
        if patched.status != op.success_status:
            gate.refused(op, patched, f"laws: read-your-writes on {op.operation_id}")
            continue
        after = _read(gate, op, params, key)
        stale = {n: (after or {}).get(n) for n, v in patch.items()
                 if not isinstance(after, dict) or after.get(n) != v}
        if stale:
            _fail(gate, op, "law_read_your_writes",
                  f"the next read does not show the patched field(s) {sorted(stale)} "
                  f"(reads {stale})", patched)
        restore = {n: before[n] for n in patch if isinstance(before.get(n), str)}
        if restore:
            gate.call(op, path_params=params.get("path"), params=query, body=restore)


PARENTS = 20


def _through_parents(gate: Gate, op: Operation) -> dict[str, dict[str, Any]] | None:
    """Parameters reaching a record under a parent (`/v1/tickets/{id}/notes/{note_id}`) that
    no link reached (the links follow the first parent, which may have none): the first
    record listed under one of the first PARENTS parents (at most PARENTS + 1 reads)."""
    assert gate.discovery is not None
    names = re.findall(r"\{([^}]+)\}", op.path)
    children = _collection(gate, op.path)
    if len(names) != 2 or children is None:
        return None
    parents = _collection(gate, children.path)
    found = gate.discovery.ready(parents) if parents is not None else None
    if parents is None or found is None:
        return None
    items, _, _ = _walk(gate, parents, found, {}, limit=PARENTS, max_pages=1)
    for parent in items:
        params: dict[str, dict[str, Any]] = {"path": {names[0]: item_key(parent)}}
        fill_required(children, params, gate.workspace)
        listed, _, _ = _walk(gate, children, params, {}, max_pages=1)
        if listed:
            params = {"path": {names[0]: item_key(parent), names[1]: item_key(listed[0])}}
            fill_required(op, params, gate.workspace)
            return params
    return None


# -- creates: defaults, failed creates, deletes stick ---------------------------------------


def _creates(gate: Gate) -> list[Operation]:
    found = []
    for op in gate.operations(writes=True):
        if op.method == "POST" and op.success_status == 201 and op.body_schema is not None \
                and "{" not in op.path:
            found.append(op)
    return found


def _member_operation(gate: Gate, create: Operation, method: str) -> Operation | None:
    """The `method` operation on one record of the collection `create` adds to (GET or
    DELETE `/v1/agents/{id}` for createAgent)."""
    for op in gate.doc.operations:
        if op.method == method and op.path.startswith(create.path + "/{") \
                and op.path.count("/") == create.path.count("/") + 1:
            return op
    return None


def _collection_ids(gate: Gate, create: Operation) -> set[Any] | None:
    for op in gate.doc.operations:
        if op.method == "GET" and op.path == create.path and op.paginated:
            params = gate.discovery.ready(op) if gate.discovery else None
            if params is None:
                return None
            items, _, complete = _walk(gate, op, params, {})
            return {item_key(i) for i in items} if complete else None
    return None


def check_creates(gate: Gate) -> None:
    for op in _creates(gate):
        try:
            body = minimal_body(gate, op)
        except _Skip as skip:
            gate.note(f"laws: {op.operation_id} skipped ({skip})")
            continue
        props = _schema(gate, op.body_schema).get("properties") or {}
        # Failed writes leave no trace: a create with one property of the wrong type.
        optional = next((n for n in props if n not in body and n != "workspace_id"), None)
        if optional is not None:
            before = _collection_ids(gate, op)
            refused = gate.call(op, params=_create_query(gate, op),
                                body={**body, optional: _wrong_type(gate, props[optional])})
            gate.count("laws")
            after = _collection_ids(gate, op)
            if not 400 <= (refused.status or 0) < 500:
                _fail(gate, op, "law_failed_write",
                      f"a body with {optional} of the wrong type answered {refused.status}, "
                      "expected a 4xx", refused)
            elif before is not None and after is not None and after != before:
                _fail(gate, op, "law_failed_write",
                      f"a create refused with {refused.status} left a record "
                      f"{sorted(map(str, after - before))[:3]}", refused)
        created = gate.call(op, params=_create_query(gate, op), body=body)
        gate.count("laws")
        data = _data(created)
        if created.status != op.success_status or not isinstance(data, dict):
            gate.refused(op, created, f"laws: {op.operation_id} with only its required fields "
                         "(defaults, read-back and deletes not checked)")
            continue
        _check_body_defaults(gate, op, body, data, created)
        _check_create_visible(gate, op, body, data, created)
        deleter = _member_operation(gate, op, "DELETE")
        if deleter is not None:
            _check_delete_sticks(gate, deleter, item_key(data))


def _check_create_visible(gate: Gate, op: Operation, sent: dict[str, Any], data: dict[str, Any],
                          exchange: Exchange) -> None:
    """Read-your-writes for a create: the record it answered with reads back through its GET,
    with each sent field the answer showed as sent."""
    getter = _member_operation(gate, op, "GET")
    key = item_key(data)
    if getter is None or key is None:
        return
    name = re.findall(r"\{([^}]+)\}", getter.path)[-1]
    read = gate.call(getter, path_params={name: key})
    gate.count("laws")
    if read.status != getter.success_status:
        _fail(gate, op, "law_read_your_writes",
              f"the record just created ({exchange.status}, {name}={key}) reads "
              f"{read.status} on {getter.operation_id}", read)
        return
    shown = _data(read)
    stale = {n: (shown or {}).get(n) for n, v in sent.items()
             if data.get(n) == v and (not isinstance(shown, dict) or shown.get(n) != v)}
    if stale:
        _fail(gate, op, "law_read_your_writes",
              f"the read of the record just created ({name}={key}) does not show the created "
              f"field(s) {sorted(stale)} (reads {stale})", read)


def _create_query(gate: Gate, op: Operation) -> dict[str, Any]:
    return {p.name: gate.workspace for p in op.parameters
            if p.location == "query" and p.name == "workspace_id"}


def _check_body_defaults(gate: Gate, op: Operation, sent: dict[str, Any], data: dict[str, Any],
                         exchange: Exchange) -> None:
    props = _schema(gate, op.body_schema).get("properties") or {}
    for name, schema in props.items():
        schema = _schema(gate, schema)
        if "default" not in schema or name in sent or name not in data:
            continue
        if data[name] != schema["default"]:
            _fail(gate, op, "law_default",
                  f"{name} omitted from the body is recorded as {data[name]!r}, not its "
                  f"documented default {schema['default']!r}", exchange,
                  schema.get("x-provenance"), parameter=name)


def _check_delete_sticks(gate: Gate, op: Operation, key: Any) -> None:
    name = re.findall(r"\{([^}]+)\}", op.path)[-1]
    path = {name: key}
    first = gate.call(op, path_params=path, params={})
    gate.count("laws")
    if first.status != op.success_status:
        gate.refused(op, first, f"laws: deleting a record just created with {op.operation_id}")
        return
    getter = _getter(gate, op)
    if getter is not None:
        read = gate.call(getter, path_params=path)
        if read.status != 404:
            _fail(gate, op, "law_delete_sticks",
                  f"the read after a delete answered {read.status}, expected 404", read)
    again = gate.call(op, path_params=path)
    gate.count("laws", 2)
    if again.status != 404:
        _fail(gate, op, "law_delete_sticks",
              f"a second delete answered {again.status}, expected 404", again)


def check_action_defaults(gate: Gate) -> None:
    """Action POSTs (on a record) whose body documents a default: send `{}` to a record the
    action applies to and read the default back from the answer."""
    for op in gate.operations(writes=True):
        if op.method != "POST" or "{" not in op.path or op.body_schema is None:
            continue
        props = _schema(gate, op.body_schema).get("properties") or {}
        defaults = {n: _schema(gate, s)["default"] for n, s in props.items()
                    if "default" in _schema(gate, s) and not _schema(gate, op.body_schema).get(
                        "required")}
        collection = _collection(gate, op.path)
        if not defaults or collection is None or gate.discovery is None:
            continue
        params = gate.discovery.ready(collection)
        if params is None:
            continue
        items, _, _ = _walk(gate, collection, params, {}, max_pages=1)
        name = re.findall(r"\{([^}]+)\}", op.path)[-1]
        for item in items:
            field, default = next(iter(defaults.items()))
            if item.get(field) == default:
                continue
            answer = gate.call(op, path_params={name: item_key(item)},
                               params=_query_for(op, params), body={})
            gate.count("laws")
            data = _data(answer)
            if answer.status != op.success_status or not isinstance(data, dict):
                continue  # this record does not take the action (e.g. already resolved)
            for prop, value in defaults.items():
                if prop in data and data[prop] != value:
                    _fail(gate, op, "law_default",
                          f"{prop} omitted from the body is recorded as {data[prop]!r}, not "
                          f"its documented default {value!r}", answer, parameter=prop)
            break


# -- hierarchy -----------------------------------------------------------------------------


def check_hierarchy(gate: Gate) -> None:
    """A sub-resource addressed through a parent it does not belong to is 404."""
    assert gate.discovery is not None
    writes = gate.config.allow_writes
    for op in gate.operations(writes=None if writes else False):
        names = re.findall(r"\{([^}]+)\}", op.path)
        if len(names) < 2 or (op.workspace_source == "path" and names[0] == "id"
                              and op.path.startswith("/v1/workspaces/")):
            continue
        # A record no link reached (its first parent had none): one under another parent.
        params = gate.discovery.ready(op) or _through_parents(gate, op)
        if params is None:
            continue
        parent = names[0]
        current = params["path"][parent]
        other = _other_parent(gate, op.path[: op.path.index("{" + parent + "}") - 1], current)
        if other is None:
            continue
        body = _patchable(gate, op) if op.body_schema is not None else None
        wrong = gate.call(op, path_params={**params["path"], parent: other},
                          params=_query_for(op, params), body=body or None)
        gate.count("laws")
        if wrong.status != 404:
            _fail(gate, op, "law_hierarchy",
                  f"{names[-1]}={params['path'][names[-1]]!r} addressed through {parent}="
                  f"{other!r} (not its parent) answered {wrong.status}, expected 404", wrong)


def _other_parent(gate: Gate, prefix: str, current: Any) -> Any:
    """Another record of the parent's kind: from the list at `prefix`, else from a list whose
    path ends with the same collection name (workflows are listed under their workspace)."""
    last = prefix.rsplit("/", 1)[-1]
    for op, params in _lists(gate, selected=False):
        if op.path == prefix or op.path.endswith("/" + last):
            items, _, _ = _walk(gate, op, params, {}, max_pages=1)
            for item in items:
                key = item_key(item)
                if key is not None and key != current:
                    return key
    return None


# -- failed actions leave no trace -----------------------------------------------------------

NO_SUCH_WORKSPACE = "conformance-law-no-such-workspace"


def _actions(gate: Gate) -> list[Operation]:
    """Writes that act on a record: POSTs on a path that addresses one by id."""
    return [op for op in gate.operations(writes=True)
            if op.method == "POST" and "{" in op.path and gate.doc.is_write(op)]


def _witnesses(gate: Gate, op: Operation, params: dict[str, dict[str, Any]],
               ) -> dict[str, tuple[Operation, dict[str, dict[str, Any]]]]:
    """The reads that show what a write to a record could change, from the document's
    paths: the record's GET (else a list of its kind that shows it), every list under the
    record, and the GET of each record it refers to by a `<name>_id` field
    (`/v1/<name>s/{id}`)."""
    record_path = op.path[: op.path.rindex("}") + 1]
    path = {k: v for k, v in params.get("path", {}).items() if "{" + k + "}" in record_path}
    reads: dict[str, tuple[Operation, dict[str, dict[str, Any]]]] = {}
    for candidate in gate.doc.operations:
        if candidate.method != "GET" or not gate.doc.is_read(candidate):
            continue
        if candidate.path == record_path or (
                candidate.paginated and candidate.path.startswith(record_path + "/")
                and candidate.path.count("{") == record_path.count("{")):
            reads[candidate.path] = (candidate, {"path": path,
                                                 "query": _query_for(candidate, params)})
    getter = reads.get(record_path)
    if getter is not None:
        record = _data(gate.call(getter[0], path_params=path, params=getter[1]["query"]))
        gate.count("laws")
    else:
        record = _listed(gate, record_path, params, reads)
    for name, value in (record or {}).items() if isinstance(record, dict) else ():
        if not (name.endswith("_id") and isinstance(value, str) and value):
            continue
        target = f"/v1/{name[:-3]}s/{{id}}"
        for candidate in gate.doc.operations:
            if candidate.method == "GET" and candidate.path == target \
                    and target not in reads:
                reads[f"{target} ({name}={value})"] = (candidate, {"path": {"id": value},
                                                                   "query": {}})
    return reads


def _listed(gate: Gate, record_path: str, params: dict[str, dict[str, Any]],
            reads: dict[str, tuple[Operation, dict[str, dict[str, Any]]]]) -> Any:
    """A record without a GET of its own, as the first page of a list of its kind shows it
    (a ticket's notes; workflows, listed under their workspace), which becomes a witness."""
    assert gate.discovery is not None
    key = params.get("path", {}).get(re.findall(r"\{([^}]+)\}", record_path)[-1])
    prefix = record_path[: record_path.rfind("/{")]
    last = prefix.rsplit("/", 1)[-1]
    candidates: list[tuple[Operation, dict[str, dict[str, Any]]]] = []
    for candidate in gate.doc.operations:
        if candidate.method != "GET" or not candidate.paginated:
            continue
        if candidate.path == prefix:
            candidates.insert(0, (candidate, {
                "path": {k: v for k, v in params.get("path", {}).items()
                         if "{" + k + "}" in prefix},
                "query": _query_for(candidate, params)}))
        elif candidate.path.endswith("/" + last):
            found = gate.discovery.ready(candidate)
            if found is not None:
                candidates.append((candidate, found))
    for candidate, found in candidates:
        items, _, _ = _walk(gate, candidate, found, {}, max_pages=1)
        record = next((i for i in items if item_key(i) == key), None)
        if record is not None:
            reads[candidate.path] = (candidate, found)
            return record
    return None


def _observe(gate: Gate, reads: dict[str, tuple[Operation, dict[str, dict[str, Any]]]],
             ) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    for label, (read, params) in reads.items():
        if read.paginated:
            items, _, _ = _walk(gate, read, params, {}, max_pages=1)
            seen[label] = items
        else:
            exchange = gate.call(read, path_params=params.get("path"),
                                 params=params.get("query") or None)
            gate.count("laws")
            seen[label] = (exchange.status, _data(exchange))
    return seen


def _refusals(gate: Gate, op: Operation, params: dict[str, dict[str, Any]],
              base: dict[str, Any] | None = None) -> list[tuple[str, dict[str, Any], Any]]:
    """(what is wrong, query, body) of requests the write must refuse, around a valid `base`
    body (by default the required properties, each a plain valid value)."""
    query = _query_for(op, params)
    body_schema = _schema(gate, op.body_schema)
    props = body_schema.get("properties") or {}
    body: dict[str, Any] | None = base
    if op.body_schema is not None and base is None:
        try:
            body = {name: _value(gate, name, props.get(name, {}))
                    for name in body_schema.get("required") or []}
        except _Skip:
            body = None
    found: list[tuple[str, dict[str, Any], Any]] = []
    # An optional property of the wrong type beside valid required ones (else any property).
    candidates = [n for n in props if n != "workspace_id"]
    name = next((n for n in candidates if n not in (body or {})),
                candidates[0] if candidates else None)
    if body is not None and name is not None:
        found.append((f"{name} of the wrong type", query,
                      {**body, name: _wrong_type(gate, props[name])}))
    if any(p.name == "workspace_id" and p.location == "query" for p in op.parameters):
        found.append((f"workspace_id={NO_SUCH_WORKSPACE} (no access)",
                      {**query, "workspace_id": NO_SUCH_WORKSPACE}, body))
    return found


def _record_params(gate: Gate, op: Operation) -> dict[str, dict[str, Any]] | None:
    """Parameters reaching the record an action addresses, through the record's GET (for
    actions no link of the document leads to)."""
    assert gate.discovery is not None
    record_path = op.path[: op.path.rindex("}") + 1]
    for candidate in gate.doc.operations:
        if candidate.method == "GET" and candidate.path == record_path:
            return gate.discovery.ready(candidate)
    return None


def check_failed_actions(gate: Gate) -> None:
    """An action refused with a 4xx changes nothing a read can see: the record, what is
    listed under it, and the records it refers to."""
    assert gate.discovery is not None
    for op in _actions(gate):
        params = gate.discovery.ready(op) or _record_params(gate, op)
        if params is None:
            gate.note(f"laws: failed-write check skipped for {op.operation_id} "
                      "(no record reached)")
            continue
        _check_refused(gate, op, params, "an action")


def _check_refused(gate: Gate, op: Operation, params: dict[str, dict[str, Any]], what: str,
                   base: dict[str, Any] | None = None) -> None:
    """Send `op` the requests it must refuse (`_refusals` around `base`): each answers a
    4xx and leaves every witness of the record reading as before."""
    reads = _witnesses(gate, op, params)
    refusals = _refusals(gate, op, params, base)
    if not reads or not refusals:
        gate.note(f"laws: failed-write check skipped for {op.operation_id} "
                  f"({'no read shows its record' if not reads else 'no refusal to send'})")
        return
    before = _observe(gate, reads)
    for wrong, query, body in refusals:
        refused = gate.call(op, path_params=params.get("path"), params=query, body=body)
        gate.count("laws")
        if not 400 <= (refused.status or 0) < 500:
            _fail(gate, op, "law_failed_write",
                  f"{what} with {wrong} answered {refused.status}, expected a 4xx", refused)
            before = _observe(gate, reads)  # it was applied: compare from here on
            continue
        after = _observe(gate, reads)
        changed = [label for label in reads if after.get(label) != before.get(label)]
        if changed:
            _fail(gate, op, "law_failed_write",
                  f"{what} refused with {refused.status} ({wrong}) changed what "
                  f"{', '.join(changed)} reads", refused, changed=changed)
            before = after


WRITE_LAWS = {
    "read-your-writes": check_patches,
    "creates": check_creates,
    "action-defaults": check_action_defaults,
    "failed-actions": check_failed_actions,
}


def check_write_laws(gate: Gate) -> None:
    for name, law in WRITE_LAWS.items():
        gate.progress(f"laws        {name}")
        law(gate)
