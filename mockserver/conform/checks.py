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
from .violations import ErrorShapeViolation, Exchange, severity_for

if TYPE_CHECKING:
    from ..openapi.spec import Operation

__all__ = ["GATE_SCHEMAS", "error_shape_violation"]

# id() of a loaded schema's raw document -> Document, for schemas the gate loaded (see the
# module docstring). Keyed by the raw dict because filtered copies of a schema share it; the
# runner removes its entry when its run ends.
GATE_SCHEMAS: dict[int, Document] = {}


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
