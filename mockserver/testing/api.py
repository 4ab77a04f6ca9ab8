"""What a test gets: `MockApi` (the `mock_api` fixture's value) and `ClockControl`.

Where the API is and who may call it belong to `MockApi`, and so do the httpx clients it
makes; everything that changes or reads the mock goes through its `Control` (control.py),
which does it in this process, over the control API, or skips against a real server.
"""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import pytest

from ..engine.app import MockApp
from ..engine.faults import FaultRule
from ..engine.state import MockState
from ..engine.toolexec import LIMITS
from .config import DEFAULT_TOKENS, REMOTE_SETTINGS, MockApiConfig
from .control import Control, InProcessControl, RealServerControl, RecordedRequest
from .identities import Tokens, Workspaces
from .server import TRANSPORT_SETTINGS, ssl_context
from .transport import AsyncDirectTransport
from .verify import Expectation, called_message, parse_target, select

# The fixture's clients' timeouts when the test gives none: httpx's 5 s, but a read waits past
# the mock's own longest wait, a custom tool's run (`toolexec.LIMITS.timeout_s`), so a slow
# run is answered by the mock ("timed out after 10 s"), not cut off by the client (W11).
CLIENT_TIMEOUT = httpx.Timeout(5.0, read=LIMITS.timeout_s + 20.0)

if TYPE_CHECKING:
    from .start import MockApiRun


class ClockControl:
    """The test's clock, read and moved through its control. Every part is a method: `now()`,
    `is_frozen()`, `advance(seconds)`, `set(instant)` (`frozen`, a property before, still
    works with a DeprecationWarning)."""

    def __init__(self, control: Control) -> None:
        self._control = control

    def now(self) -> str:
        """The mock's time now, e.g. "2026-11-01T12:00:00.000Z" (the default start, frozen)."""
        return self._control.clock()[0]

    def is_frozen(self) -> bool:
        """True while the clock stands still (the default): it moves only when told to."""
        return self._control.clock()[1]

    @property
    def frozen(self) -> bool:
        """Deprecated: `is_frozen()`."""
        warnings.warn("mock_api.clock.frozen is deprecated: call mock_api.clock.is_frozen() "
                      "(the clock's reads are methods, as now() is)", DeprecationWarning,
                      stacklevel=2)
        return self.is_frozen()

    def advance(self, seconds: float) -> None:
        """Move the clock forward by `seconds` (rate-limit windows, expiries and timestamps
        follow): the way to wait without sleeping."""
        self._control.advance_clock(seconds)

    def set(self, instant: str) -> None:
        """Set the clock to an ISO 8601 instant ("2027-01-01T00:00:00Z")."""
        self._control.set_clock(instant)


class ProgressionControl:
    """The session's progression modes (engine/progression.py): `set(kind, mode=...,
    running_after=..., done_after=...)` for agent_runs, workflow_executions, messages or
    kb_nodes (durations in seconds of the mock's clock), `get()` all of them."""

    def __init__(self, control: Control) -> None:
        self._control = control

    def get(self) -> dict[str, dict[str, Any]]:
        return dict(self._control.progression(None)["kinds"])

    def set(self, kind: str, mode: str | None = None, *, running_after: float | None = None,
            done_after: float | None = None) -> dict[str, Any]:
        """Set one kind's mode (`immediate`, `time`, `manual`) and durations; what is not
        given keeps its value. Refused (`Refused`, status 400) naming the field."""
        current = self.get().get(kind, {})
        value = {**current, **{k: v for k, v in (("mode", mode),
                                                 ("running_after", running_after),
                                                 ("done_after", done_after))
                               if v is not None}}
        return dict(self._control.progression({"kinds": {kind: value}})["kinds"][kind])


