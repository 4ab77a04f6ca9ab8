"""The control API over HTTP, under /__mock__/: its routes and who may call them.

Each route is an operation of `spec/control-openapi.yaml` (its own document, so the API's
document stays the API's) answered by the operation's handler in `operations.py` (the
registry; see there how to add an operation). Query parameters and bodies are validated
against the document with the same compiled validators as the mock's own operations;
refusals answer `{"error", "reason"}`. Off loopback the control API needs the configured
control token and is disabled without one: it can rewrite the server's state.
"""

from __future__ import annotations

import logging
import secrets
from typing import TYPE_CHECKING

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from ..engine.errors import ApiError, Forbidden, PayloadTooLarge
from ..engine.exchange import decode_body
from ..engine.requestlog import printable
from ..engine.responses import control_error_response, internal_error_body, json_response
from ..openapi.spec import Operation
from . import fixtureload
from .bind import is_loopback_address
from .operations import Handler, control_spec, prepare, registry, run, validators

if TYPE_CHECKING:
    from ..engine.app import MockApp

__all__ = ["CONTROL_HEADER", "check_access", "control_routes", "control_spec", "exposed",
           "is_loopback"]

CONTROL_HEADER = "x-mock-control-token"


def is_loopback(host: str) -> bool:
    """A host name or address that binds loopback only. `''` binds every interface."""
    if host == "localhost":
        return True
    return is_loopback_address(host.strip("[]"))


def exposed(mock: MockApp) -> list[str]:
    """Where the mock can be reached from off this host: the bound sockets that are not
    loopback (`Config.exposed`, set by `serve` once it bound them), else judged by the host."""
    config = mock.config
    if config.exposed is not None:
        return list(config.exposed)
    return [] if is_loopback(config.host) else [config.host or "every interface"]


def check_access(mock: MockApp, request: Request) -> None:
    """Control needs the control token when one is configured; without one, it is open only
    when every bound socket is loopback."""
    expected = mock.config.control_token
    if expected:
        given = request.headers.get(CONTROL_HEADER, "")
        if not secrets.compare_digest(given.encode(), expected.encode()):
            raise Forbidden("the control API needs the header X-Mock-Control-Token "
                            "(the server's --control-token)")
        return
    where = exposed(mock)
    if where:
        raise Forbidden(f"the control API is disabled: the mock listens on {', '.join(where)} "
                        "(not loopback) without a control token (start it with --control-token)")


async def read_raw_body(request: Request, limit: int) -> bytes:
    """A control request's body, refused (413) once more than `limit` bytes arrived, and
    decoded by its Content-Encoding (gzip, deflate; 415 for others) as the API's are."""
    chunks = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise PayloadTooLarge(f"request body is larger than {limit} bytes")
        chunks.append(chunk)
    body = b"".join(chunks)
    encoding = request.headers.get("content-encoding")
    return decode_body(body, encoding, limit) if encoding is not None and body else body


ERROR_LOGGER = logging.getLogger("mockserver.errors")  # as the pipeline's unexpected errors


def _route(mock: MockApp, operation: Operation, handler: Handler) -> Route:
    """The route of one operation of the control document: its path, method and success
    status come from spec/control-openapi.yaml, what it does from its registered handler."""
    operation_id, status = operation.operation_id, operation.success_status
    validator = validators()[operation_id]

    async def endpoint(request: Request) -> Response:
        try:
            check_access(mock, request)
            raw = None
            if validator.body_validator is not None:
                raw = await read_raw_body(request, mock.config.max_body_bytes)
            call = prepare(mock, mock.state_for(request.scope), operation_id,
                           request.path_params, request.query_params.multi_items(), raw,
                           request.headers.get("content-type"))
            if getattr(handler, "blocking", False):  # reads files (fixtureload.py, H18)
                result = await fixtureload.off_loop(run, handler, call)
            else:  # in memory at once; a shared state's off the event loop (replication/)
                result = await call.state.off_loop(run, handler, call, scope=request.scope)
        except ApiError as error:
            return control_error_response(error)
        except Exception as exc:  # a bug of ours: still answered {"error"}, and logged
            ERROR_LOGGER.error("unexpected error answering %s %s", request.method,
                               printable(request.url.path), exc_info=exc)
            return Response(internal_error_body(exc), status_code=500,
                            media_type="application/json")
        if status == 204:
            return Response(status_code=204)
        return json_response(status, result)

    return Route(operation.path, endpoint, methods=[operation.method], name=operation_id)


def control_routes(mock: MockApp) -> list[BaseRoute]:
    """One route per operation of spec/control-openapi.yaml, each to its registered handler
    (`operations.registry()`: RuntimeError when the two differ)."""
    handlers = registry()
    return [_route(mock, op, handlers[op.operation_id]) for op in control_spec().operations]
