"""The authentication matrix, over every selected operation.

- no token, a malformed header, an unknown token: 401 everywhere (documented);
- `--foreign-token` (a token of another workspace): requests for `--workspace` get 403, or
  403/404 for id-addressed resources, and no response carries a key of a record of that
  workspace (a namespace check as RESTler's: keys seen with the legitimate token must not
  appear in the foreign token's responses, its own workspace's lists included);
- `--read-token`: every write gets 403 (inferred status) and a follow-up read shows nothing
  changed.

Safety: without --allow-writes a write is only ever sent with an id that does not exist and a
body without its required fields, so even a server that ignores credentials changes nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..openapi.spec import Parameter
from .discovery import collect_ids, fill_required, sample_value
from .registry import declare, fail, routine

if TYPE_CHECKING:
    from ..openapi.spec import Operation
    from .gate import Gate
    from .violations import Exchange

__all__ = ["check_auth"]

declare("auth_401", family="auth", option="auth", proofs=[
    ("no token, malformed or unknown token → 401", "requests without a valid token accepted")])
declare("foreign_token_refused", family="auth", option="auth", proofs=[
    ("another workspace's token is refused",
     "workspace scoping ignored for another workspace's token")])
declare("foreign_namespace", family="auth", option="auth", proofs=[
    ("nothing of the workspace reaches another workspace's token",
     "workspace scoping ignored for another workspace's token")])
declare("foreign_write_changed_nothing", family="auth", option="auth",
        doc="another workspace's token's refused write changes nothing")
declare("read_token_write_refused", family="auth", option="auth", proofs=[
    ("a read-only token's writes → 403", "read-only token may write")])
declare("read_write_changed_nothing", family="auth", option="auth", proofs=[
    ("a read-only token's refused write changes nothing", "read-only token may write")])

UNKNOWN_TOKEN = "conform-unknown-token-7f3c9a"
MALFORMED = ("Bearer", "Token mock", "Basic Y29uZm9ybTpnYXRl")
MISSING_ID = "conform-nonexistent-0"
MISSING_NODE_ID = "ffffffffffffffffffffffff"


@routine("auth", "matrix")
def check_auth(gate: Gate) -> None:
    assert gate.discovery is not None
    for op in gate.operations():
        gate.progress(f"auth        {op.operation_id}")
        _unauthenticated(gate, op)
        if gate.config.foreign_token:
            _foreign(gate, op)
        if gate.config.read_token and not gate.doc.is_read(op):
            _read_only(gate, op)
    if gate.config.foreign_token:
        _foreign_own_workspace(gate)


def _placeholders(gate: Gate, op: Operation) -> dict[str, dict[str, Any]]:
    """Parameters with ids that cannot exist, and the workspace where one is needed."""
    params: dict[str, dict[str, Any]] = {}
    for param in op.parameters:
        if param.location == "path":
            if param.name == "id" and op.workspace_source == "path":
                continue
            value = MISSING_NODE_ID if param.name == "node_id" else MISSING_ID
            params.setdefault("path", {})[param.name] = value
    fill_required(op, params, gate.workspace)
    return params


def _real_or_placeholder(gate: Gate, op: Operation) -> dict[str, dict[str, Any]]:
    assert gate.discovery is not None
    return gate.discovery.ready(op) or _placeholders(gate, op)


def _harmless_body(gate: Gate, op: Operation) -> Any:
    """A body that cannot pass validation for a write (it lacks the required fields)."""
    if op.body_schema is None:
        return None
    props = gate.doc.spec.resolve(op.body_schema).get("properties", {})
    return {"workspace_id": gate.workspace} if "workspace_id" in props else {}


def _params_for(gate: Gate, op: Operation, *, real_writes: bool) -> dict[str, dict[str, Any]]:
    if gate.doc.is_read(op) or real_writes:
        return _real_or_placeholder(gate, op)
    return _placeholders(gate, op)


def _unauthenticated(gate: Gate, op: Operation) -> None:
    # Writes always go to an id that does not exist: nothing can change even if a server
    # ignores credentials, and a correct server answers 401 before looking anything up.
    params = _real_or_placeholder(gate, op) if gate.doc.is_read(op) else _placeholders(gate, op)
    body = _harmless_body(gate, op)
    variants: list[tuple[str, str | None]] = [("no token", None)]
    variants += [(f"malformed header {value!r}", value) for value in MALFORMED]
    variants.append(("unknown token", f"Bearer {UNKNOWN_TOKEN}"))
    for label, authorization in variants:
        exchange = gate.call(op, token=None, authorization=authorization,
                             params=params.get("query"), path_params=params.get("path"), body=body)
        gate.count("auth")
        if exchange.status != 401:
            fail(gate, "auth_401", op, f"{label}: answered {exchange.status}, expected 401",
                       exchange)


def _snapshot(gate: Gate, op: Operation, params: dict[str, dict[str, Any]]) -> tuple[Operation, Any] | None:
    reader = gate.doc.reader_of(op)
    if reader is None:
        return None
    path = {k: v for k, v in params.get("path", {}).items()
            if "{" + k + "}" in reader.path}
    exchange = gate.call(reader, path_params=path)
    return (reader, exchange.json()) if exchange.status == 200 else None


def _unchanged(gate: Gate, op: Operation, before: tuple[Operation, Any] | None,
               params: dict[str, dict[str, Any]], who: str, exchange: Exchange) -> None:
    if before is None:
        return
    after = _snapshot(gate, op, params)
    if after is not None and after[1] != before[1]:
        fail(gate, f"{who}_write_changed_nothing", op,
                   f"a refused write by the {who} token changed the resource "
                   f"(read back with {before[0].operation_id})", exchange)


def _foreign(gate: Gate, op: Operation) -> None:
    assert gate.discovery is not None
    token = gate.config.foreign_token
    is_read = gate.doc.is_read(op)
    if not is_read and not gate.config.allow_writes:
        return  # a foreign write token could write; only with --allow-writes, on real ids
    params = _params_for(gate, op, real_writes=True)
    before = None if is_read else _snapshot(gate, op, params)
    body = _harmless_body(gate, op) if not is_read else _read_body(gate, op)
    exchange = gate.call(op, token=token, params=params.get("query"),
                         path_params=params.get("path"), body=body)
    gate.count("auth")
    if op.workspace_source is not None:
        allowed = {403} if op.workspace_source in ("path", "query", "body") else {403, 404}
        if not is_read and body is not None:
            # Our write body lacks required fields, and the order of validation and access
            # checks is not documented: a 400 is a refusal too (the read-back still checks).
            allowed.add(400)
        if exchange.status not in allowed:
            fail(gate, "foreign_token_refused", op,
                       f"a token of another workspace answered {exchange.status}, expected "
                       f"{' or '.join(map(str, sorted(allowed)))}", exchange)
    _namespace(gate, op, exchange)
    if not is_read:
        _unchanged(gate, op, before, params, "foreign", exchange)


def _read_body(gate: Gate, op: Operation) -> Any:
    """A valid body for a read-only POST (a search): its required fields with sample values,
    so a refusal cannot come from validation."""
    if op.body_schema is None:
        return None
    schema = gate.doc.spec.resolve(op.body_schema)
    body: dict[str, Any] = {}
    for name in schema.get("required", []):
        prop = gate.doc.spec.resolve(schema.get("properties", {}).get(name, {}))
        body[name] = sample_value(Parameter(name, "body", True, prop, None))
    return body


def _namespace(gate: Gate, op: Operation, exchange: Exchange) -> None:
    assert gate.discovery is not None
    body = exchange.json()
    seen: set[str] = set()
    collect_ids(body, gate.workspace, seen)
    # Also any string value equal to a legitimate key (records of our workspace without their
    # workspace_id), except what the request itself named (an error may echo the id asked for).
    _strings(body, gate.discovery.ids, seen)
    asked = exchange.url + " " + repr(exchange.body)
    leaked = sorted(key for key in seen if key not in asked)
    if leaked:
        fail(gate, "foreign_namespace", op,
                   f"a token of another workspace received {len(leaked)} key(s) of workspace "
                   f"{gate.workspace!r}'s records: {leaked[:5]}", exchange, leaked=leaked[:20])


def _strings(body: Any, known: set[str], into: set[str]) -> None:
    if isinstance(body, str):
        if body in known:
            into.add(body)
    elif isinstance(body, dict):
        for value in body.values():
            _strings(value, known, into)
    elif isinstance(body, list):
        for value in body:
            _strings(value, known, into)


def _foreign_own_workspace(gate: Gate) -> None:
    """The foreign token's own lists must not hold our workspace's records either."""
    assert gate.discovery is not None
    token = gate.config.foreign_token
    listing = gate.call(gate.doc.op("listWorkspaces"), token=token)
    gate.count("auth")
    body = listing.json() if listing.status == 200 else {}
    own = [w.get("id") for w in (body or {}).get("data", []) if isinstance(w, dict)]
    _namespace(gate, gate.doc.op("listWorkspaces"), listing)
    theirs = next((w for w in own if w != gate.workspace), None)
    if theirs is None:
        return
    for operation_id in gate.discovery.roots:
        op = gate.doc.op(operation_id)
        if op.workspace_source not in ("path", "query") or not gate.select(op):
            continue
        params: dict[str, dict[str, Any]] = {}
        fill_required(op, params, theirs)
        exchange = gate.call(op, token=token, params=params.get("query"),
                             path_params=params.get("path"))
        gate.count("auth")
        _namespace(gate, op, exchange)


def _read_only(gate: Gate, op: Operation) -> None:
    params = _params_for(gate, op, real_writes=gate.config.allow_writes)
    before = _snapshot(gate, op, params) if gate.config.allow_writes else None
    exchange = gate.call(op, token=gate.config.read_token, params=params.get("query"),
                         path_params=params.get("path"), body=_harmless_body(gate, op))
    gate.count("auth")
    if exchange.status is not None and 200 <= exchange.status < 300:
        # "write endpoints require a token with write access" is documented.
        fail(gate, "read_token_write_refused", op,
                   f"a read-only token's write was accepted ({exchange.status}), expected 403",
                   exchange)
    elif exchange.status != 403:
        # Which status a read-only token's write gets is not shown in the description: the
        # document's 403 is inferred, so another refusal is a warning.
        fail(gate, "read_token_write_refused", op,
                   f"a read-only token's write answered {exchange.status}, expected 403",
                   exchange, provenance="inferred")
    _unchanged(gate, op, before, params, "read", exchange)
