"""Checks that apply to any single response: the error shape and documented error statuses.

`error_shape_violation` is used twice: on every exchange the gate's own checks make, and as a
schemathesis custom check (`conform_error_shape`) on every response of its phases. The custom
check is registered globally (schemathesis has no per-run registry), so it only acts on schemas
the gate loaded itself (`GATE_SCHEMAS`) and is a no-op in anybody else's schemathesis run.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import schemathesis

from .document import Document
from .registry import declare
from .violations import ErrorShapeViolation, Exchange, SchemathesisViolation, severity_for

if TYPE_CHECKING:
    from ..openapi.spec import Operation

__all__ = ["GATE_SCHEMAS", "created_record", "error_shape_violation"]

# id() of a loaded schema's raw document -> Document, for schemas the gate loaded (see the
# module docstring). Keyed by the raw dict because filtered copies of a schema share it; the
# runner removes its entry when its run ends.
GATE_SCHEMAS: dict[int, Document] = {}

declare("error_shape", family="error-shape", option=None, proofs=[
    ('every 4xx body is exactly `{"error": string}`', "error body with an extra key")])
declare("error_status_documented", family="error-shape", option=None, proofs=[
    ("every 4xx is a status the operation documents", "undocumented 4xx status")])


def error_shape_violation(doc: Document, op: Operation, exchange: Exchange) -> ErrorShapeViolation | None:
    """A 4xx must be documented for the operation and its body exactly `{"error": string}`.

    A request with a method the path does not have (schemathesis' coverage phase sends some)
    is held to the shape only: its 405 belongs to no operation."""
    status = exchange.status
    if status is None or not 400 <= status < 500:
        return None
    documented = doc.documented_statuses(op)
    response = op.responses.get(status, {})
    provenance = doc.weakest(op.provenance, response.get("x-provenance"))
    if status not in documented and exchange.method.upper() == op.method:
        return ErrorShapeViolation(
            f"{status} is not a documented status of {op.operation_id} "
            f"(documented: {', '.join(map(str, sorted(documented)))})",
            check="error_status_documented", operation=op.operation_id,
            severity=severity_for(op.provenance), exchange=exchange,
        )
    problem = shape_problem(exchange.response_text)
    if problem is not None:
        return ErrorShapeViolation(
            f"{status} body is not exactly {{\"error\": string}}: {problem}",
            check="error_shape", operation=op.operation_id,
            severity=severity_for(provenance), exchange=exchange,
        )
    return None


def shape_problem(text: str) -> str | None:
    try:
        body = json.loads(text)
    except ValueError:
        return f"not JSON: {text[:80]!r}"
    if not isinstance(body, dict):
        return f"not an object: {type(body).__name__}"
    extra = sorted(set(body) - {"error"})
    if extra:
        return f"unexpected keys {extra}"
    if "error" not in body:
        return "no 'error' key"
    if not isinstance(body["error"], str) or not body["error"]:
        return f"'error' is not a non-empty string: {body['error']!r}"
    return None


@schemathesis.check
def conform_error_shape(ctx: schemathesis.CheckContext, response: schemathesis.Response,
                        case: schemathesis.Case) -> bool | None:
    """Every 4xx is documented for its operation and shaped exactly `{"error": string}`."""
    doc = GATE_SCHEMAS.get(id(case.operation.schema.raw_schema))
    if doc is None:
        return None
    op = doc.by_id.get(case.operation.definition.raw.get("operationId", ""))
    if op is None:
        return None
    exchange = Exchange(method=case.method.upper(), url=response.request.url or "",
                        status=response.status_code, response_text=response.text or "")
    violation = error_shape_violation(doc, op, exchange)
    if violation is not None:
        raise violation
    return None


def _gate_op(case: schemathesis.Case) -> tuple[Document, Operation] | None:
    doc = GATE_SCHEMAS.get(id(case.operation.schema.raw_schema))
    if doc is None:
        return None
    op = doc.by_id.get(case.operation.definition.raw.get("operationId", ""))
    return None if op is None else (doc, op)


@schemathesis.check
def conform_coverage_rejection(ctx: schemathesis.CheckContext, response: schemathesis.Response,
                               case: schemathesis.Case) -> bool | None:
    """negative_data_rejection for the coverage phase, judged on the request as sent.

    schemathesis' own check drops a coverage case that negates one query parameter whenever
    another query parameter of the request is valid (its `_single_element_array_becomes_valid_
    after_serialization` treats any neutralised parameter as the mutated one when a coverage
    case has no mutation records; schemathesis 4.32). Every operation scoped by a
    `workspace_id` query parameter sends a valid one, so `limit=0`, `limit=101`, `limit=AAA`
    were never reported. Here: a negative coverage case answered with anything but a
    documented 4xx (other than 429) fails when the request that went over the wire breaks the
    document (`wire.invalid_part`); a 5xx is left to `not_a_server_error`."""
    from schemathesis.generation.meta import CoveragePhaseData

    from .wire import invalid_part

    found = _gate_op(case)
    meta = case.meta
    if found is None or meta is None or not isinstance(meta.phase.data, CoveragePhaseData) \
            or not meta.generation.mode.is_negative:
        return None
    doc, op = found
    status = response.status_code
    if case.method.upper() != op.method or status >= 500 or (
            400 <= status < 500 and status != 429 and status in doc.documented_statuses(op)):
        return None
    request = response.request
    headers = {str(k): str(v) for k, v in request.headers.items()}
    body = request.body if isinstance(request.body, bytes | str) else None
    invalid = invalid_part(doc, op, request.method or case.method, request.url or "", headers,
                           body)
    if invalid is None:
        return None
    raise SchemathesisViolation(
        f"Schema-violating request accepted: the request sent breaks the document at {invalid}, "
        f"yet was answered {status}", check="negative_data_rejection",
        operation=op.operation_id, severity=severity_for(op.provenance),
        exchange=Exchange(method=request.method or case.method, url=request.url or "",
                          headers=headers, body=body, status=status,
                          response_text=response.text or ""),
        details={"invalid_part": invalid.part, "rule": invalid.rule})


@schemathesis.check
def conform_resource_availability(ctx: schemathesis.CheckContext, response: schemathesis.Response,
                                  case: schemathesis.Case) -> bool | None:
    """schemathesis' `ensure_resource_availability`, except for the 404 the document promises.

    The built-in check fails any 404 on a link followed from a successful create when every
    parameter of the request came from the link or the configuration. The gate fixes the
    `workspace_id` query parameter to the workspace under test, and on an id-addressed
    operation that parameter is an override: "when given and it does not hold the resource,
    the answer is 404". A create whose body names another workspace the token can write to
    (schemathesis reuses values it saw in responses, such as `ws_alpine` from
    /v1/workspaces) is then rightly answered 404 when addressed with `workspace_id` of the
    workspace under test. That 404 is no loss: it is dropped when the created record's
    `workspace_id` differs from the override the request sent.

    Nor does the built-in check that the 404 addressed the created record at all. When the
    gate pinned path ids in the stateful phase too (schemathesis lets configuration win over
    a link's value), the request after a create went to the discovered record, and a 404
    there (a record the run's own DELETEs removed) was reported as a lost create. The stateful
    phase now runs without those pins (phases.py), so the link's id is the created one; a 404
    is still dropped unless a path parameter of the request is the created record's `id`.
    A 404 on the created record itself, in its own workspace, fails (planted defect: a create
    that keeps nothing)."""
    from schemathesis.specs.openapi.checks import ensure_resource_availability

    if _gate_op(case) is None:
        return None
    try:
        return ensure_resource_availability(ctx, response, case)
    except AssertionError:
        override = (case.query or {}).get("workspace_id")
        parent = ctx.internals.find_parent(case_id=case.id)
        created = ctx.internals.find_response(case_id=parent.id) if parent is not None else None
        record = created_record(created.text if created is not None else None)
        if record is None:
            raise
        addressed = {str(v) for v in (case.path_parameters or {}).values()}
        if record.get("id") not in addressed:
            return None  # the link's request went to another record (a pinned id)
        if override is not None and record.get("workspace_id") not in (None, override):
            return None  # documented: an override that does not hold the record is 404
        raise


def created_record(text: str | None) -> dict[str, object] | None:
    """The record a create answered with (`{"data": {...}}`), if the body is one."""
    try:
        body = json.loads(text or "")
    except ValueError:
        return None
    data = body.get("data") if isinstance(body, dict) else None
    return data if isinstance(data, dict) else None