class SimulateControl:
    """Simulated inbound events through the product's own rules (engine/simulate.py,
    docs/simulate.md). Each answers with what it caused; refusals raise `Refused` (from
    mockserver.engine.progression) with `.status` 404 (an unknown id, named) or 400."""

    def __init__(self, control: Control) -> None:
        self._control = control

    def guest_message(self, body: str, *, conversation_id: str | None = None,
                      contact_id: str | None = None, channel: str | None = None,
                      attachments: list[Mapping[str, Any]] | None = None) -> dict[str, Any]:
        """A guest writes in on `conversation_id` (or the conversation of `contact_id` on
        `channel`): the ids of the message, conversation, contact, ticket, run, agent,
        escalation and autopilot reply (`sent_message_id`, written at `reply_due_at`), and
        `mode` (autopilot, proposal, escalated, failed, ai_paused, None)."""
        request: dict[str, Any] = {"body": body}
        for name, value in (("conversation_id", conversation_id), ("contact_id", contact_id),
                            ("channel", channel)):
            if value is not None:
                request[name] = value
        if attachments is not None:
            request["attachments"] = [dict(a) for a in attachments]
        return self._control.simulate("guest-message", request)

    def reservation(self, **fields: Any) -> dict[str, Any]:
        """A reservation synced from a PMS: new without `id`, changed with one. Answers
        `{"reservation", "trigger", "execution_ids", "created"}`."""
        return self._control.simulate("reservation", dict(fields))

    def call_ended(self, contact_id: str, **fields: Any) -> dict[str, Any]:
        """A call ended on the contact's conversation (`duration_ms`, `transcript`,
        `summary` ...): the call as stored."""
        return self._control.simulate("call", {"contact_id": contact_id, **fields})

    def helpdesk_ticket(self, **fields: Any) -> dict[str, Any]:
        """A helpdesk ticket synced from upstream: `id` changes a mirror, without it a new one."""
        return self._control.simulate("helpdesk-ticket", dict(fields))

    def delivery(self, message_id: str, status: str, error: str | None = None
                 ) -> dict[str, Any]:
        """The provider's delivery outcome for an outbound message (delivered, read, failed)."""
        body: dict[str, Any] = {"message_id": message_id, "status": status}
        if error is not None:
            body["error"] = error
        return self._control.simulate("delivery", body)


