"""pytest plugin: a `mock_api` fixture serving the Workspace API mock to the code under test.

Registered through the `pytest11` entry point, so installing the package is enough:

    def test_lists_open_tickets(mock_api):
        client = mock_api.client()                      # httpx.Client, base_url + write token
        mock_api.add("tickets", {"status": "pending"})  # factory: defaults from a fixture record
        assert my_code.open_tickets(mock_api.base_url, mock_api.tokens.write, ...)
        assert mock_api.requests(path="/v1/tickets")[0].query["status"] == "open"

One uvicorn server per session (a thread on 127.0.0.1, a free port); before each test the
mock goes back to its fixtures (store, clock, rate limits, journal, faults). Self-check is on:
a response the document does not allow fails the test (in the test thread, at the call that
received it, or at teardown). Configuration, most specific last: ini options, environment,
command-line options, the `mock_api_config` fixture (override it in a conftest), and the
`@pytest.mark.mock_api(...)` marker. With `--mock-api-base-url` (or MOCK_API_BASE_URL) the
same tests run against a real server; the mock-only helpers then skip the test.
"""

from __future__ import annotations

import dataclasses
import os
import socket
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from .app import Config, MockApp, create_app
from .faults import ConnectionDropped, FaultRule
from .fixtures import default_fixtures_dir, record_check
from .journal import JournalEntry
from .tables import TABLES
from .transport import AsyncASGITransport, SyncASGITransport

__all__ = ["MockApi", "MockApiConfig", "MockServer", "Tokens", "Workspaces"]

DEFAULT_CLOCK = "2026-11-01T12:00:00.000Z"
DEFAULT_TOKENS = {
    "write": "mock-write-token",
    "read": "mock-read-token",
    "colleague": "mock-colleague-token",
    "other": "mock-other-token",
}
# Real-server mode: where tokens and workspace ids come from (option, environment variable).
_REMOTE_SETTINGS = {
    "write": ("--mock-api-token", "MOCK_API_TOKEN"),
    "read": ("--mock-api-read-token", "MOCK_API_READ_TOKEN"),
    "colleague": ("--mock-api-colleague-token", "MOCK_API_COLLEAGUE_TOKEN"),
    "other": ("--mock-api-other-token", "MOCK_API_OTHER_TOKEN"),
    "primary": ("--mock-api-workspace", "MOCK_API_WORKSPACE"),
    "secondary": ("--mock-api-second-workspace", "MOCK_API_SECOND_WORKSPACE"),
    "other_workspace": ("--mock-api-other-workspace", "MOCK_API_OTHER_WORKSPACE"),
}
_MARKER_FIELDS = ("fixtures", "rate_limit", "seed", "self_check", "clock", "journal_size",
                  "strict_params", "fail_on_ignored_params")


# -- configuration ---------------------------------------------------------------------------

@dataclass(frozen=True)
class MockApiConfig:
    """How `mock_api` runs. Override the `mock_api_config` fixture to change it for a directory:

        @pytest.fixture
        def mock_api_config(mock_api_config):
            return mock_api_config.replace(rate_limit=10)
    """

    fixtures: tuple[Path, ...] = ()  # fixture directories overlaid in order; () = the defaults
    # Per minute, for every workspace (fixture plan limits included); 0 turns limits off;
    # None keeps the mock's defaults (120, and the fixtures' per-workspace plan limits).
    rate_limit: int | None = None
    seed: int = 0  # deterministic ids
    self_check: bool = True  # every response validated against the document's closed schemas
    clock: str | None = DEFAULT_CLOCK  # frozen at this instant; None: wall time
    journal_size: int = 1000
    # Unknown query parameters: ignored (as the real service does) and journaled by default;
    # strict_params refuses them with 400; fail_on_ignored_params fails the test that sent one.
    strict_params: bool = False
    fail_on_ignored_params: bool = False
    base_url: str | None = None  # a real server: the mock is not started
    remote: Mapping[str, str | None] = field(default_factory=dict)  # tokens/workspaces there

    def replace(self, **changes: Any) -> MockApiConfig:
        if "fixtures" in changes:
            changes["fixtures"] = _as_paths(changes["fixtures"])
        return dataclasses.replace(self, **changes)

    @property
    def real_server(self) -> bool:
        return self.base_url is not None


