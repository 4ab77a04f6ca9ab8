"""The one control interface `mock_api` drives, and its implementations.

`Control` is the protocol: reset, fault, clock, rate limit, requests, snapshot, add, get, and
the in-process handles (the app, its state). Every operation of the base class skips the test
with the implementation's reason. `MockControl` writes each operation once: it builds the
control call (an `operationId` of `spec/control-openapi.yaml`, path parameters, query, body),
hands it to its `Caller` and decodes the answer (one `RecordedRequest` type for the journal,
refusals decided on `ControlError.reason`). Its two transports differ only by the caller and
by what only a process holding the mock can give:

- `InProcessControl`: the mock in this process (the session's server, or a `MockApp` given);
  its caller, `operations.InProcessCaller`, runs the registered handler as the route does.
- `HttpControl`: a session on a mock reached over its control API (the server xdist workers
  share, a container); its caller, `ControlClient`, sends each operation's method and path
  as the document declares them.
- `RealServerControl`: a real server; every mock-only helper skips, saying why.
"""

from __future__ import annotations

import itertools
import urllib.parse
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, NoReturn

import httpx
import pytest

from ..engine.app import MockApp
from ..engine.faults import FaultRule
from ..engine.progression import Refused
from ..engine.sessions import SESSION_HEADER, SESSION_PREFIX
from ..engine.state import MockState
from ..standalone.control import CONTROL_HEADER
from ..standalone.operations import Caller, ControlError, InProcessCaller, control_spec
from .config import MockApiConfig
from .identities import Tokens, Workspaces, mock_identities
from .server import Dispatch, MockApiSnapshot, MockServer, session_name
from .transport import AsyncASGITransport, SyncASGITransport

# What a fork point gives the fixture: the snapshot, and how to delete it after the module.
Origin = tuple[MockApiSnapshot, Callable[[], None]]


class Control:
    """The control interface. Every operation here skips the test with `why(what)`; an
    implementation overrides those it can do."""

    is_mock = False
    dispatch: Dispatch | None = None  # the session server's dispatch (in-process only)
    app: Any = None  # the ASGI app serving the test's session (in-process only)

    def why(self, what: str) -> str:
        raise NotImplementedError

    def _skip(self, what: str) -> NoReturn:
        pytest.skip(self.why(what))

    def in_process(self, what: str) -> InProcessControl:
        """The in-process implementation, for `mock_api.{what}` (the app, its state)."""
        self._skip(what)

    @property
    def session(self) -> str:
        self._skip("session")

    def reset(self) -> None:
        self._skip("reset()")

    def fault(self, spec: dict[str, Any]) -> FaultRule:
        self._skip("fault()")

    def stub(self, spec: dict[str, Any]) -> FaultRule:
        self._skip("stub()")

    def set_rate_limit(self, per_minute: int | None, workspace: str | None,
                       enabled: bool | None) -> None:
        self._skip("set_rate_limit()")

    def requests(self, method: str | None, path: str | None,
                 status: int | None) -> list[RecordedRequest]:
        self._skip("requests()")

    def request_count(self, method: str | None, path: str | None, status: int | None) -> int:
        self._skip("request_count()")

    def har(self, method: str | None, path: str | None, status: int | None) -> dict[str, Any]:
        """The test's journal as an HTTP Archive 1.2 document (filtered as `requests`)."""
        self._skip("export_har()")

    def clock(self) -> tuple[str, bool]:
        """The clock's instant and whether it is frozen."""
        self._skip("clock")

    def advance_clock(self, seconds: float) -> None:
        self._skip("clock")

    def set_clock(self, instant: str) -> None:
        self._skip("clock")

    def snapshot(self, name: str | None) -> str:
        """Save the session as a snapshot (None: named after the session); its name."""
        self._skip("snapshot()")

    def origin(self, name: str) -> Origin:
        """The session saved as a snapshot for tests to fork from (`mock_api_snapshot`)."""
        self._skip("snapshot()")

    def add(self, table: str, values: dict[str, Any], primary: str | None) -> dict[str, Any]:
        self._skip("add()")

    def get(self, table: str, key: str) -> dict[str, Any] | None:
        self._skip("get()")

    def progression(self, body: dict[str, Any] | None) -> dict[str, Any]:
        """The session's progression modes, after setting those `body` names (None: read)."""
        self._skip("progression")

    def transition(self, table: str, key: str, body: dict[str, Any]) -> dict[str, Any]:
        self._skip("transition()")

    def script(self, kind: str, target: str, outcomes: list[Any]) -> dict[str, Any]:
        self._skip("script_agent()" if kind == "agents" else "script_workflow()")

    def scripts(self) -> dict[str, Any]:
        self._skip("scripts()")

    def simulate(self, event: str, body: dict[str, Any]) -> dict[str, Any]:
        """A simulated inbound event (`guest-message`, `reservation`): what it caused."""
        self._skip(f"simulate.{event.replace('-', '_')}()")

    def transport(self) -> httpx.BaseTransport:
        self._skip("transport()")

    def async_transport(self) -> httpx.AsyncBaseTransport:
        self._skip("async_transport()")

    def finish(self) -> BaseException | None:
        """The test is over: what the server raised while it ran (None: nothing)."""
        return None

    def close(self) -> None:
        """Release the test's session."""


