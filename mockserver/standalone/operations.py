"""The control operations' registry: one handler per `operationId` of
`spec/control-openapi.yaml`, and one way to call an operation, whatever carries it.

The document declares each operation (path, method, parameters, body, success status); this
module holds what it does: `@handles("operationId")` registers a handler, a function of one
`Call` (the mock, the addressed session's state, path parameters, validated query and body)
answering the success body (JSON-able; None for a 204). Nothing else lists the operations:
the HTTP routes (`control.control_routes`) are derived from the document and this registry,
and `registry()` refuses a document and a registry that differ.

An operation is called through a `Caller`, `call(operation_id, path_params, query, body)`:
`InProcessCaller` here (validated and answered exactly as over HTTP, the answer a copy of the
JSON the route would send), `testing.control.HttpCaller` over the control API. Both raise
`ControlError` for a refusal, carrying its `status` and `reason` (a code: `no_record`,
`unknown_table`, `no_session`, `bad_request` ...; `ApiError.reason`), so callers decide on
the code, never on the message's words.

How to add a control operation (the whole list of files):

1. `spec/control-openapi.yaml`: the operation (path, method, `operationId`, parameters, body
   and response schemas, error responses).
2. here: one handler, `@handles("yourOperationId") def _your_operation(call: Call) -> ...`
   (the work itself in the engine or its product's module when it is more than a few lines).
3. `mockserver/testing/control.py`: one method on `Control` (skips, for a real server) and
   one on `MockControl` that builds the call and decodes its answer; and, when tests reach
   it through `mock_api`, one method on `MockApi` (`testing/api.py`).
4. its test in `tests/standalone/test_control_operations.py`, taking the `mock_control` fixture
   (`tests/conftest.py`), so it runs in this process and over HTTP;
5. `CHANGELOG.md`.

`countRecordedRequests` (`GET /__mock__/requests/count`, `mock_api.request_count()`) was
added this way: those files and nothing else.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import orjson

from ..data.fixtures import load_dataset
from ..engine.clock import parse_clock
from ..engine.coverage import coverage_markdown, coverage_report
from ..engine.errors import ApiError, BadRequest, NotFound
from ..engine.har import har_document
from ..engine.progress_control import (
    get_progression,
    list_scripts,
    set_progression,
    set_script,
    transition_record,
)
from ..engine.records import add_record, get_record, no_record
from ..engine.sessions import DEFAULT_SESSION
from ..engine.simulate import call_ended, delivery, guest_message, helpdesk_synced, reservation
from ..engine.validation import RequestValidator
from ..openapi.spec import Spec, data_dir
from ..openapi.yamlload import load_yaml
from ..robust.control import clear_variations, get_variations, set_variations
from . import fixtureload

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ..engine.app import MockApp
    from ..engine.state import MockState

__all__ = ["Call", "Caller", "ControlError", "Handler", "InProcessCaller", "control_spec",
           "handles", "load_fixtures", "query_items", "read_body", "registry", "validators"]


@functools.lru_cache(maxsize=1)
def control_spec() -> Spec:
    with (data_dir("spec") / "control-openapi.yaml").open("rb") as fh:
        return Spec(load_yaml(fh.read()))


@functools.lru_cache(maxsize=1)
def validators() -> dict[str, RequestValidator]:
    spec = control_spec()
    return {op.operation_id: RequestValidator(spec, op) for op in spec.operations}


@dataclasses.dataclass(frozen=True, slots=True)
class Call:
    """One control call as its handler sees it: the query and body validated against the
    document (defaults filled in), the path parameters as given."""

    mock: MockApp
    state: MockState  # the addressed session's
    params: Mapping[str, str]
    query: dict[str, Any]
    body: Any


Handler = Callable[[Call], Any]
_HANDLERS: dict[str, Handler] = {}


def handles(operation_id: str) -> Callable[[Handler], Handler]:
    """Register the handler of the document's operation `operation_id` (once)."""
    def register(handler: Handler) -> Handler:
        if operation_id in _HANDLERS:
            raise RuntimeError(f"control operation {operation_id} has two handlers")
        _HANDLERS[operation_id] = handler
        return handler
    return register