def _as_paths(value: Any, base: Path | None = None) -> tuple[Path, ...]:
    if value is None:
        return ()
    items = [value] if isinstance(value, str | Path) else list(value)
    out = []
    for item in items:
        if item == "default":  # the packaged fixtures, to overlay your own on top of them
            out.append(default_fixtures_dir())
            continue
        path = Path(item)
        if base is not None and not path.is_absolute():
            path = base / path
        out.append(path.resolve())
    return tuple(out)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("mock_api", "Workspace API mock (mock_api fixture)")
    group.addoption("--mock-api-fixtures", action="append", default=None, metavar="DIR",
                    help="fixture directory for mock_api (repeat to overlay)")
    group.addoption("--mock-api-rate-limit", type=int, default=None, metavar="N",
                    help="requests per minute per workspace (0: no limits)")
    group.addoption("--mock-api-seed", type=int, default=None, help="seed for generated ids")
    group.addoption("--mock-api-self-check", choices=("on", "off"), default=None,
                    help="validate every mock response against the document (default on)")
    group.addoption("--mock-api-clock", default=None, metavar="ISO|real",
                    help=f"frozen start instant of the mock clock (default {DEFAULT_CLOCK}); "
                         "'real' follows wall time")
    group.addoption("--mock-api-strict-params", action="store_true", default=None,
                    help="refuse unknown query parameters with 400 (default: ignore them)")
    group.addoption("--mock-api-fail-on-ignored-params", action="store_true", default=None,
                    help="fail a test that sent a query parameter the mock ignored")
    group.addoption("--mock-api-base-url", default=None, metavar="URL",
                    help="run mock_api tests against this real server (env MOCK_API_BASE_URL)")
    for name, (option, env) in _REMOTE_SETTINGS.items():
        group.addoption(option, default=None, help=f"real-server mode: {name} (env {env})")
    parser.addini("mock_api_fixtures", "fixture directories for mock_api", type="paths",
                  default=[])
    parser.addini("mock_api_rate_limit", "requests per minute per workspace", default="")
    parser.addini("mock_api_seed", "seed for generated ids", default="")
    parser.addini("mock_api_self_check", "validate mock responses (default true)", type="bool",
                  default=True)
    parser.addini("mock_api_clock", "frozen start instant, or 'real'", default="")
    parser.addini("mock_api_strict_params", "refuse unknown query parameters with 400",
                  type="bool", default=False)
    parser.addini("mock_api_fail_on_ignored_params",
                  "fail a test that sent a query parameter the mock ignored", type="bool",
                  default=False)
    parser.addini("mock_api_base_url", "run against this real server instead", default="")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "mock_api(fixtures=None, rate_limit=None, seed=None, self_check=None, clock=None, "
        "journal_size=None, strict_params=None, fail_on_ignored_params=None): configure the mock_api fixture for this test",
    )