class RealServerControl(Control):
    """A real server: nothing to control."""

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url

    def why(self, what: str) -> str:
        return (f"mock_api.{what} needs the mock server; this run targets the real server at "
                f"{self.base_url} (--mock-api-base-url / MOCK_API_BASE_URL)")


# -- in process ----------------------------------------------------------------------------

class _InSession:
    """An app in front of the mock that addresses requests naming no session to one."""

    def __init__(self, app: Any, session: str) -> None:
        self.app = app
        self.header = (SESSION_HEADER, session.encode())

    def route_to(self, session: str) -> None:
        self.header = (SESSION_HEADER, session.encode())

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and not scope["path"].startswith(SESSION_PREFIX):
            scope = {**scope, "headers": [*scope["headers"], self.header]}
        await self.app(scope, receive, send)


_ROUTERS: dict[int, _InSession] = {}


@dataclass(frozen=True)
class RecordedRequest:
    """A journal entry as a test reads it, over either transport (the control API's
    `JournalEntry`): .method .path .query .headers (credentials redacted) .json (the body)
    .status .response_json .operation_id .fault .ignored_params.

    Attributes:
        seq: Its number in the journal, increasing with every request recorded.
        time: The mock's clock when the request arrived ("2026-11-01T12:00:00.000Z").
        method: The HTTP method, upper case.
        path: The request's path, without the session prefix or the query string.
        query: The query parameters: a name given once maps to its value, a repeated one to
            the list of its values.
        headers: The request's headers, names lower-cased, credentials redacted (the bearer
            token is never shown whole).
        json: The request body, parsed when it is JSON (`"<N bytes, not kept>"` past 64 KiB).
        status: The status the mock answered.
        response_json: The answer's body, parsed when it is JSON (`"<N bytes, not kept>"`
            past 64 KiB).
        operation_id: The document's operationId the request matched (None: none matched,
            e.g. a 404 on an unknown path).
        fault: The injected fault that answered it (`mock_api.fault(...)`), or None.
        ignored_params: Query parameters the API does not document, which the mock ignored
            (as the real service does) and reported here.
    """

    seq: int
    time: str
    method: str
    path: str
    query: dict[str, Any]
    headers: dict[str, str]
    json: Any
    status: int
    response_json: Any
    operation_id: str | None
    fault: str | None
    ignored_params: tuple[str, ...] = ()
    variations: tuple[int, ...] = ()  # the robustness plan's items that varied the answer

    @classmethod
    def decode(cls, entry: Mapping[str, Any]) -> RecordedRequest:
        return cls(entry["seq"], entry["time"], entry["method"], entry["path"], entry["query"],
                   entry["headers"], entry.get("body"), entry["status"],
                   entry.get("response_body"), entry.get("operation_id"), entry.get("fault"),
                   tuple(entry.get("ignored_params", ())), tuple(entry.get("variations", ())))

    def as_entry(self) -> dict[str, Any]:
        """The fields of the journal's entry that the coverage report reads
        (engine/coverage.py)."""
        return {"method": self.method, "path": self.path, "query": self.query,
                "body": self.json, "status": self.status, "response_body": self.response_json,
                "operation_id": self.operation_id, "fault": self.fault,
                "variations": list(self.variations)}

    @property
    def stub(self) -> bool:
        """Whether a stub of the test answered it (its `fault` names the stub)."""
        return self.fault is not None and self.fault.startswith("stub #")

    @property
    def off_contract(self) -> bool:
        """Whether a stub made with `validate=False` answered it (W5)."""
        return self.stub and self.fault is not None and self.fault.endswith("off-contract)")

    @property
    def query_string(self) -> bytes:
        return urllib.parse.urlencode(self.query, doseq=True).encode("latin-1")