class MockApi:
    """The handle a test gets: where the API is, who may call it, and (mock only) its state.
    Without `control`: the given `mock` in this process, else the real server at `base_url`.

    Attributes:
        base_url: The API's base URL for this test: the mock's session
            (`http://127.0.0.1:PORT/sessions/NAME`), or the real server's.
        tokens: The fixtures' tokens by role: `.write`, `.read`, `.colleague`, `.other`.
        workspaces: The workspaces by role: `.primary` and `.secondary` (the write token's),
            `.other` (only the other token's).
        config: The settings in force for this test (marker, options, ini), a `MockApiConfig`.
    """

    def __init__(self, config: MockApiConfig, *, base_url: str, tokens: Tokens,
                 workspaces: Workspaces, control: Control | None = None,
                 mock: MockApp | None = None) -> None:
        if control is None:
            control = InProcessControl(mock) if mock is not None else RealServerControl(base_url)
        self.config = config
        self.base_url = base_url
        self.tokens = tokens
        self.workspaces = workspaces
        self._control = control
        self._dispatch = control.dispatch
        self._closers: list[Any] = []
        self._base: httpx.URL | None = None

    @staticmethod
    def start(fixtures: Any = None, **settings: Any) -> MockApiRun:
        """The mock without pytest (unittest, scripts, notebooks): `with MockApi.start(
        fixtures=..., clock=...) as api:`, or `@MockApi.start(...)` on a function (given
        `mock_api=` when it names it). See `testing/start.py`."""
        from .start import start

        return start(fixtures, **settings)

    # -- available against the mock and a real server ------------------------------------

    @property
    def is_mock(self) -> bool:
        """True against the mock, False against a real server (`--mock-api-base-url`)."""
        return self._control.is_mock

    def token(self, who: str | None = None) -> str:
        """A token by role name (write, read, colleague, other) or as given."""
        who = who or "write"
        token = getattr(self.tokens, who, who) if who in DEFAULT_TOKENS else who
        if token is None and self.is_mock:
            pytest.skip(f"the mock's fixtures define no {who} token")
        if token is None:
            pytest.skip(f"no {who} token configured for the real server at {self.base_url} "
                        f"(set {REMOTE_SETTINGS[who][1]})")
        return token

    def headers(self, token: str | None = None) -> dict[str, str]:
        """The `Authorization` header for a token (a role name or a token; default: write)."""
        return {"Authorization": f"Bearer {self.token(token)}"}

    def client(self, token: str | None = None, *, in_process: bool = False,
               **kwargs: Any) -> httpx.Client:
        """An httpx.Client with base_url and the token preset (closed after the test).
        `in_process=True` calls the ASGI app directly (no socket)."""
        if in_process:
            kwargs["transport"] = self.transport()
        elif self._dispatch is not None and not TRANSPORT_SETTINGS.intersection(kwargs):
            # The session's server, called in-process as uvicorn would call it (no socket,
            # no HTTP parsing, no thread switch), and not a new pool, connection and TLS
            # set-up per test for anything else.
            kwargs["transport"] = self._dispatch.direct()
        kwargs.setdefault("verify", ssl_context())
        kwargs.setdefault("timeout", CLIENT_TIMEOUT)
        hooks = kwargs.pop("event_hooks", {})
        if self._dispatch is not None and not in_process:
            hooks = {**hooks, "response": [*hooks.get("response", []), self._reraise]}
        client = httpx.Client(base_url=self._client_base(), headers=self.headers(token),
                              event_hooks=hooks, **kwargs)
        self._closers.append(client.close)
        return client

    def _client_base(self) -> httpx.URL:
        """`base_url` parsed once per test, ending in "/" as httpx keeps a client's base URL
        (httpx parses a URL given as text twice per client, character by character)."""
        if self._base is None:
            self._base = httpx.URL(self.base_url.rstrip("/") + "/")
        return self._base

    def async_client(self, token: str | None = None, *, in_process: bool = False,
                     **kwargs: Any) -> httpx.AsyncClient:
        """An httpx.AsyncClient with base_url and the token preset (close it, or use `async
        with`). `in_process=True` calls the ASGI app directly."""
        hooks = kwargs.pop("event_hooks", {})
        if in_process:
            kwargs["transport"] = self.async_transport()
        elif self._dispatch is not None and not TRANSPORT_SETTINGS.intersection(kwargs):
            # The session's server called on the test's loop as uvicorn would call it; a
            # socket for anything else (its own: connections belong to one event loop).
            kwargs["transport"] = AsyncDirectTransport(
                self._dispatch, self._dispatch.origin,
                httpx.AsyncHTTPTransport(verify=ssl_context()))
            hooks = {**hooks, "response": [*hooks.get("response", []), self._areraise]}
        kwargs.setdefault("verify", ssl_context())
        kwargs.setdefault("timeout", CLIENT_TIMEOUT)
        return httpx.AsyncClient(base_url=self._client_base(), headers=self.headers(token),
                                 event_hooks=hooks, **kwargs)

    # -- the mock, through its control ---------------------------------------------------

    def transport(self) -> httpx.BaseTransport:
        """A sync httpx transport calling the mock in-process (no socket)."""
        transport = self._control.transport()
        if self._dispatch is None:  # not the session's shared one: closed after the test
            self._closers.append(transport.close)
        return transport

    def async_transport(self) -> httpx.AsyncBaseTransport:
        """An async httpx transport calling the mock in-process (no socket)."""
        return self._control.async_transport()

    @property
    def app(self) -> Any:
        """The ASGI app serving the test's session (None unless the mock is in process)."""
        return self._control.app

    @property
    def session(self) -> str:
        """The name of the test's session on the server (its base URL ends in it)."""
        return self._control.session

    def snapshot(self, name: str | None = None) -> str:
        """Save the test's state as a snapshot (to fork sessions from); returns its name."""
        return self._control.snapshot(name)

    @property
    def mock(self) -> MockApp:
        """The MockApp itself (the pipeline) for anything the helpers do not cover."""
        return self._control.in_process("mock").mock

    @property
    def state(self) -> MockState:
        """The test's mock state (store, clock, journal ...): read its parts, change it
        through its methods."""
        return self._control.in_process("state").state

    @property
    def clock(self) -> ClockControl:
        """The mock's clock: `.advance(seconds)`, `.set(iso)`, `.now()`, `.is_frozen()`."""
        return ClockControl(self._control)

    @property
    def journal(self) -> Any:
        """The session's journal object itself (in-process mock only); `requests()` is the
        usual way to read it."""
        return self._control.in_process("journal").state.journal

    def requests(self, method: str | None = None, path: str | None = None,
                 status: int | None = None) -> list[RecordedRequest]:
        """Requests the mock received in this test, oldest first, as recorded requests (see
        below): `method` and `status` filter exactly, `path` is a prefix. Each has .method
        .path .query .headers (token redacted) .json (the body) .status."""
        return self._control.requests(method, path, status)

    def request_count(self, method: str | None = None, path: str | None = None,
                      status: int | None = None) -> int:
        """How many requests the mock received in this test (filtered as `requests()`),
        without reading them."""
        return self._control.request_count(method, path, status)

    def calls(self, operation: str | None = None, method: str | None = None,
              path: str | None = None, status: int | None = None) -> list[RecordedRequest]:
        """The journal entries of this test that match, oldest first: by `operation` (an
        operationId, `listTickets`), `method`, `path` (exact, a template `/v1/tickets/{id}`,
        or a prefix ending in `*`, as a fault rule's) and `status`. `len(...)` is the count
        (respx's `call_count`)."""
        return select(self.requests(), Expectation(operation, method, path, status))

    def assert_called(self, operation_or_path: str, times: int | None = None, *,
                      method: str | None = None,
                      status: int | None = None) -> list[RecordedRequest]:
        """Fail unless the requests named (an operationId, a path or template, or
        `"POST /v1/tickets"`) were received `times` times (None: at least once), listing the
        matching requests and the closest others (WireMock's `verify`). Returns the matches."""
        expected = parse_target(operation_or_path, method=method, status=status)
        entries = self.requests()
        found = select(entries, expected)
        if (len(found) != times) if times is not None else not found:
            raise AssertionError(called_message(expected, times, found, entries))
        return found

    def assert_not_called(self, operation_or_path: str, *, method: str | None = None,
                          status: int | None = None) -> None:
        """`assert_called(..., times=0)`."""
        self.assert_called(operation_or_path, 0, method=method, status=status)

    def export_har(self, file: str | os.PathLike[str] | None = None, *,
                   method: str | None = None, path: str | None = None,
                   status: int | None = None) -> dict[str, Any]:
        """The test's requests (filtered as `requests()`: `path` a prefix) as an HTTP Archive
        1.2 document, written to `file` when given (DevTools' Network panel, HTTP Toolkit and
        Bruno import it); tokens redacted as the journal redacts them. Returns the document."""
        document = self._control.har(method, path, status)
        if file is not None:
            Path(file).write_text(json.dumps(document, indent=2, ensure_ascii=False),
                                  encoding="utf-8")
        return document

    @property
    def last_request(self) -> RecordedRequest:
        """The last request the mock received in this test (an AssertionError if none)."""
        found = self.requests()
        if not found:
            raise AssertionError("the mock received no request in this test")
        return found[-1]

    def fault(self, method: str | None = None, path: str | None = None, *,
              status: int | None = None, count: int | None = 1, delay: float = 0.0,
              drop: bool = False, probability: float = 1.0, error: str | None = None,
              headers: Mapping[str, str] | None = None) -> FaultRule:
        """Make the next `count` matching requests fail with `status`, wait `delay` seconds
        (then answer normally, unless a status is given) or lose their connection (`drop`)."""
        return self._control.fault(dict(
            method=method, path=path, status=status, count=count, delay_ms=int(delay * 1000),
            drop=drop, probability=probability, error=error, headers=dict(headers or {})))

    def stub(self, method: str, path: str, status: int = 200, json: Any = None,
             headers: Mapping[str, str] | None = None, times: int | None = 1, *,
             validate: bool = True) -> FaultRule:
        """Answer the next `times` requests matching `method` and `path` (exact or a template,
        as a fault's) with `status`, the `json` body and `headers`; then the state answers
        again (None: until reset). The answer is checked against the document first (the
        status documented for the operation, the body its response schema): ValueError naming
        the field, unless `validate=False`, which keeps it as given and marks the requests it
        answers off-contract in the journal (`RecordedRequest.off_contract`). WireMock's
        `stubFor`, pytest-httpserver's `expect_request(...).respond_with_json(...)`."""
        spec: dict[str, Any] = {"method": method, "path": path, "status": status,
                                "count": times, "validate": validate}
        if json is not None:
            spec["json"] = json
        if headers:
            spec["headers"] = dict(headers)
        return self._control.stub(spec)

    def set_rate_limit(self, per_minute: int | None = None, *, workspace: str | None = None,
                       enabled: bool | None = None) -> None:
        """The default limit (or one workspace's) for the rest of the test."""
        self._control.set_rate_limit(per_minute, workspace, enabled)

    def reset(self) -> None:
        """Back to the test's starting state (records, clock, rate limits; journal and
        faults cleared)."""
        self._control.reset()

    def get(self, table: str, key: str) -> dict[str, Any] | None:
        """A stored record as the API shows it (internal `_` fields dropped)."""
        return self._control.get(table, key)

    def add(self, table: str, overrides: Mapping[str, Any] | None = None, /,
            **fields: Any) -> dict[str, Any]:
        """Insert a record factory-style: a copy of an existing fixture record of `table` (one
        in the same workspace when possible) with a new id, fresh timestamps and your fields.
        Validated like a fixture (closed schema, references); returns the record as stored
        (internal `_` fields dropped).

        `table` is a fixture file's name (`fixtures/<table>.yaml`: tickets, contacts, agents,
        kb_nodes ...; an unknown name is refused listing them all). Tables whose records come
        in kinds copy one of the kind asked: `kb_nodes` copies a file when you give `body` or
        `entity_ids` (or `is_directory=False`), a folder otherwise, and refuses a folder with
        a body (data/tables.py, `Kinds`)."""
        return self._control.add(table, {**(overrides or {}), **fields}, self.workspaces.primary)

    # -- progression: the workspace lives ------------------------------------------------

    @property
    def progression(self) -> ProgressionControl:
        """Modes per kind: `mock_api.progression.set("agent_runs", mode="time",
        running_after=1, done_after=6)`."""
        return ProgressionControl(self._control)

    def transition(self, table: str, key: str, status: str, **fields: Any) -> dict[str, Any]:
        """Move a run, execution, message or file forward as the service would (a guarded
        transition): returns the record as the API now shows it. `Refused` (from
        mockserver.engine.progression) with `.status` 409 naming the state it is in when the
        move is not allowed, 404 for an unknown id, 400 naming a field."""
        return self._control.transition(table, key, {"status": status, **fields})

    def script_agent(self, agent_id: str, outcomes: list[Mapping[str, Any]]) -> dict[str, Any]:
        """The agent's next dispatches take these outcomes in order (the run's fields as the
        API shows them); later ones take the default and are listed as misses (`scripts()`)."""
        return self._control.script("agents", agent_id, [dict(o) for o in outcomes])

    def script_workflow(self, workflow_id: str,
                        outcomes: list[Mapping[str, Any]]) -> dict[str, Any]:
        """The workflow's next executions (`add("workflow_executions", workflow_id=...)`) take
        these outcomes (`status` SUCCESS, FAILED, CANCELLED, `error_summary`) in order."""
        return self._control.script("workflows", workflow_id, [dict(o) for o in outcomes])

    def scripts(self) -> dict[str, Any]:
        """Scripts, outcomes consumed and dispatches that missed."""
        return self._control.scripts()

    # -- simulated inbound events ----------------------------------------------------------

    @property
    def simulate(self) -> SimulateControl:
        """Inbound events: `mock_api.simulate.guest_message("Hi", conversation_id=...)`,
        `mock_api.simulate.reservation(workspace_id=..., contact_id=..., ...)`."""
        return SimulateControl(self._control)

    # -- server-side failures ------------------------------------------------------------

    def _reraise(self, response: httpx.Response) -> None:
        dispatch = self._dispatch
        if dispatch is None or response.status_code < 500:
            return
        dispatch.wait_idle()
        error = dispatch.take_error()
        if error is not None:
            raise error

    async def _areraise(self, response: httpx.Response) -> None:
        self._reraise(response)

    def _close(self) -> BaseException | None:
        """The test is over: its clients closed; what the server raised meanwhile."""
        for close in reversed(self._closers):
            close()
        self._closers.clear()
        return self._control.finish()