def _config_from_options(pytestconfig: pytest.Config) -> MockApiConfig:
    def pick(option: str, ini: str) -> Any:
        value = pytestconfig.getoption(option)
        if value is not None:
            return value
        value = pytestconfig.getini(ini)
        return value if value not in ("", None, []) else None

    config = MockApiConfig()
    fixtures = pytestconfig.getoption("--mock-api-fixtures")
    if fixtures:
        config = config.replace(fixtures=_as_paths(fixtures, Path.cwd()))
    elif pytestconfig.getini("mock_api_fixtures"):
        config = config.replace(fixtures=_as_paths(pytestconfig.getini("mock_api_fixtures")))
    rate = pick("--mock-api-rate-limit", "mock_api_rate_limit")
    if rate is not None:
        config = config.replace(rate_limit=int(rate))
    seed = pick("--mock-api-seed", "mock_api_seed")
    if seed is not None:
        config = config.replace(seed=int(seed))
    check = pytestconfig.getoption("--mock-api-self-check")
    config = config.replace(self_check=(check == "on") if check is not None
                            else bool(pytestconfig.getini("mock_api_self_check")))
    clock = pick("--mock-api-clock", "mock_api_clock")
    if clock is not None:
        config = config.replace(clock=None if clock == "real" else clock)
    for name in ("strict_params", "fail_on_ignored_params"):
        flag = pytestconfig.getoption(f"--mock-api-{name.replace('_', '-')}")
        config = config.replace(**{name: bool(flag or pytestconfig.getini(f"mock_api_{name}"))})
    base_url = (pytestconfig.getoption("--mock-api-base-url") or os.environ.get("MOCK_API_BASE_URL")
                or pytestconfig.getini("mock_api_base_url") or None)
    if base_url:
        remote = {name: pytestconfig.getoption(option) or os.environ.get(env)
                  for name, (option, env) in _REMOTE_SETTINGS.items()}
        config = config.replace(base_url=base_url.rstrip("/"), remote=remote)
    return config


# -- the session server ----------------------------------------------------------------------

# What makes a client need its own transport rather than the session's shared one.
_TRANSPORT_SETTINGS = frozenset({"transport", "verify", "cert", "trust_env", "http1", "http2",
                                 "limits", "proxy", "mounts", "app"})
_SSL: list[Any] = []
_SSL_LOCK = threading.Lock()


def _ssl_context() -> Any:
    """One default SSL context per process, given to every client the fixture makes: httpx
    would otherwise load the CA bundle again for each client (~25 ms)."""
    with _SSL_LOCK:
        if not _SSL:
            _SSL.append(httpx.create_ssl_context())
        return _SSL[0]


class _Shared(httpx.BaseTransport):
    """A transport shared by the clients of many tests: a client's close() leaves it open;
    the session closes it (`shutdown`)."""

    def __init__(self, inner: httpx.BaseTransport) -> None:
        self._inner = inner

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        return self._inner.handle_request(request)

    def close(self) -> None:
        pass

    def shutdown(self) -> None:
        self._inner.close()


class _KeepAlive(httpx.BaseTransport):
    """A session-wide connection pool shared by the clients of many tests: a client's
    close() leaves it open (connections are per server, not per test); the session closes it."""

    def __init__(self) -> None:
        self._inner = httpx.HTTPTransport(verify=_ssl_context())

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        return self._inner.handle_request(request)

    def close(self) -> None:
        pass

    def shutdown(self) -> None:
        self._inner.close()


class _Dispatch:
    """The ASGI app uvicorn serves: forwards to the current test's mock and keeps what it
    raises (a self-check violation, a handler crash) so the test thread can re-raise it."""

    def __init__(self) -> None:
        self.target: Any = None
        self.errors: list[BaseException] = []
        self._active = 0
        self._idle = threading.Condition()
        self._keep_alive: _KeepAlive | None = None
        self._in_process: dict[int, tuple[Any, _Shared]] = {}

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan" or self.target is None:
            return
        with self._idle:
            self._active += 1
        try:
            await self.target(scope, receive, send)
            if "mock.error" in scope:  # answered 500 {"error": ...}: fail the test with it
                self.errors.append(scope["mock.error"])
        except ConnectionDropped:
            raise  # an injected drop: let uvicorn close the connection
        except Exception as exc:  # Starlette has already answered 500
            self.errors.append(exc)
        finally:
            with self._idle:
                self._active -= 1
                self._idle.notify_all()

    def keep_alive(self) -> httpx.BaseTransport:
        """The transport `mock_api.client()` uses: one pool of keep-alive connections to
        this server for the whole session (closing a client leaves it open)."""
        if self._keep_alive is None:
            self._keep_alive = _KeepAlive()
        return self._keep_alive

    def in_process(self, app: Any) -> httpx.BaseTransport:
        """A sync in-process transport to this app, shared by the tests of the session
        (closing a client leaves it open; the session closes it)."""
        found = self._in_process.get(id(app))
        if found is None or found[0] is not app:
            found = self._in_process[id(app)] = (app, _Shared(SyncASGITransport(app)))
        return found[1]

    def close(self) -> None:
        if self._keep_alive is not None:
            self._keep_alive.shutdown()
            self._keep_alive = None
        for _, transport in self._in_process.values():
            transport.shutdown()
        self._in_process.clear()

    def wait_idle(self, timeout: float = 2.0) -> None:
        with self._idle:
            self._idle.wait_for(lambda: self._active == 0, timeout)

    def take_error(self) -> BaseException | None:
        return self.errors.pop(0) if self.errors else None