def registry() -> dict[str, Handler]:
    """operationId -> handler, for every operation of the control document (RuntimeError
    naming those that have no handler, or a handler and no operation)."""
    unmatched = sorted(set(control_spec().by_id) ^ set(_HANDLERS))
    if unmatched:
        raise RuntimeError(f"control operations and handlers differ: {', '.join(unmatched)}")
    return _HANDLERS


class ControlError(RuntimeError):
    """A control operation refused: its status, `reason` (a code; None when the answer had
    none: a route an older server lacks) and message."""

    def __init__(self, operation_id: str, status: int, reason: str | None, message: str,
                 where: str = "") -> None:
        super().__init__(f"mock control {operation_id}{where}: {status} {message}")
        self.operation_id = operation_id
        self.status = status
        self.reason = reason
        self.message = message


class Caller(Protocol):
    """What carries a control call: in this process, or over the control API."""

    def call(self, operation_id: str, path_params: Mapping[str, str] | None = None,
             query: Mapping[str, Any] | None = None, body: Any = None) -> Any:
        """The operation's success body decoded from JSON (None when empty); `ControlError`
        for any other answer."""
        ...


def query_items(query: Mapping[str, Any] | None) -> list[tuple[str, str]]:
    """A call's query as the items of a query string (None left out; booleans as JSON writes
    them, as httpx sends them)."""
    items = []
    for name, value in (query or {}).items():
        if value is None:
            continue
        for one in value if isinstance(value, (list, tuple)) else (value,):
            items.append((name, ("true" if one else "false") if isinstance(one, bool)
                          else str(one)))
    return items


