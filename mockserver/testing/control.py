"""The one control interface `mock_api` drives, and its three implementations.

`Control` is the protocol: reset, fault, clock, rate limit, requests, snapshot, add, get, and
the in-process handles (the app, its state). Every operation of the base class skips the test
with the implementation's reason; each implementation overrides what it can do:

- `InProcessControl`: the mock in this process (the session's server, or a `MockApp` given).
- `HttpControl`: a session on a mock reached over its control API (the server xdist workers
  share, a container), each call an operation of `spec/control-openapi.yaml` looked up by its
  `operationId`, as the server's own routes are (`ControlClient`).
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
from ..engine.errors import ApiError
from ..engine.faults import FaultRule
from ..engine.progress_control import (
    get_progression,
    list_scripts,
    set_progression,
    set_script,
    transition_record,
)
from ..engine.progression import Refused
from ..engine.records import add_record, get_record, no_record, unknown_table
from ..engine.sessions import SESSION_HEADER, SESSION_PREFIX
from ..engine.state import MockState
from ..standalone.control import CONTROL_HEADER, control_spec
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

    def set_rate_limit(self, per_minute: int | None, workspace: str | None,
                       enabled: bool | None) -> None:
        self._skip("set_rate_limit()")

    def requests(self, method: str | None, path: str | None, status: int | None) -> list[Any]:
        self._skip("requests()")

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


class InProcessControl(Control):
    """The mock in this process: a session of the session server's mock (`open`), or the
    given mock's state (`dispatch` None: no server)."""

    is_mock = True

    def __init__(self, mock: MockApp, state: MockState | None = None, app: Any = None,
                 dispatch: Dispatch | None = None) -> None:
        self.mock = mock
        self.state = state if state is not None else mock.state
        self.app = app
        self.dispatch = dispatch

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

    def reset(self) -> None:
        self.state.reset()

    def fault(self, spec: dict[str, Any]) -> FaultRule:
        self.mock.check_fault(spec["method"], spec["path"])  # a typo named here, not later
        return self.state.add_fault(**spec)

    def set_rate_limit(self, per_minute: int | None, workspace: str | None,
                       enabled: bool | None) -> None:
        if workspace is not None:
            self.state.set_rate_limits(workspaces={workspace: per_minute})
        else:
            self.state.set_rate_limits(per_minute=per_minute, enabled=enabled)

    def requests(self, method: str | None, path: str | None, status: int | None) -> list[Any]:
        return self.state.journal.entries(method=method, path=path, status=status)

    def clock(self) -> tuple[str, bool]:
        clock = self.state.clock
        return clock.now(), clock.frozen

    def advance_clock(self, seconds: float) -> None:
        self.state.advance_clock(seconds)

    def set_clock(self, instant: str) -> None:
        self.state.set_clock(instant)

    def snapshot(self, name: str | None) -> str:
        name = name or f"{self.session}-snap"
        self.mock.sessions.save_snapshot(name, self.session, replace=True)
        return name

    def origin(self, name: str) -> Origin:
        sessions = self.mock.sessions
        snap = sessions.save_snapshot(name, self.session, replace=True)
        return (MockApiSnapshot(name, self.mock, snap.settings.frozen_clock),
                lambda: sessions.delete_snapshot(name))

    def add(self, table: str, values: dict[str, Any], primary: str | None) -> dict[str, Any]:
        try:
            return add_record(self.mock, self.state, table, values, primary)
        except ApiError as error:
            refused = add_refused(table, error.status_code, error.message)
            if refused is None:
                raise
            raise refused from None

    def get(self, table: str, key: str) -> dict[str, Any] | None:
        try:
            return get_record(self.state, table, key)
        except ApiError as error:
            raise pytest.UsageError(f"mock_api.get: {error.message}") from None

    def progression(self, body: dict[str, Any] | None) -> dict[str, Any]:
        if body is None:
            return get_progression(self.state)
        return _refusing(lambda: set_progression(self.state, body))

    def transition(self, table: str, key: str, body: dict[str, Any]) -> dict[str, Any]:
        found = _refusing(lambda: transition_record(self.mock, self.state, table, key, body))
        return dict(found["data"])

    def script(self, kind: str, target: str, outcomes: list[Any]) -> dict[str, Any]:
        found = _refusing(lambda: set_script(self.mock, self.state, kind, target,
                                             {"outcomes": outcomes}))
        return dict(found["data"])

    def scripts(self) -> dict[str, Any]:
        return dict(list_scripts(self.state)["data"])

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