class MockControl(Control):
    """The control operations of a mock, each written once as a call of its `Caller` (in this
    process or over HTTP, addressed to the test's session)."""

    is_mock = True
    caller: Caller

    @property
    def session(self) -> str:
        raise NotImplementedError

    def call(self, operation_id: str, path_params: Mapping[str, str] | None = None,
             query: Mapping[str, Any] | None = None, body: Any = None) -> Any:
        return self.caller.call(operation_id, path_params, query, body)

    def reset(self) -> None:
        self.call("resetMock")

    def fault(self, spec: dict[str, Any]) -> FaultRule:
        body = {k: v for k, v in spec.items()
                if v is not None or k == "count"}  # the control API's nulls: count only
        try:
            found = self.call("addFault", body=body)["data"]
        except ControlError as error:
            if error.status == 400:  # a rule that could never fire, named
                raise ValueError(f"mock_api.fault: {error.message}") from None
            raise
        return _rule(found)

    def stub(self, spec: dict[str, Any]) -> FaultRule:
        try:
            found = self.call("addStub", body=spec)["data"]
        except ControlError as error:
            if error.status == 400:  # not an answer the document allows, the field named
                raise ValueError(f"mock_api.stub: {error.message}") from None
            raise
        return _rule(found)

    def set_rate_limit(self, per_minute: int | None, workspace: str | None,
                       enabled: bool | None) -> None:
        body: dict[str, Any] = {"workspaces": {workspace: per_minute}} if workspace else {}
        if workspace is None and per_minute is not None:
            body["per_minute"] = per_minute
        if workspace is None and enabled is not None:
            body["enabled"] = enabled
        self.call("setRateLimits", body=body)

    def requests(self, method: str | None, path: str | None,
                 status: int | None) -> list[RecordedRequest]:
        found = self.call("listRecordedRequests",
                          query={"method": method, "path": path, "status": status})
        return [RecordedRequest.decode(e) for e in found["data"]]

    def har(self, method: str | None, path: str | None, status: int | None) -> dict[str, Any]:
        return dict(self.call("listRecordedRequests", query={
            "method": method, "path": path, "status": status, "format": "har"}))

    def request_count(self, method: str | None, path: str | None, status: int | None) -> int:
        found = self.call("countRecordedRequests",
                          query={"method": method, "path": path, "status": status})
        return int(found["count"])

    def clock(self) -> tuple[str, bool]:
        found = self.call("getClock")
        return str(found["now"]), bool(found["frozen"])

    def advance_clock(self, seconds: float) -> None:
        self.call("setClock", body={"advance_seconds": seconds})

    def set_clock(self, instant: str) -> None:
        self.call("setClock", body={"now": instant})

    def snapshot(self, name: str | None) -> str:
        name = name or f"{self.session}-snap"
        self.call("saveSnapshot", body={"name": name, "session": self.session, "replace": True})
        return name

    def add(self, table: str, values: dict[str, Any], primary: str | None) -> dict[str, Any]:
        try:
            found = self.call("addRecord", {"table": table}, {"workspace": primary}, values)
        except ControlError as error:
            if error.reason == "unknown_table":
                raise pytest.UsageError(f"mock_api.add: {error.message}") from None
            if error.status in (400, 409):  # a record the mock refuses, the field named
                raise ValueError(f"mock_api.add({table!r}): {error.message}") from None
            raise  # 507, 503 ... as they came
        return dict(found["data"])

    def get(self, table: str, key: str) -> dict[str, Any] | None:
        try:
            found = self.call("getRecord", {"table": table, "id": key})
        except ControlError as error:
            if error.reason == "no_record":
                return None
            if error.reason == "unknown_table":
                raise pytest.UsageError(f"mock_api.get: {error.message}") from None
            raise  # no session, no such route (an older server)
        return dict(found["data"])


    # -- progression: refusals (400, 404, 409) as `Refused`, with their status --------------

    def _progression_call(self, operation_id: str, path_params: Mapping[str, str] | None = None,
                          body: Any = None) -> Any:
        try:
            return self.call(operation_id, path_params, body=body)
        except ControlError as error:
            if error.status in (400, 404, 409):
                raise Refused(error.status, error.message) from None
            raise

    def progression(self, body: dict[str, Any] | None) -> dict[str, Any]:
        if body is None:
            return dict(self.call("getProgression"))
        return dict(self._progression_call("setProgression", body=body))

    def transition(self, table: str, key: str, body: dict[str, Any]) -> dict[str, Any]:
        found = self._progression_call("transitionRecord", {"table": table, "id": key}, body)
        return dict(found["data"])

    def script(self, kind: str, target: str, outcomes: list[Any]) -> dict[str, Any]:
        operation = "setAgentScript" if kind == "agents" else "setWorkflowScript"
        found = self._progression_call(operation, {"id": target}, {"outcomes": outcomes})
        return dict(found["data"])

    def scripts(self) -> dict[str, Any]:
        return dict(self.call("listScripts")["data"])

    _SIMULATE = {"guest-message": "simulateGuestMessage", "reservation": "simulateReservation",
                 "call": "simulateCallEnded", "helpdesk-ticket": "simulateHelpdeskSync",
                 "delivery": "simulateDelivery"}

    def simulate(self, event: str, body: dict[str, Any]) -> dict[str, Any]:
        found = self._progression_call(self._SIMULATE[event], body=body)
        return dict(found["data"])


