"""The control API under /__mock__/: reset, journal, faults, clock, rate limits, fixtures,
records.

Its shapes live in `spec/control-openapi.yaml` (its own document, so the API's document stays
the API's); query parameters and bodies are validated against it with the same compiled
validators as the mock's own operations. Off loopback the control API needs the configured
control token and is disabled without one: it can rewrite the server's state.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import secrets
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from ..data.fixtures import FixtureError, load_dataset
from ..engine.clock import parse_clock
from ..engine.errors import ApiError, BadRequest, Forbidden, NotFound, PayloadTooLarge
from ..engine.exchange import decode_body
from ..engine.records import add_record, get_record, no_record
from ..engine.requestlog import printable
from ..engine.responses import error_response, json_response
from ..engine.sessions import DEFAULT_SESSION
from ..engine.validation import RequestValidator
from ..openapi.spec import Operation, Spec, data_dir
from ..openapi.yamlload import load_yaml
from ..robust.control import clear_variations, get_variations, set_variations
from .bind import is_loopback_address
from .progression import ENDPOINTS as PROGRESSION_ENDPOINTS

if TYPE_CHECKING:
    from ..engine.app import MockApp
    from ..engine.state import MockState

__all__ = ["check_access", "control_routes", "control_spec", "exposed", "is_loopback",
           "load_fixtures"]

CONTROL_HEADER = "x-mock-control-token"


@functools.lru_cache(maxsize=1)
def control_spec() -> Spec:
    with (data_dir("spec") / "control-openapi.yaml").open("rb") as fh:
        return Spec(load_yaml(fh.read()))


@functools.lru_cache(maxsize=1)
def _validators() -> dict[str, RequestValidator]:
    spec = control_spec()
    return {op.operation_id: RequestValidator(spec, op) for op in spec.operations}


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


def load_fixtures(mock: MockApp, paths: Sequence[str | Path] | None,
                  state: MockState | None = None) -> dict[str, int]:
    """Replace the dataset of `state` (the default session when None) by these fixture
    directories (None: the default fixtures).

    `load_dataset` validates everything (schemas, references, tokens) before returning, so a
    bad directory raises `FixtureError` and leaves the current dataset untouched.
    """
    dataset = load_dataset([Path(p) for p in paths] if paths else None, spec=mock.spec)
    (state or mock.state).load_dataset(dataset)
    return {name: len(rows) for name, rows in sorted(dataset.tables.items())}


def read_body(validator: RequestValidator, raw: bytes, content_type: str | None) -> Any:
    """A control body, read as JSON whatever its Content-Type says (decision U1).

    People type control calls: `curl -d '{...}'` sends `application/x-www-form-urlencoded`,
    and WireMock's admin API takes such bodies too. A body that is not JSON is refused,
    naming the type it came with. The API under /v1 keeps the vendor's rule (JSON only).
    """
    try:
        return validator.body(raw, "application/json")
    except BadRequest as exc:
        media_type = (content_type or "").split(";")[0].strip().lower()
        if str(exc).startswith("request body is not valid JSON") and media_type != "application/json":
            raise BadRequest(f"{exc} (the control API reads every body as JSON; this one "
                             f"came as {media_type or 'no Content-Type'!r})") from None
        raise


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

Endpoint = Callable[["MockApp", Request, Any, Any], Any]


def _route(mock: MockApp, operation: Operation, func: Endpoint) -> Route:
    """The route of one operation of the control document: its path, method and success
    status come from spec/control-openapi.yaml."""
    operation_id, status = operation.operation_id, operation.success_status
    validator = _validators()[operation_id]

    async def endpoint(request: Request) -> Response:
        try:
            check_access(mock, request)
            state = mock.state_for(request.scope)
            query = validator.query(request.query_params.multi_items(), strict=True)
            body = None
            if validator.body_validator is not None:
                raw = await read_raw_body(request, mock.config.max_body_bytes)
                body = read_body(validator, raw, request.headers.get("content-type"))
                if body is None and validator.operation.body_required:
                    raise BadRequest("request body is required: send a JSON object")
            if state.replicated:  # Redis is called off the event loop (replication/)
                result = await state.off_loop(  # type: ignore[attr-defined]
                    _synced, func, mock, state, request, query, body, scope=request.scope)
            else:
                result = func(mock, request, query, body)
            if isinstance(result, Awaitable):
                result = await result
        except ApiError as error:
            return error_response(error)
        except Exception as exc:  # a bug of ours: still answered {"error"}, and logged
            ERROR_LOGGER.error("unexpected error answering %s %s", request.method,
                               printable(request.url.path), exc_info=exc)
            return json_response(500, {"error": f"internal error: {type(exc).__name__}: {exc}"})
        if status == 204:
            return Response(status_code=204)
        return json_response(status, result)

    return Route(operation.path, endpoint, methods=[operation.method], name=operation_id)


def _synced(func: Endpoint, mock: MockApp, state: MockState, request: Request, query: Any,
            body: Any) -> Any:
    """`func` on a shared state, once the worker applied what other workers changed."""
    state.sync()  # type: ignore[attr-defined]
    return func(mock, request, query, body)


# -- endpoints ------------------------------------------------------------------------------

def _reset(mock: MockApp, request: Request, query: Any, body: Any) -> dict[str, Any]:
    mock.state_for(request.scope).reset()
    return {"reset": True}


def _list_requests(mock: MockApp, request: Request, query: Any, body: Any) -> dict[str, Any]:
    state = (mock.sessions.state(query["session"]) if "session" in query
             else mock.state_for(request.scope))
    found = state.journal.entries(method=query.get("method"), path=query.get("path"),
                                  status=query.get("status"), after=query.get("after"))
    total = len(found)
    if query.get("limit"):
        found = found[-query["limit"]:]
    return {"data": [{**e.to_dict(), "session": state.name} for e in found], "total": total,
            "dropped": state.journal.dropped}


def _clear_requests(mock: MockApp, request: Request, query: Any, body: Any) -> dict[str, Any]:
    return {"cleared": mock.state_for(request.scope).clear_journal()}


def _list_faults(mock: MockApp, request: Request, query: Any, body: Any) -> dict[str, Any]:
    return {"data": [rule.to_dict() for rule in mock.state_for(request.scope).faults.rules]}


def _add_fault(mock: MockApp, request: Request, query: Any, body: Any) -> dict[str, Any]:
    _check_fault_target(mock, body)
    try:
        rule = mock.state_for(request.scope).add_fault(**body)
    except ValueError as exc:
        raise BadRequest(f"request body: {exc}") from None
    return {"data": rule.to_dict()}


def _check_fault_target(mock: MockApp, body: dict[str, Any]) -> None:
    """400 for a rule that could never fire: a path no operation has, a method none answers
    (decision U2), naming the field and the nearest operation path."""
    try:
        mock.check_fault(body.get("method"), body.get("path"))
    except ValueError as exc:
        raise BadRequest(f"body {exc}") from None


def _clear_faults(mock: MockApp, request: Request, query: Any, body: Any) -> dict[str, Any]:
    return {"cleared": mock.state_for(request.scope).clear_faults()}


def _clock(state: MockState) -> dict[str, Any]:
    return {"now": state.clock.now(), "frozen": state.clock.frozen}


def _get_clock(mock: MockApp, request: Request, query: Any, body: Any) -> dict[str, Any]:
    return _clock(mock.state_for(request.scope))


def _set_clock(mock: MockApp, request: Request, query: Any, body: Any) -> dict[str, Any]:
    state = mock.state_for(request.scope)
    # Refused (400) with the clock unmoved: a value the timestamp form could not write would
    # leave every later write unanswerable.
    if "advance_seconds" in body:
        try:
            state.advance_clock(body["advance_seconds"])
        except (ValueError, OverflowError) as exc:
            raise BadRequest(f"body field 'advance_seconds': {body['advance_seconds']!r} would "
                             f"move the clock {exc}") from None
    else:
        try:
            state.set_clock(body["now"])
        except ValueError as exc:
            raise BadRequest(f"body field 'now': {body['now']!r} is {exc}") from None
    return _clock(state)


def _get_rate_limits(mock: MockApp, request: Request, query: Any, body: Any) -> dict[str, Any]:
    return mock.state_for(request.scope).rate_limits()


def _set_rate_limits(mock: MockApp, request: Request, query: Any, body: Any) -> dict[str, Any]:
    state = mock.state_for(request.scope)
    state.set_rate_limits(per_minute=body.get("per_minute"), enabled=body.get("enabled"),
                          workspaces=body.get("workspaces"),
                          reset_windows=bool(body.get("reset_windows")))
    return state.rate_limits()


def _load_fixtures(mock: MockApp, request: Request, query: Any, body: Any) -> dict[str, Any]:
    if body.get("default"):
        paths = None
    elif body.get("paths") or body.get("path"):
        paths = body.get("paths") or [body["path"]]
    else:
        raise BadRequest("body needs 'path', 'paths' or \"default\": true")
    state = mock.state_for(request.scope)
    try:
        loaded = load_fixtures(mock, paths, state)
    except FixtureError as exc:
        raise BadRequest(f"fixtures not loaded: {exc}") from None
    except OSError as exc:
        raise BadRequest(f"fixtures not loaded: {exc}") from None
    return {"loaded": loaded, "tokens": len(state.dataset.tokens)}


# -- sessions and snapshots ----------------------------------------------------------------

def _session(mock: MockApp, name: str) -> dict[str, Any]:
    if name == DEFAULT_SESSION:
        state = mock.state
        return {"name": name, "base_path": "", "created_at": mock.started_at,
                "forked_from": None, "changes": state.changes,
                "change_bytes": state.changes * mock.sessions.record_bytes,
                "requests": len(state.journal)}
    info = mock.sessions.get(name)
    if info is None:
        raise NotFound(f"no session {name!r}")
    return {**info.to_dict(mock.sessions.record_bytes), "base_path": f"/sessions/{name}"}


def _list_sessions(mock: MockApp, request: Request, query: Any, body: Any) -> dict[str, Any]:
    sessions = mock.sessions
    infos = sessions.all()
    data = [_session(mock, DEFAULT_SESSION)]
    data += [{**i.to_dict(sessions.record_bytes), "base_path": f"/sessions/{i.name}"}
             for i in infos]
    return {"data": data, "total": len(data), "sessions": len(infos),
            "max_sessions": sessions.max_sessions,
            "max_change_bytes": sessions.max_change_bytes,
            "change_bytes": sessions.change_bytes(), "idle_seconds": sessions.idle_seconds}


def _create_session(mock: MockApp, request: Request, query: Any, body: Any) -> dict[str, Any]:
    body = body or {}
    settings = None
    if {"seed", "rate_limit", "clock"} & set(body):
        base = (mock.sessions.snapshot(body["snapshot"]).settings if "snapshot" in body
                else mock.state.settings)
        changes: dict[str, Any] = {}
        if "seed" in body:
            changes["seed"] = body["seed"]
        if "rate_limit" in body:
            changes.update(rate_limit=body["rate_limit"], workspace_limits=False)
        if "clock" in body:
            if body["clock"] is not None:
                try:
                    parse_clock(body["clock"])
                except ValueError as exc:
                    raise BadRequest(f"body field 'clock': {body['clock']!r} is {exc}") from None
            changes["frozen_clock"] = body["clock"]
        settings = dataclasses.replace(base, **changes)
    info = mock.sessions.create(body.get("name"), snapshot=body.get("snapshot"),
                                settings=settings)
    return _session(mock, info.name)


def _get_session(mock: MockApp, request: Request, query: Any, body: Any) -> dict[str, Any]:
    return _session(mock, request.path_params["name"])


def _delete_session(mock: MockApp, request: Request, query: Any, body: Any) -> dict[str, Any]:
    mock.sessions.delete(request.path_params["name"])
    return {"deleted": True}


def _reset_session(mock: MockApp, request: Request, query: Any, body: Any) -> dict[str, Any]:
    mock.sessions.state(request.path_params["name"]).reset()
    return {"reset": True}


def _list_snapshots(mock: MockApp, request: Request, query: Any, body: Any) -> dict[str, Any]:
    return {"data": mock.sessions.snapshots()}


def _save_snapshot(mock: MockApp, request: Request, query: Any, body: Any) -> dict[str, Any]:
    sessions = mock.sessions
    snap = sessions.save_snapshot(body["name"], body.get("session", DEFAULT_SESSION),
                                  replace=body.get("replace", False))
    return sessions.describe_snapshot(snap)


def _delete_snapshot(mock: MockApp, request: Request, query: Any, body: Any) -> dict[str, Any]:
    mock.sessions.delete_snapshot(request.path_params["name"])
    return {"deleted": True}


def _put_variations(mock: MockApp, request: Request, query: Any, body: Any) -> dict[str, Any]:
    return set_variations(mock, mock.state_for(request.scope), body)


def _get_variations(mock: MockApp, request: Request, query: Any, body: Any) -> dict[str, Any]:
    return get_variations(mock, mock.state_for(request.scope))


def _delete_variations(mock: MockApp, request: Request, query: Any, body: Any) -> None:
    clear_variations(mock, mock.state_for(request.scope))


def _add_record(mock: MockApp, request: Request, query: Any, body: Any) -> dict[str, Any]:
    record = add_record(mock, mock.state_for(request.scope), request.path_params["table"],
                        body, query.get("workspace"))
    return {"data": record}


def _get_record(mock: MockApp, request: Request, query: Any, body: Any) -> dict[str, Any]:
    table, key = request.path_params["table"], request.path_params["id"]
    record = get_record(mock.state_for(request.scope), table, key)
    if record is None:
        raise no_record(table, key)
    return {"data": record}


# operationId -> endpoint; paths, methods and statuses are the document's.
ENDPOINTS: dict[str, Endpoint] = {
    "resetMock": _reset,
    "listRecordedRequests": _list_requests,
    "clearRecordedRequests": _clear_requests,
    "listFaults": _list_faults,
    "addFault": _add_fault,
    "clearFaults": _clear_faults,
    "getClock": _get_clock,
    "setClock": _set_clock,
    "getRateLimits": _get_rate_limits,
    "setRateLimits": _set_rate_limits,
    "loadFixtures": _load_fixtures,
    "addRecord": _add_record,
    "getRecord": _get_record,
    "listSessions": _list_sessions,
    "createSession": _create_session,
    "getSession": _get_session,
    "deleteSession": _delete_session,
    "resetSession": _reset_session,
    "listSnapshots": _list_snapshots,
    "saveSnapshot": _save_snapshot,
    "deleteSnapshot": _delete_snapshot,
    "setVariations": _put_variations,
    "getVariations": _get_variations,
    "clearVariations": _delete_variations,
    **PROGRESSION_ENDPOINTS,
}


def control_routes(mock: MockApp) -> list[BaseRoute]:
    """One route per operation of spec/control-openapi.yaml, each to its endpoint."""
    spec = control_spec()
    unmatched = sorted(set(spec.by_id) ^ set(ENDPOINTS))
    if unmatched:
        raise RuntimeError(f"control operations and endpoints differ: {', '.join(unmatched)}")
    return [_route(mock, op, ENDPOINTS[op.operation_id]) for op in spec.operations]