def add_refused(table: str, status: int, message: str) -> Exception | None:
    """`mock_api.add`'s refusal as a test sees it, whichever control ran it: an unknown table
    (404) is a usage error, a record the mock refuses (400, 409) a ValueError naming the
    field; None for anything else (507, 503 ...: raised as it came)."""
    if status == 404:
        return pytest.UsageError(f"mock_api.add: {message}")
    if status in (400, 409):
        return ValueError(f"mock_api.add({table!r}): {message}")
    return None


# -- over the control API --------------------------------------------------------------------

def _refused(status: int, message: str) -> Exception | None:
    """A progression call's refusal (400, 404, 409) as `Refused`, over HTTP as in process."""
    return Refused(status, message) if status in (400, 404, 409) else None


def _refusing(call: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    try:
        return call()
    except ApiError as error:
        refused = _refused(error.status_code, error.message)
        if refused is None:
            raise
        raise refused from None


class ControlClient:
    """The control API over HTTP: each call names an operation of spec/control-openapi.yaml,
    whose method, path and success status come from the document (as the server's routes do);
    `session` addresses a session's own control API (`/sessions/{name}/__mock__/...`)."""

    def __init__(self, server: str, token: str | None = None) -> None:
        self.server = server
        self._http = httpx.Client(timeout=30, headers={CONTROL_HEADER: token} if token else {})

    def call(self, operation_id: str, body: Any = None, *, session: str | None = None,
             query: Mapping[str, Any] | None = None, path: Mapping[str, str] | None = None,
             refused: Callable[[int, str], Exception | None] | None = None) -> Any:
        """The operation's answer (its JSON, None when empty); RuntimeError for any other
        status, unless `refused(status, error message)` gives the exception to raise."""
        operation = control_spec().by_id[operation_id]
        url = self.server + (f"{SESSION_PREFIX}{session}" if session else "")
        url += operation.path.format(**{k: urllib.parse.quote(v, safe="")
                                        for k, v in (path or {}).items()})
        params = {k: v for k, v in (query or {}).items() if v is not None}
        response = self._http.request(operation.method, url, json=body, params=params)
        if response.status_code != operation.success_status:
            if refused is not None:
                try:
                    message = str(response.json()["error"])
                except (ValueError, KeyError, TypeError):
                    message = response.text
                error = refused(response.status_code, message)
                if error is not None:
                    raise error
            raise RuntimeError(f"mock control {operation_id} ({operation.method} "
                               f"{response.request.url.path}): {response.status_code} "
                               f"{response.text}")
        return response.json() if response.content else None

    def close(self) -> None:
        self._http.close()


@dataclass(frozen=True)
class RecordedRequest:
    """A journal entry read over the control API: the attributes of `JournalEntry` a test
    reads (.method .path .query .headers .json .status .ignored_params)."""

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

    @property
    def query_string(self) -> bytes:
        return urllib.parse.urlencode(self.query, doseq=True).encode("latin-1")


_sessions = itertools.count(1)


class HttpControl(Control):
    """A test's session on a mock reached over HTTP (the server xdist workers share, or a
    container), through its control API."""

    is_mock = True

    def __init__(self, client: ControlClient, session: str, token: str | None) -> None:
        self.client = client
        self.name = session
        self.token = token

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
        client = ControlClient(server, token)
        client.call("createSession", body)
        return cls(client, name, token)

    @property
    def base_url(self) -> str:
        return f"{self.client.server}{SESSION_PREFIX}{self.name}"

    def why(self, what: str) -> str:
        return (f"mock_api.{what} needs the mock in this process; with --mock-api-share-server "
                "(or --mock-api-container) the tests reach the mock over its control API "
                "(clock, requests(), fault(), set_rate_limit(), reset(), snapshot(), add(), "
                "get() work)")

    @property
    def session(self) -> str:
        return self.name

    def _call(self, operation_id: str, body: Any = None, **query: Any) -> Any:
        return self.client.call(operation_id, body, session=self.name, query=query)

    def add(self, table: str, values: dict[str, Any], primary: str | None) -> dict[str, Any]:
        def refused(status: int, message: str) -> Exception | None:
            return add_refused(table, status, message)

        found = self.client.call("addRecord", values, session=self.name,
                                 query={"workspace": primary}, path={"table": table},
                                 refused=refused)
        return dict(found["data"])

    def get(self, table: str, key: str) -> dict[str, Any] | None:
        def refused(status: int, message: str) -> Exception | None:
            if status != 404:
                return None
            if message == unknown_table(table).message:
                return pytest.UsageError(f"mock_api.get: {message}")
            if message == no_record(table, key).message:
                return LookupError(message)  # no such record: None
            return None  # no session, no such route (an older server): RuntimeError

        try:
            found = self.client.call("getRecord", session=self.name,
                                     path={"table": table, "id": key}, refused=refused)
        except LookupError:
            return None
        return dict(found["data"])

    def progression(self, body: dict[str, Any] | None) -> dict[str, Any]:
        if body is None:
            return dict(self._call("getProgression"))
        return dict(self.client.call("setProgression", body, session=self.name,
                                     refused=_refused))

    def transition(self, table: str, key: str, body: dict[str, Any]) -> dict[str, Any]:
        found = self.client.call("transitionRecord", body, session=self.name,
                                 path={"table": table, "id": key}, refused=_refused)
        return dict(found["data"])

    def script(self, kind: str, target: str, outcomes: list[Any]) -> dict[str, Any]:
        operation = "setAgentScript" if kind == "agents" else "setWorkflowScript"
        found = self.client.call(operation, {"outcomes": outcomes}, session=self.name,
                                 path={"id": target}, refused=_refused)
        return dict(found["data"])

    def scripts(self) -> dict[str, Any]:
        return dict(self._call("listScripts")["data"])

    def reset(self) -> None:
        self._call("resetMock")

    def fault(self, spec: dict[str, Any]) -> FaultRule:
        body = {k: v for k, v in spec.items()
                if v is not None or k == "count"}  # the control API's nulls: count only
        found = self._call("addFault", body)["data"]
        rule = FaultRule(**{k: v for k, v in found.items() if k not in ("remaining", "hits")})
        rule.hits = found["hits"]
        return rule

    def set_rate_limit(self, per_minute: int | None, workspace: str | None,
                       enabled: bool | None) -> None:
        body: dict[str, Any] = {"workspaces": {workspace: per_minute}} if workspace else {}
        if workspace is None and per_minute is not None:
            body["per_minute"] = per_minute
        if workspace is None and enabled is not None:
            body["enabled"] = enabled
        self._call("setRateLimits", body)

    def requests(self, method: str | None, path: str | None, status: int | None) -> list[Any]:
        entries = self._call("listRecordedRequests", method=method, path=path,
                             status=status)["data"]
        return [RecordedRequest(e["seq"], e["time"], e["method"], e["path"], e["query"],
                                e["headers"], e.get("body"), e["status"],
                                e.get("response_body"), e.get("operation_id"), e.get("fault"),
                                tuple(e.get("ignored_params", ())))
                for e in entries]

    def clock(self) -> tuple[str, bool]:
        found = self._call("getClock")
        return str(found["now"]), bool(found["frozen"])

    def advance_clock(self, seconds: float) -> None:
        self._call("setClock", {"advance_seconds": seconds})

    def set_clock(self, instant: str) -> None:
        self._call("setClock", {"now": instant})

    def snapshot(self, name: str | None) -> str:
        name = name or f"{self.name}-snap"
        self.client.call("saveSnapshot", {"name": name, "session": self.name, "replace": True})
        return name

    def origin(self, name: str) -> Origin:
        self.snapshot(name)
        now, frozen = self.clock()
        server, token = self.client.server, self.token

        def delete() -> None:
            client = ControlClient(server, token)
            try:
                client.call("deleteSnapshot", path={"name": name})
            finally:
                client.close()

        return MockApiSnapshot(name, None, now if frozen else None), delete

    def close(self) -> None:
        try:
            self.client.call("deleteSession", path={"name": self.name})
        finally:
            self.client.close()