def _integral(value: Any) -> Any:
    """`value` with every integral float (`3.0`, which JSON Schema counts as an integer) made
    an int, so a field the document types `integer` reaches the code as one (DECISIONS H25:
    `{"size": 3.0}` answered 500)."""
    if isinstance(value, float):
        return int(value) if value.is_integer() else value
    if isinstance(value, dict):
        return {key: _integral(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_integral(item) for item in value]
    return value


def read_body(validator: RequestValidator, raw: bytes, content_type: str | None) -> Any:
    """A control body, read as JSON whatever its Content-Type says (decision U1).

    People type control calls: `curl -d '{...}'` sends `application/x-www-form-urlencoded`,
    and WireMock's admin API takes such bodies too. A body that is not JSON is refused,
    naming the type it came with. The API under /v1 keeps the vendor's rule (JSON only).
    A body the operation requires and the call lacks is refused (400).
    """
    try:
        body = _integral(validator.body(raw, "application/json"))
    except BadRequest as exc:
        media_type = (content_type or "").split(";")[0].strip().lower()
        if str(exc).startswith("request body is not valid JSON") and media_type != "application/json":
            raise BadRequest(f"{exc} (the control API reads every body as JSON; this one "
                             f"came as {media_type or 'no Content-Type'!r})") from None
        raise
    if body is None and validator.operation.body_required:
        raise BadRequest("request body is required: send a JSON object")
    return body


def prepare(mock: MockApp, state: MockState, operation_id: str, params: Mapping[str, str],
            items: Iterable[tuple[str, str]], raw_body: bytes | None,
            content_type: str | None) -> Call:
    """The call its handler gets: query and body checked against the document."""
    validator = validators()[operation_id]
    query = validator.query(items, strict=True)
    body = None
    if validator.body_validator is not None and raw_body is not None:
        body = read_body(validator, raw_body, content_type)
    return Call(mock, state, params, query, body)


def run(handler: Handler, call: Call) -> Any:
    """A handler on its call, once the state holds what other workers changed (a shared
    state's; nothing to catch up in memory)."""
    call.state.sync()
    return handler(call)


class InProcessCaller:
    """Control calls on a mock in this process, addressed to one state: validated, answered
    and refused as the HTTP route does (the answer a copy of the JSON it would send)."""

    def __init__(self, mock: MockApp, state: MockState) -> None:
        self.mock = mock
        self.state = state

    def call(self, operation_id: str, path_params: Mapping[str, str] | None = None,
             query: Mapping[str, Any] | None = None, body: Any = None) -> Any:
        handler = registry()[operation_id]
        try:
            raw = orjson.dumps(body) if body is not None else b""
            call = prepare(self.mock, self.state, operation_id, dict(path_params or {}),
                           query_items(query), raw, "application/json")
            result = run(handler, call)
        except ApiError as error:
            raise ControlError(operation_id, error.status_code, error.reason,
                               error.message) from None
        return None if result is None else orjson.loads(orjson.dumps(result))


# -- the handlers, in the document's order ----------------------------------------------------

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


@handles("resetMock")
def _reset(call: Call) -> dict[str, Any]:
    call.state.reset()
    return {"reset": True}


@handles("listRecordedRequests")
def _list_requests(call: Call) -> dict[str, Any]:
    query = call.query
    state = call.mock.sessions.state(query["session"]) if "session" in query else call.state
    found = state.journal.entries(method=query.get("method"), path=query.get("path"),
                                  status=query.get("status"), after=query.get("after"))
    total = len(found)
    if query.get("limit"):
        found = found[-query["limit"]:]
    if query.get("format") == "har":  # the same entries as an HTTP Archive (W7)
        return har_document(found, call.mock.base_url_of(state),
                            comment=f"session {state.name}: {len(found)} of {total} requests")
    return {"data": [{**e.to_dict(), "session": state.name} for e in found], "total": total,
            "dropped": state.journal.dropped}


@handles("countRecordedRequests")
def _count_requests(call: Call) -> dict[str, Any]:
    query = call.query
    return {"count": len(call.state.journal.entries(
        method=query.get("method"), path=query.get("path"), status=query.get("status")))}


@handles("getCoverage")
def _get_coverage(call: Call) -> dict[str, Any]:
    query = call.query
    state = call.mock.sessions.state(query["session"]) if "session" in query else call.state
    report = coverage_report(call.mock.spec, (e.to_dict() for e in state.journal.entries()))
    report = {**report, "session": state.name, "dropped": state.journal.dropped}
    if query.get("format") == "markdown":
        return {"markdown": coverage_markdown(report), "percent": report["percent"]}
    return report


@handles("clearRecordedRequests")
def _clear_requests(call: Call) -> dict[str, Any]:
    return {"cleared": call.state.clear_journal()}


@handles("listFaults")
def _list_faults(call: Call) -> dict[str, Any]:
    return {"data": [rule.to_dict() for rule in call.state.faults.rules]}


@handles("addFault")
def _add_fault(call: Call) -> dict[str, Any]:
    body = call.body
    # 400 for a rule that could never fire: a path no operation has, a method none answers
    # (decision U2), naming the field and the nearest operation path.
    try:
        call.mock.check_fault(body.get("method"), body.get("path"))
    except ValueError as exc:
        raise BadRequest(f"body {exc}") from None
    try:
        rule = call.state.add_fault(**body)
    except ValueError as exc:
        raise BadRequest(f"request body: {exc}") from None
    return {"data": rule.to_dict()}


@handles("addStub")
def _add_stub(call: Call) -> dict[str, Any]:
    body = call.body
    method, path, status, answer = body["method"], body["path"], body["status"], body.get("json")
    try:  # a rule that could never fire (U2), then an answer the document does not allow (W4)
        call.mock.check_fault(method, path)
        if body["validate"]:
            call.mock.check_stub(method, path, status, answer, body.get("headers", {}))
    except ValueError as exc:
        raise BadRequest(f"body {exc}") from None
    try:
        rule = call.state.add_fault(method=method, path=path, status=status, body=answer,
                                    headers=body.get("headers", {}), count=body["count"],
                                    stub=True, off_contract=not body["validate"])
    except ValueError as exc:
        raise BadRequest(f"request body: {exc}") from None
    return {"data": rule.to_dict()}


@handles("clearFaults")
def _clear_faults(call: Call) -> dict[str, Any]:
    return {"cleared": call.state.clear_faults()}


def _clock(state: MockState) -> dict[str, Any]:
    return {"now": state.clock.now(), "frozen": state.clock.frozen}


@handles("getClock")
def _get_clock(call: Call) -> dict[str, Any]:
    return _clock(call.state)


@handles("setClock")
def _set_clock(call: Call) -> dict[str, Any]:
    state, body = call.state, call.body
    # Refused (400) with the clock unmoved: a value the timestamp form could not write would
    # leave every later write unanswerable.
    frozen = body.get("frozen")  # True: stop there; False: run on from there (decision U14)
    if "advance_seconds" in body:
        try:
            state.advance_clock(body["advance_seconds"], frozen=frozen)
        except (ValueError, OverflowError) as exc:
            raise BadRequest(f"body field 'advance_seconds': {body['advance_seconds']!r} would "
                             f"move the clock {exc}") from None
    elif "now" in body:
        try:
            state.set_clock(body["now"], frozen=frozen)
        except ValueError as exc:
            raise BadRequest(f"body field 'now': {body['now']!r} is {exc}") from None
    else:
        state.freeze_clock(bool(frozen))
    return _clock(state)


@handles("getRateLimits")
def _get_rate_limits(call: Call) -> dict[str, Any]:
    return call.state.rate_limits()


@handles("setRateLimits")
def _set_rate_limits(call: Call) -> dict[str, Any]:
    state, body = call.state, call.body
    state.set_rate_limits(per_minute=body.get("per_minute"), enabled=body.get("enabled"),
                          workspaces=body.get("workspaces"),
                          reset_windows=bool(body.get("reset_windows")))
    return state.rate_limits()


@handles("loadFixtures")
@fixtureload.blocking  # off the event loop, within a time, under --fixtures-root (H18)
def _load_fixtures(call: Call) -> dict[str, Any]:
    body, mock = call.body, call.mock
    if body.get("default"):
        paths = None
    elif body.get("paths") or body.get("path"):
        paths = fixtureload.allowed_paths(mock, body.get("paths") or [body["path"]])
    else:
        raise BadRequest("body needs 'path', 'paths' or \"default\": true")
    dataset = fixtureload.read_bounded(lambda: load_dataset(paths, spec=mock.spec))
    call.state.load_dataset(dataset)  # only once it all loaded
    loaded = {name: len(rows) for name, rows in sorted(dataset.tables.items())}
    return {"loaded": loaded, "tokens": len(call.state.dataset.tokens)}


@handles("addRecord")
def _add_record(call: Call) -> dict[str, Any]:
    record = add_record(call.mock, call.state, call.params["table"], call.body,
                        call.query.get("workspace"))
    return {"data": record}


@handles("getRecord")
def _get_record(call: Call) -> dict[str, Any]:
    table, key = call.params["table"], call.params["id"]
    record = get_record(call.state, table, key)
    if record is None:
        raise no_record(table, key)
    return {"data": record}


# -- progression: modes, transitions, scripts (the work: engine/progress_control.py) --------

@handles("getProgression")
def _get_progression(call: Call) -> dict[str, Any]:
    return get_progression(call.state)


@handles("setProgression")
def _set_progression(call: Call) -> dict[str, Any]:
    return set_progression(call.state, call.body)


@handles("transitionRecord")
def _transition_record(call: Call) -> dict[str, Any]:
    return transition_record(call.mock, call.state, call.params["table"], call.params["id"],
                             call.body)


@handles("setAgentScript")
def _set_agent_script(call: Call) -> dict[str, Any]:
    return set_script(call.mock, call.state, "agents", call.params["id"], call.body)


@handles("setWorkflowScript")
def _set_workflow_script(call: Call) -> dict[str, Any]:
    return set_script(call.mock, call.state, "workflows", call.params["id"], call.body)


@handles("listScripts")
def _list_scripts(call: Call) -> dict[str, Any]:
    return list_scripts(call.state)


# -- simulated inbound events (the work: engine/simulate.py) --------------------------------

@handles("simulateGuestMessage")
def _simulate_guest_message(call: Call) -> dict[str, Any]:
    return guest_message(call.mock, call.state, call.body)


@handles("simulateReservation")
def _simulate_reservation(call: Call) -> dict[str, Any]:
    return reservation(call.mock, call.state, call.body)


@handles("simulateCallEnded")
def _simulate_call_ended(call: Call) -> dict[str, Any]:
    return call_ended(call.mock, call.state, call.body)


@handles("simulateHelpdeskSync")
def _simulate_helpdesk_sync(call: Call) -> dict[str, Any]:
    return helpdesk_synced(call.mock, call.state, call.body)


@handles("simulateDelivery")
def _simulate_delivery(call: Call) -> dict[str, Any]:
    return delivery(call.mock, call.state, call.body)


# -- sessions and snapshots ----------------------------------------------------------------

def _session(mock: MockApp, name: str) -> dict[str, Any]:
    if name == DEFAULT_SESSION:
        state = mock.state
        return {"name": name, "base_path": "", "created_at": mock.started_at,
                "forked_from": None, "changes": state.changes,
                "change_bytes": state.store.held + state.files.size,
                "requests": len(state.journal)}
    info = mock.sessions.get(name)
    if info is None:
        raise NotFound(f"no session {name!r}", reason="no_session")
    return {**info.to_dict(mock.sessions.record_bytes), "base_path": f"/sessions/{name}"}


@handles("listSessions")
def _list_sessions(call: Call) -> dict[str, Any]:
    mock = call.mock
    sessions = mock.sessions
    infos = sessions.all()
    data = [_session(mock, DEFAULT_SESSION)]
    data += [{**i.to_dict(sessions.record_bytes), "base_path": f"/sessions/{i.name}"}
             for i in infos]
    return {"data": data, "total": len(data), "sessions": len(infos),
            "max_sessions": sessions.max_sessions,
            "max_change_bytes": sessions.max_change_bytes,
            "change_bytes": sessions.change_bytes(), "idle_seconds": sessions.idle_seconds}


@handles("createSession")
def _create_session(call: Call) -> dict[str, Any]:
    mock, body = call.mock, call.body or {}
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
            changes.update(frozen_clock=body["clock"], clock_offset_ms=0)
        settings = dataclasses.replace(base, **changes)
    info = mock.sessions.create(body.get("name"), snapshot=body.get("snapshot"),
                                settings=settings)
    return _session(mock, info.name)


@handles("getSession")
def _get_session(call: Call) -> dict[str, Any]:
    return _session(call.mock, call.params["name"])


@handles("deleteSession")
def _delete_session(call: Call) -> dict[str, Any]:
    call.mock.sessions.delete(call.params["name"])
    return {"deleted": True}


@handles("resetSession")
def _reset_session(call: Call) -> dict[str, Any]:
    call.mock.sessions.state(call.params["name"]).reset()
    return {"reset": True}


@handles("listSnapshots")
def _list_snapshots(call: Call) -> dict[str, Any]:
    return {"data": call.mock.sessions.snapshots()}


@handles("saveSnapshot")
def _save_snapshot(call: Call) -> dict[str, Any]:
    sessions, body = call.mock.sessions, call.body
    snap = sessions.save_snapshot(body["name"], body.get("session", DEFAULT_SESSION),
                                  replace=body.get("replace", False))
    return sessions.describe_snapshot(snap)


@handles("deleteSnapshot")
def _delete_snapshot(call: Call) -> dict[str, Any]:
    call.mock.sessions.delete_snapshot(call.params["name"])
    return {"deleted": True}


# -- robustness mode (mockserver/robust/control.py) ------------------------------------------

@handles("setVariations")
def _put_variations(call: Call) -> dict[str, Any]:
    return set_variations(call.mock, call.state, call.body)


@handles("getVariations")
def _get_variations(call: Call) -> dict[str, Any]:
    return get_variations(call.mock, call.state)


@handles("clearVariations")
def _delete_variations(call: Call) -> None:
    clear_variations(call.mock, call.state)