class MockServer:
    """uvicorn in a daemon thread on 127.0.0.1, a free port; mocks built on demand and cached
    by what needs a rebuild (fixtures, self-check, frozen or real clock)."""

    def __init__(self) -> None:
        import uvicorn

        started = time.perf_counter()
        self.dispatch = _Dispatch()
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._socket.bind(("127.0.0.1", 0))
        self.port = self._socket.getsockname()[1]
        self.base_url = f"http://127.0.0.1:{self.port}"
        config = uvicorn.Config(self.dispatch, host="127.0.0.1", port=self.port,
                                log_level="warning", lifespan="off", access_log=False)
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run,
                                        kwargs={"sockets": [self._socket]},
                                        name="mock-api-server", daemon=True)
        self._thread.start()
        while not self._server.started:
            if not self._thread.is_alive():
                raise RuntimeError("the mock_api server thread died while starting")
            time.sleep(0.001)
        self.start_seconds = time.perf_counter() - started
        self._mocks: dict[tuple[Any, ...], tuple[MockApp, Any]] = {}

    def mock_for(self, config: MockApiConfig) -> tuple[MockApp, Any]:
        key = (config.fixtures, config.self_check, config.clock is None, config.journal_size)
        found = self._mocks.get(key)
        if found is None:
            mock = MockApp(Config(
                fixtures=list(config.fixtures), seed=config.seed,
                self_check=config.self_check, frozen_clock=config.clock,
                cursor_secret=b"mock_api", base_url=self.base_url,
                journal_size=config.journal_size,
            ))
            found = self._mocks[key] = (mock, create_app(mock=mock))
        return found

    def stop(self) -> None:
        self.dispatch.close()
        self._server.should_exit = True
        self._thread.join(timeout=5)
        self._socket.close()


class _Session:
    """Starts the server on first use, so sessions that never use mock_api never pay for it."""

    def __init__(self) -> None:
        self.server: MockServer | None = None

    def get(self) -> MockServer:
        if self.server is None:
            self.server = MockServer()
        return self.server

    def close(self) -> None:
        if self.server is not None:
            self.server.stop()
            self.server = None


# -- what a test sees ------------------------------------------------------------------------

@dataclass(frozen=True)
class Tokens:
    write: str | None
    read: str | None
    colleague: str | None
    other: str | None


@dataclass(frozen=True)
class Workspaces:
    primary: str | None  # the write token's first workspace
    secondary: str | None  # its second workspace
    other: str | None  # a workspace only the `other` token can reach


