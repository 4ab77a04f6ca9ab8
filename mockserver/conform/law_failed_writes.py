"""Failed writes leave no trace: a PATCH or an action on a record (every POST on a path with
an id: resolve, close, assign, run, a reply, a note ...) refused with a 4xx (a property of the
wrong type; a valid field for a workspace the token cannot access, documented: 403) changes
nothing a read can see: not the record, not what is listed under it, and not the records it
refers to by `<name>_id` (a note's ticket and contact, a conversation's `last_message_at`, a
contact's `ai_paused`: counters other records keep). Only with --allow-writes."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from .bodies import plain_value, resolved, wrong_type
from .document import item_key
from .law_walk import data_of, query_for, walk
from .registry import Skip, declare, fail, routine

if TYPE_CHECKING:
    from ..openapi.spec import Operation
    from .gate import Gate

__all__ = ["NO_SUCH_WORKSPACE", "check_failed_actions", "check_refused", "witnesses"]

NO_SUCH_WORKSPACE = "conformance-law-no-such-workspace"

declare("law_failed_write", family="laws", option="laws", writes=True, proofs=[
    ("every PATCH refused with a 4xx (one valid field beside one of the wrong type; a valid "
     "field for a workspace without access) changes nothing: the record (its GET, else the "
     "list that shows it) and the lists under it", "refused PATCH half applied"),
    ("the same, for the records a PATCHed record refers to by `<name>_id` (a ticket note's "
     "ticket and contact)", "refused PATCH flips a record it refers to"),
    ("an action on a record (every POST on an id: resolve, close, assign, run, reply, note "
     "...) refused with a 4xx (a property of the wrong type, a workspace without access) "
     "changes nothing: the record and the lists under it", "refused action half applied"),
    ("the same, for the records it refers to by `<name>_id` (counters and flags other records "
     "keep)", "refused action flips another record"),
    ("a create refused with a 4xx (a property of the wrong type) leaves no record in its "
     "collection", "refused create stored anyway")])


def _actions(gate: Gate) -> list[Operation]:
    """Writes that act on a record: POSTs on a path that addresses one by id."""
    return [op for op in gate.operations(writes=True)
            if op.method == "POST" and "{" in op.path and gate.doc.is_write(op)]


def witnesses(gate: Gate, op: Operation, params: dict[str, dict[str, Any]],
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
                                                 "query": query_for(candidate, params)})
    getter = reads.get(record_path)
    if getter is not None:
        record = data_of(gate.call(getter[0], path_params=path, params=getter[1]["query"]))
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
                "query": query_for(candidate, params)}))
        elif candidate.path.endswith("/" + last):
            found = gate.discovery.ready(candidate)
            if found is not None:
                candidates.append((candidate, found))
    for candidate, found in candidates:
        items, _, _ = walk(gate, candidate, found, {}, max_pages=1)
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
            items, _, _ = walk(gate, read, params, {}, max_pages=1)
            seen[label] = items
        else:
            exchange = gate.call(read, path_params=params.get("path"),
                                 params=params.get("query") or None)
            gate.count("laws")
            seen[label] = (exchange.status, data_of(exchange))
    return seen


def _refusals(gate: Gate, op: Operation, params: dict[str, dict[str, Any]],
              base: dict[str, Any] | None = None) -> list[tuple[str, dict[str, Any], Any]]:
    """(what is wrong, query, body) of requests the write must refuse, around a valid `base`
    body (by default the required properties, each a plain valid value)."""
    query = query_for(op, params)
    body_schema = resolved(gate, op.body_schema)
    props = body_schema.get("properties") or {}
    body: dict[str, Any] | None = base
    if op.body_schema is not None and base is None:
        try:
            body = {name: plain_value(gate, name, props.get(name, {}))
                    for name in body_schema.get("required") or []}
        except Skip:
            body = None
    found: list[tuple[str, dict[str, Any], Any]] = []
    # An optional property of the wrong type beside valid required ones (else any property).
    candidates = [n for n in props if n != "workspace_id"]
    name = next((n for n in candidates if n not in (body or {})),
                candidates[0] if candidates else None)
    if body is not None and name is not None:
        found.append((f"{name} of the wrong type", query,
                      {**body, name: wrong_type(gate, props[name])}))
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


@routine("write-laws", "failed-actions", order=4)
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
        check_refused(gate, op, params, "an action")


def check_refused(gate: Gate, op: Operation, params: dict[str, dict[str, Any]], what: str,
                   base: dict[str, Any] | None = None) -> None:
    """Send `op` the requests it must refuse (`_refusals` around `base`): each answers a
    4xx and leaves every witness of the record reading as before."""
    reads = witnesses(gate, op, params)
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
            fail(gate, "law_failed_write", op,
                  f"{what} with {wrong} answered {refused.status}, expected a 4xx", refused)
            before = _observe(gate, reads)  # it was applied: compare from here on
            continue
        after = _observe(gate, reads)
        changed = [label for label in reads if after.get(label) != before.get(label)]
        if changed:
            fail(gate, "law_failed_write", op,
                  f"{what} refused with {refused.status} ({wrong}) changed what "
                  f"{', '.join(changed)} reads", refused, changed=changed)
            before = after