def _rule(found: Mapping[str, Any]) -> FaultRule:
    """A fault rule (or stub) as the control API answered it."""
    fields = {k: v for k, v in found.items() if k not in ("remaining", "hits", "json")}
    if "json" in found:
        fields["body"] = found["json"]
    rule = FaultRule(**fields)
    rule.hits = found["hits"]
    return rule


class InProcessControl(MockControl):
    """The mock in this process: a session of the session server's mock (`open`), or the
    given mock's state (`dispatch` None: no server)."""

    def __init__(self, mock: MockApp, state: MockState | None = None, app: Any = None,
                 dispatch: Dispatch | None = None) -> None:
        self.mock = mock
        self.state = state if state is not None else mock.state
        self.app = app
        self.dispatch = dispatch
        self.caller = InProcessCaller(mock, self.state)

    @classmethod
    def open(cls, server: MockServer, config: MockApiConfig, label: str,
             origin: MockApiSnapshot | None = None) -> tuple[InProcessControl, str, Tokens,
                                                                Workspaces]:
        """A fresh session for one test on the session's server, which now serves it; with
        its base URL and identities."""
        mock, app, state = server.open_session(config, label, origin)
        server.dispatch.wait_idle()
        server.dispatch.errors.clear()
        server.dispatch.target = app
        tokens, workspaces = mock_identities(state)
        return (cls(mock, state, app, server.dispatch),
                f"{server.base_url}{SESSION_PREFIX}{state.name}", tokens, workspaces)

    def in_process(self, what: str) -> InProcessControl:
        return self

    @property
    def session(self) -> str:
        return self.state.name

    def origin(self, name: str) -> Origin:
        sessions = self.mock.sessions
        snap = sessions.save_snapshot(name, self.session, replace=True)
        return (MockApiSnapshot(name, self.mock, snap.settings.frozen_clock),
                lambda: sessions.delete_snapshot(name))

    def transport(self) -> httpx.BaseTransport:
        if self.dispatch is not None:
            # One per mock for the whole session (its event-loop thread starts once); the
            # router in front of it addresses the current test's session.
            return self.dispatch.in_process(self.session_app())
        return SyncASGITransport(self.session_app())

    def async_transport(self) -> httpx.AsyncBaseTransport:
        return AsyncASGITransport(self.session_app())

    def session_app(self) -> Any:
        """The app as the test's session sees it: requests that name no session (a client
        with another base URL) are addressed to it by the session header. One router per
        app (tests of a process run one at a time), so in-process transports are reused."""
        if self.state is self.mock.state:
            return self.app
        router = _ROUTERS.get(id(self.app))
        if router is None or router.app is not self.app:
            router = _ROUTERS[id(self.app)] = _InSession(self.app, self.state.name)
        router.route_to(self.state.name)
        return router

    def finish(self) -> BaseException | None:
        if self.dispatch is None:
            return None
        self.dispatch.drain()
        self.dispatch.wait_idle()
        return self.dispatch.take_error()

    def close(self) -> None:
        if self.state is not self.mock.state:
            self.mock.sessions.delete(self.state.name)