class MockApi:
    """The handle a test gets: where the API is, who may call it, and (mock only) its state."""

    def __init__(self, config: MockApiConfig, *, base_url: str, tokens: Tokens,
                 workspaces: Workspaces, mock: MockApp | None = None, app: Any = None,
                 dispatch: _Dispatch | None = None) -> None:
        self.config = config
        self.base_url = base_url
        self.tokens = tokens
        self.workspaces = workspaces
        self._mock = mock
        self.app = app
        self._dispatch = dispatch
        self._closers: list[Any] = []

    # -- available against the mock and a real server ------------------------------------

    @property
    def is_mock(self) -> bool:
        return self._mock is not None

    def token(self, who: str | None = None) -> str:
        """A token by role name (write, read, colleague, other) or as given."""
        who = who or "write"
        token = getattr(self.tokens, who, who) if who in DEFAULT_TOKENS else who
        if token is None and self.is_mock:
            pytest.skip(f"the mock's fixtures define no {who} token")
        if token is None:
            pytest.skip(f"no {who} token configured for the real server at {self.base_url} "
                        f"(set {_REMOTE_SETTINGS[who][1]})")
        return token

    def headers(self, token: str | None = None) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token(token)}"}

    def client(self, token: str | None = None, *, in_process: bool = False,
               **kwargs: Any) -> httpx.Client:
        """An httpx.Client with base_url and the token preset (closed after the test).
        `in_process=True` calls the ASGI app directly (no socket)."""
        if in_process:
            kwargs["transport"] = self.transport()
        elif self._dispatch is not None and not _TRANSPORT_SETTINGS.intersection(kwargs):
            # The session's pooled keep-alive connections to its server (not a new pool,
            # connection and TLS set-up per test).
            kwargs["transport"] = self._dispatch.keep_alive()
        kwargs.setdefault("verify", _ssl_context())
        hooks = kwargs.pop("event_hooks", {})
        if self._dispatch is not None and not in_process:
            hooks = {**hooks, "response": [*hooks.get("response", []), self._reraise]}
        client = httpx.Client(base_url=self.base_url, headers=self.headers(token),
                              event_hooks=hooks, **kwargs)
        self._closers.append(client.close)
        return client

    def async_client(self, token: str | None = None, *, in_process: bool = False,
                     **kwargs: Any) -> httpx.AsyncClient:
        """An httpx.AsyncClient with base_url and the token preset (close it, or use `async
        with`). `in_process=True` calls the ASGI app directly."""
        if in_process:
            kwargs["transport"] = self.async_transport()
        kwargs.setdefault("verify", _ssl_context())
        return httpx.AsyncClient(base_url=self.base_url, headers=self.headers(token), **kwargs)

    def transport(self) -> httpx.BaseTransport:
        """A sync httpx transport calling the mock in-process (no socket)."""
        self._need_mock("transport()")
        if self._dispatch is not None:
            # One per mock for the whole session (its event-loop thread starts once).
            return self._dispatch.in_process(self.app)
        transport = SyncASGITransport(self.app)
        self._closers.append(transport.close)
        return transport

    def async_transport(self) -> httpx.AsyncBaseTransport:
        """An async httpx transport calling the mock in-process (no socket)."""
        self._need_mock("async_transport()")
        return AsyncASGITransport(self.app)

    # -- mock only -------------------------------------------------------------------------

    def _need_mock(self, what: str) -> MockApp:
        if self._mock is None:
            pytest.skip(f"mock_api.{what} needs the mock server; this run targets the real "
                        f"server at {self.base_url} (--mock-api-base-url / MOCK_API_BASE_URL)")
        return self._mock

    @property
    def mock(self) -> MockApp:
        """The MockApp itself (store, limiter, dataset) for anything the helpers do not cover."""
        return self._need_mock("mock")

    @property
    def clock(self) -> Any:
        """The mock's clock: `.advance(seconds)`, `.set(iso)`, `.now()`."""
        return self._need_mock("clock").clock

    @property
    def journal(self) -> Any:
        return self._need_mock("journal").journal

    def requests(self, method: str | None = None, path: str | None = None,
                 status: int | None = None) -> list[JournalEntry]:
        """Requests the mock received in this test, oldest first (path is a prefix). Each has
        .method .path .query .headers (token redacted) .json (the body) .status."""
        return self._need_mock("requests()").journal.entries(method=method, path=path,
                                                            status=status)

    @property
    def last_request(self) -> JournalEntry:
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
        mock = self._need_mock("fault()")
        return mock.faults.add(method=method, path=path, status=status, count=count,
                               delay_ms=int(delay * 1000), drop=drop, probability=probability,
                               error=error, headers=dict(headers or {}))

    def set_rate_limit(self, per_minute: int | None = None, *, workspace: str | None = None,
                       enabled: bool | None = None) -> None:
        """The default limit (or one workspace's) for the rest of the test."""
        limiter = self._need_mock("set_rate_limit()").limiter
        if workspace is not None:
            limiter.set_workspace_limit(workspace, per_minute)
        else:
            limiter.configure(per_minute=per_minute, enabled=enabled)

    def reset(self) -> None:
        self._need_mock("reset()").reset()

    def get(self, table: str, key: str) -> dict[str, Any] | None:
        """A stored record as the API shows it (internal `_` fields dropped)."""
        record = self._need_mock("get()").store.get(table, key)
        return None if record is None else _public(record)

    def add(self, table: str, overrides: Mapping[str, Any] | None = None, /,
            **fields: Any) -> dict[str, Any]:
        """Insert a record factory-style: a copy of an existing fixture record of `table` (one
        in the same workspace when possible) with a new id, fresh timestamps and your fields.
        Validated like a fixture (closed schema, references); returns the record as stored
        (internal `_` fields dropped)."""
        mock = self._need_mock("add()")
        table_def = TABLES.get(table)
        if table_def is None:
            raise pytest.UsageError(f"mock_api.add: no table {table!r}; "
                                    f"tables: {', '.join(sorted(TABLES))}")
        values = {**(overrides or {}), **fields}
        store = mock.store
        ws_field = table_def.workspace_field
        workspace = values.get(ws_field) if ws_field else None
        templates = list(mock.dataset.tables.get(table, {}).values())
        if workspace is None and ws_field and self.workspaces.primary:
            preferred = [t for t in templates if t.get(ws_field) == self.workspaces.primary]
        else:
            preferred = [t for t in templates if ws_field and t.get(ws_field) == workspace]
        template = (preferred or templates or [{}])[0]
        record = {**template, **values}
        key = table_def.key
        if key not in values:
            old = template.get(key, "")
            hex_id = len(old) == 24 and all(c in "0123456789abcdef" for c in old)
            record[key] = store.new_hex_id() if hex_id else store.new_id(table_def.prefix)
        now = store.now()
        for stamp in ("created_at", "updated_at"):
            if stamp in template and stamp not in values:
                record[stamp] = now
        self._validate(mock, table, record)
        store.insert(table, record)
        return _public(record)

    def _validate(self, mock: MockApp, table: str, record: dict[str, Any]) -> None:
        # The fixture loader's own check (fixtures.RecordCheck): schemas and references.
        check = record_check(mock.spec)
        problem = check.schema_problem(table, record) or check.dangling(
            table, record, lambda target, key: mock.store.get(target, key) is not None)
        if problem is not None:
            raise ValueError(f"mock_api.add({table!r}): {problem}")

    # -- server-side failures ------------------------------------------------------------

    def _reraise(self, response: httpx.Response) -> None:
        dispatch = self._dispatch
        if dispatch is None or response.status_code < 500:
            return
        dispatch.wait_idle()
        error = dispatch.take_error()
        if error is not None:
            raise error

    def _close(self) -> BaseException | None:
        for close in reversed(self._closers):
            close()
        self._closers.clear()
        if self._dispatch is None:
            return None
        self._dispatch.wait_idle()
        return self._dispatch.take_error()