# -- over the control API --------------------------------------------------------------------

class ControlClient:
    """The control API over HTTP, a `Caller`: each call names an operation of
    spec/control-openapi.yaml, whose method, path and success status come from the document
    (as the server's routes do); `session` addresses a session's own control API
    (`/sessions/{name}/__mock__/...`). `transport`: httpx's, for tests (`MockTransport`)."""

    def __init__(self, server: str, token: str | None = None, *, session: str | None = None,
                 transport: httpx.BaseTransport | None = None,
                 http: httpx.Client | None = None) -> None:
        self.server = server
        self.token = token
        self.session = session
        self._http = http or httpx.Client(
            timeout=30, transport=transport, headers={CONTROL_HEADER: token} if token else {})

    def at(self, session: str | None) -> ControlClient:
        """The same connection addressing `session` (None: the server's default)."""
        return ControlClient(self.server, self.token, session=session, http=self._http)

    def call(self, operation_id: str, path_params: Mapping[str, str] | None = None,
             query: Mapping[str, Any] | None = None, body: Any = None) -> Any:
        """The operation's answer (its JSON, None when empty); `ControlError` for any other
        status, with the reason the server gave (None when it gave none)."""
        operation = control_spec().by_id[operation_id]
        url = self.server + (f"{SESSION_PREFIX}{self.session}" if self.session else "")
        url += operation.path.format(**{k: urllib.parse.quote(v, safe="")
                                        for k, v in (path_params or {}).items()})
        params = {k: v for k, v in (query or {}).items() if v is not None}
        response = self._http.request(operation.method, url, json=body, params=params)
        if response.status_code != operation.success_status:
            try:
                found = response.json()
                message, reason = str(found["error"]), found.get("reason")
            except (ValueError, KeyError, TypeError, AttributeError):
                message, reason = response.text, None
            raise ControlError(operation_id, response.status_code,
                               reason if isinstance(reason, str) else None, message,
                               f" ({operation.method} {response.request.url.path})")
        return response.json() if response.content else None

    def close(self) -> None:
        self._http.close()


_sessions = itertools.count(1)


class HttpControl(MockControl):
    """A test's session on a mock reached over HTTP (the server xdist workers share, or a
    container), through its control API."""

    def __init__(self, client: ControlClient, session: str) -> None:
        self.client = client
        self.name = session
        self.caller = client.at(session)

    @classmethod
    def open(cls, server: str, token: str | None, config: MockApiConfig, prefix: str,
             label: str, origin: MockApiSnapshot | None) -> HttpControl:
        """A fresh session named after the test (`prefix`: the xdist worker)."""
        name = session_name(f"{prefix}-{next(_sessions)}", label)
        body: dict[str, Any] = {"name": name, "seed": config.seed, "clock": config.clock}
        if config.rate_limit is not None:
            body["rate_limit"] = config.rate_limit
        if origin is not None:
            body["snapshot"] = origin.name
            body["clock"] = origin.frozen_clock
            if origin.frozen_clock is None:  # a running clock: the fork keeps its offset
                del body["clock"]
        client = ControlClient(server, token)
        client.call("createSession", body=body)
        return cls(client, name)

    @property
    def base_url(self) -> str:
        return f"{self.client.server}{SESSION_PREFIX}{self.name}"

    def why(self, what: str) -> str:
        return (f"mock_api.{what} needs the mock in this process; with --mock-api-share-server "
                "(or --mock-api-container) the tests reach the mock over its control API "
                "(clock, requests(), request_count(), fault(), set_rate_limit(), reset(), "
                "snapshot(), add(), get() work)")

    @property
    def session(self) -> str:
        return self.name

    def origin(self, name: str) -> Origin:
        self.snapshot(name)
        now, frozen = self.clock()
        server, token = self.client.server, self.client.token

        def delete() -> None:
            client = ControlClient(server, token)
            try:
                client.call("deleteSnapshot", {"name": name})
            finally:
                client.close()

        return MockApiSnapshot(name, None, now if frozen else None), delete

    def close(self) -> None:
        try:
            self.client.call("deleteSession", {"name": self.name})
        finally:
            self.client.close()