def _public(record: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in record.items() if not k.startswith("_")}


def _mock_identities(mock: MockApp) -> tuple[Tokens, Workspaces]:
    entries = {t["token"]: t for t in mock.dataset.tokens}

    def token(role: str) -> dict[str, Any] | None:
        found = entries.get(DEFAULT_TOKENS[role])
        if found is None and role in ("write", "read"):
            found = next((t for t in mock.dataset.tokens if t["access"] == role), None)
        return found

    write, other = token("write"), token("other")
    write_ws = list(write["workspace_ids"]) if write else []
    other_ws = [w for w in (other["workspace_ids"] if other else []) if w not in write_ws]
    tokens = Tokens(**{role: (t["token"] if (t := token(role)) else None)
                       for role in DEFAULT_TOKENS})
    workspaces = Workspaces(
        primary=write_ws[0] if write_ws else None,
        secondary=write_ws[1] if len(write_ws) > 1 else None,
        other=other_ws[0] if other_ws else None,
    )
    return tokens, workspaces


# -- fixtures --------------------------------------------------------------------------------

@pytest.fixture
def mock_api_config(request: pytest.FixtureRequest, pytestconfig: pytest.Config) -> MockApiConfig:
    """Options and ini, then the test's `@pytest.mark.mock_api(...)`. Override to customise."""
    config = _config_from_options(pytestconfig)
    marker = request.node.get_closest_marker("mock_api")
    if marker is not None:
        if marker.args:
            raise pytest.UsageError("@pytest.mark.mock_api takes keyword arguments only")
        unknown = set(marker.kwargs) - set(_MARKER_FIELDS)
        if unknown:
            raise pytest.UsageError(f"@pytest.mark.mock_api: unknown {sorted(unknown)}; "
                                    f"known: {', '.join(_MARKER_FIELDS)}")
        changes = dict(marker.kwargs)
        if "fixtures" in changes:
            changes["fixtures"] = _as_paths(changes["fixtures"], Path(str(request.path)).parent)
        if changes.get("clock") == "real":
            changes["clock"] = None
        config = config.replace(**changes)
    return config


@pytest.fixture(scope="session")
def mock_api_session() -> Iterator[_Session]:
    """The session's server (started on first use). `.get().base_url` for session fixtures."""
    session = _Session()
    yield session
    session.close()


@pytest.fixture
def mock_api(mock_api_config: MockApiConfig, mock_api_session: _Session) -> Iterator[MockApi]:
    """The mock, reset to its fixtures for this test (or a real server: see the module doc)."""
    config = mock_api_config
    if config.real_server:
        remote = config.remote
        assert config.base_url is not None
        remote_api = MockApi(
            config, base_url=config.base_url,
            tokens=Tokens(write=remote.get("write"), read=remote.get("read"),
                          colleague=remote.get("colleague"), other=remote.get("other")),
            workspaces=Workspaces(primary=remote.get("primary"),
                                  secondary=remote.get("secondary"),
                                  other=remote.get("other_workspace")),
        )
        try:
            yield remote_api
        finally:
            remote_api._close()
        return
    server = mock_api_session.get()
    mock, app = server.mock_for(config)
    # Per-test settings that need no rebuild, then back to the fixtures.
    mock.config.rate_limit = 120 if config.rate_limit is None else config.rate_limit
    mock.config.frozen_clock = config.clock
    mock.config.seed = mock.store.seed = config.seed
    mock.config.strict_params = config.strict_params
    mock.reset()
    if config.rate_limit is not None:
        mock.limiter.per_workspace.clear()  # an explicit limit applies to every workspace
    server.dispatch.wait_idle()
    server.dispatch.errors.clear()
    server.dispatch.target = app
    tokens, workspaces = _mock_identities(mock)
    api = MockApi(config, base_url=server.base_url, tokens=tokens, workspaces=workspaces,
                  mock=mock, app=app, dispatch=server.dispatch)
    try:
        yield api
    finally:
        error = api._close()
    if error is not None:
        raise error
    if config.fail_on_ignored_params:
        sent = [e for e in mock.journal if e.ignored_params]
        if sent:
            pytest.fail("the code under test sent query parameters the API does not document "
                        "(the mock ignored them, as the real service does): " + "; ".join(
                            f"{', '.join(e.ignored_params)} in {e.method} {e.path}"
                            f"?{e.query_string.decode('latin-1')}" for e in sent),
                        pytrace=False)
