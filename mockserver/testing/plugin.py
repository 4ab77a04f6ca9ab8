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
same tests run against a real server; the mock-only helpers then skip the test. With
`--mock-api-container IMAGE` (or MOCK_API_CONTAINER) the mock runs in one container of its
image (`containers.MockApiContainer`), each test in a session there, the helpers over its
control API with the container's token, as with `--mock-api-share-server` under xdist.
"""

from __future__ import annotations

import dataclasses
import itertools
import os
import re
import socket
import threading
import time
import uuid
import warnings
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from ..data.fixtures import default_fixtures_dir, record_check
from ..data.tables import TABLES
from ..engine.app import Config, MockApp
from ..engine.faults import ConnectionDropped, FaultRule
from ..engine.journal import JournalEntry
from ..engine.sessions import SESSION_HEADER, SESSION_PREFIX
from ..engine.state import MockState, Settings
from ..robust import pytest_mode as robust_mode
from ..standalone.server import create_app
from .transport import AsyncASGITransport, AsyncDirectTransport, DirectTransport, SyncASGITransport

__all__ = ["ClockControl", "MockApi", "MockApiConfig", "MockApiSnapshot", "MockApiWarning", "MockServer",
           "Tokens", "Workspaces"]

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
    # Shared state (redis://HOST:PORT/DB): the mock is one worker of a mock kept in Redis.
    state: str | None = None
    state_namespace: str | None = None  # None: a fresh one per session (deleted at its end)
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
    group.addoption("--mock-api-state", default=None, metavar="redis://HOST:PORT/DB",
                    help="keep the mock's state in Redis (env MOCK_API_STATE)")
    group.addoption("--mock-api-state-namespace", default=None, metavar="NAME",
                    help="its namespace (default: a fresh one per session; env "
                         "MOCK_API_STATE_NAMESPACE)")
    group.addoption("--mock-api-base-url", default=None, metavar="URL",
                    help="run mock_api tests against this real server (env MOCK_API_BASE_URL)")
    group.addoption("--mock-api-container", default=None, metavar="IMAGE",
                    help="run mock_api against the mock's container image (Testcontainers, the "
                         "containers extra): one container for the run, each test in its own "
                         "session (env MOCK_API_CONTAINER)")
    group.addoption("--mock-api-share-server", action="store_true", default=None,
                    help="under pytest-xdist: one mock server (in the controller) shared by "
                         "every worker, each test in its own session")
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
    parser.addini("mock_api_container", "run mock_api against this image in a container",
                  default="")
    parser.addini("mock_api_share_server", "under xdist, workers share one mock server",
                  type="bool", default=False)
    parser.addini("mock_api_state", "keep the mock's state in Redis: redis://HOST:PORT/DB",
                  default="")
    parser.addini("mock_api_state_namespace", "namespace of that state in Redis", default="")
    robust_mode.add_options(parser)  # robustness mode (mockserver/robust/pytest_mode.py)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "mock_api(fixtures=None, rate_limit=None, seed=None, self_check=None, clock=None, "
        "journal_size=None, strict_params=None, fail_on_ignored_params=None): configure the mock_api fixture for this test",
    )
    robust_mode.configure(config)  # the mock_api_robust marker and its hook
    image = (config.getoption("--mock-api-container") or os.environ.get("MOCK_API_CONTAINER")
             or config.getini("mock_api_container"))
    if image and not hasattr(config, "workerinput"):
        config.pluginmanager.register(_ContainerServer(config, image), "mock_api_shared_server")
        return
    share = config.getoption("--mock-api-share-server") or config.getini("mock_api_share_server")
    if (share and not hasattr(config, "workerinput")
            and getattr(config.option, "numprocesses", None)):
        config.pluginmanager.register(_SharedServer(config), "mock_api_shared_server")


class _SharedServer:
    """In the xdist controller: one mock server for every worker. Workers learn its URL and
    the fixtures' tokens and workspaces through `workerinput`; each of their tests creates
    its own session there over the control API."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.server: MockServer | None = None
        self.info = ""

    def _start(self) -> str:
        if self.server is None:
            mock_config = _config_from_options(self.config)
            self.server = MockServer()
            mock, app = self.server.mock_for(mock_config)
            self.server.dispatch.target = app
            tokens, workspaces = _mock_identities(mock.state)
            self.info = orjson.dumps({
                "url": self.server.base_url, "key": _server_key(mock_config),
                "tokens": dataclasses.asdict(tokens),
                "workspaces": dataclasses.asdict(workspaces),
            }).decode()
        return self.info

    def pytest_configure_node(self, node: Any) -> None:
        node.workerinput["mock_api_shared"] = self._start()

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        if self.server is not None:
            self.server.stop()
            self.server = None


class _ContainerServer(_SharedServer):
    """--mock-api-container IMAGE: the mock in a container (started on first use, or for the
    xdist workers), reached over its control API as the shared server is; its control token
    travels with the server's URL."""

    def __init__(self, config: pytest.Config, image: str) -> None:
        super().__init__(config)
        self.image = image
        self.container: Any = None

    def _start(self) -> str:
        if self.container is None:
            from .containers import MockApiContainer, fixture_tokens

            mock_config = _config_from_options(self.config)
            if len(mock_config.fixtures) > 1:
                raise pytest.UsageError("--mock-api-container mounts one fixtures directory "
                                        "(at /fixtures); give one --mock-api-fixtures")
            fixtures = mock_config.fixtures[0] if mock_config.fixtures else None
            self.container = MockApiContainer(self.image, fixtures=fixtures, options={
                "self_check": mock_config.self_check, "journal_size": mock_config.journal_size,
                "strict_params": mock_config.strict_params, "session_idle": 0, "quiet": True})
            self.container.start()
            tokens, workspaces = _identities(fixture_tokens(fixtures))
            self.info = orjson.dumps({
                "url": self.container.base_url, "key": _server_key(mock_config),
                "tokens": dataclasses.asdict(tokens),
                "workspaces": dataclasses.asdict(workspaces),
                "control_token": self.container.control_token,
            }).decode()
        return self.info

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        if self.container is not None:
            self.container.stop()
            self.container = None


def _shared_info(config: pytest.Config) -> dict[str, Any] | None:
    """The shared server's URL, identities and control token: from the xdist controller, or
    the container this process started (--mock-api-container without xdist); None: in-process."""
    found = getattr(config, "workerinput", {}).get("mock_api_shared")
    if found is None:
        plugin = config.pluginmanager.get_plugin("mock_api_shared_server")
        if isinstance(plugin, _ContainerServer):
            found = plugin._start()
    return None if found is None else dict(orjson.loads(found))


def _control_headers(info: Mapping[str, Any]) -> dict[str, str]:
    token = info.get("control_token")
    return {"X-Mock-Control-Token": token} if token else {}


def _server_key(config: MockApiConfig) -> list[Any]:
    return [[str(p) for p in config.fixtures], config.self_check, config.journal_size]


# What _config_from_options reads besides options and ini (fixed for a pytest run): the
# environment, and the working directory that relative --mock-api-fixtures paths are under.
_ENV_SETTINGS = ("MOCK_API_STATE", "MOCK_API_STATE_NAMESPACE", "MOCK_API_BASE_URL",
                 *(env for _, env in _REMOTE_SETTINGS.values()))
_CONFIG_KEY = pytest.StashKey[tuple[tuple[str | None, ...], MockApiConfig]]()


def _config_from_options(pytestconfig: pytest.Config) -> MockApiConfig:
    """The configuration from options, ini and environment; worked out once per run (about
    0.2 ms, for every test) while the environment and working directory stay the same."""
    key = (os.getcwd(), *(os.environ.get(name) for name in _ENV_SETTINGS))
    found = pytestconfig.stash.get(_CONFIG_KEY, None)
    if found is not None and found[0] == key:
        return found[1]
    config = _read_config(pytestconfig)
    pytestconfig.stash[_CONFIG_KEY] = (key, config)
    return config


def _read_config(pytestconfig: pytest.Config) -> MockApiConfig:
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
    state = pick("--mock-api-state", "mock_api_state") or os.environ.get("MOCK_API_STATE")
    if state:
        namespace = (pick("--mock-api-state-namespace", "mock_api_state_namespace")
                     or os.environ.get("MOCK_API_STATE_NAMESPACE"))
        config = config.replace(state=state, state_namespace=namespace)
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

    def drain(self) -> None:
        if isinstance(self._inner, DirectTransport):
            self._inner.drain()

    def shutdown(self) -> None:
        self._inner.close()


class _Dispatch:
    """The ASGI app uvicorn serves: forwards to the current test's mock and keeps what it
    raises (a self-check violation, a handler crash) so the test thread can re-raise it."""

    def __init__(self, origin: str) -> None:
        self.origin = httpx.URL(origin)
        self.target: Any = None
        self.errors: list[BaseException] = []
        self._active = 0
        self._idle = threading.Condition()
        self._direct: _Shared | None = None
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

    def direct(self) -> httpx.BaseTransport:
        """The transport `mock_api.client()` uses, one for the whole session (closing a
        client leaves it open): a request to this server is this app called on the test's
        thread, what uvicorn would do with it done in-process (transport.DirectTransport);
        anything else goes through one pool of keep-alive connections."""
        if self._direct is None:
            self._direct = _Shared(DirectTransport(
                self, self.origin, httpx.HTTPTransport(verify=_ssl_context())))
        return self._direct

    def drain(self) -> None:
        """Requests of this thread given up on by their client (a read timeout) run to their
        end, as the server would have run them."""
        if self._direct is not None:
            self._direct.drain()

    def in_process(self, app: Any) -> httpx.BaseTransport:
        """A sync in-process transport to this app, shared by the tests of the session
        (closing a client leaves it open; the session closes it)."""
        found = self._in_process.get(id(app))
        if found is None or found[0] is not app:
            found = self._in_process[id(app)] = (app, _Shared(SyncASGITransport(app)))
        return found[1]

    def close(self) -> None:
        if self._direct is not None:
            self._direct.shutdown()
            self._direct = None
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
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._socket.bind(("127.0.0.1", 0))
        self.port = self._socket.getsockname()[1]
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.dispatch = _Dispatch(self.base_url)
        # No proxy-headers middleware: nothing sits in front of this loopback server, and it
        # would run on every request of every test.
        config = uvicorn.Config(self.dispatch, host="127.0.0.1", port=self.port,
                                log_level="warning", lifespan="off", access_log=False,
                                proxy_headers=False)
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
        self._count = 0
        self._namespaces: list[str] = []  # made up for this session: dropped at its end

    def mock_for(self, config: MockApiConfig) -> tuple[MockApp, Any]:
        key = (config.fixtures, config.self_check, config.journal_size, config.strict_params,
               config.state)
        found = self._mocks.get(key)
        if found is None:
            namespace = config.state_namespace
            if config.state and namespace is None:  # one per mock of this session
                namespace = f"pytest-{uuid.uuid4().hex[:12]}"
                self._namespaces.append(namespace)
            mock = MockApp(Config(
                fixtures=list(config.fixtures), seed=config.seed,
                self_check=config.self_check, frozen_clock=config.clock,
                cursor_secret=b"mock_api", base_url=self.base_url,
                journal_size=config.journal_size, strict_params=config.strict_params,
                session_idle_seconds=0,  # the plugin deletes each test's session itself
                state=config.state, state_namespace=namespace or "mock",
            ))
            found = self._mocks[key] = (mock, create_app(mock=mock))
        return found

    def open_session(self, config: MockApiConfig, label: str,
                     origin: MockApiSnapshot | None = None) -> tuple[MockApp, Any, MockState]:
        """A fresh session for one test (or a snapshot's set-up): over the seed, or forked
        from `origin`, with the test's settings."""
        mock, app = self.mock_for(config)
        self._count += 1
        name = _session_name(f"t{self._count}", label)
        settings = _settings(config)
        if origin is not None:
            if origin.mock is not mock:
                raise pytest.UsageError(
                    f"mock_api_origin: snapshot {origin.name!r} was set up with other mock "
                    "settings (fixtures, self_check, journal_size) than this test's")
            settings = dataclasses.replace(settings, frozen_clock=origin.frozen_clock)
            info = mock.sessions.create(name, snapshot=origin.name, settings=settings)
        else:
            info = mock.sessions.create(name, settings=settings)
        return mock, app, info.state

    def stop(self) -> None:
        self.dispatch.close()
        self._server.should_exit = True
        self._thread.join(timeout=5)
        self._socket.close()
        for mock, _ in self._mocks.values():
            state: Any = mock.state
            if state.replicated:
                state.close(drop=state.log.namespace in self._namespaces)


_LABEL = re.compile(r"[^A-Za-z0-9._-]+")
# A session's name is in every URL of its test's client, and httpx parses and checks a URL
# character by character a few times per request (~4 us per character and request here): the
# test's name is cut short (enough to recognise it in the inspector), not its 64 characters.
_LABEL_CHARS = 16


def _session_name(prefix: str, label: str) -> str:
    return f"{prefix}-{_LABEL.sub('-', label)[:_LABEL_CHARS]}".rstrip("-.")


def _settings(config: MockApiConfig) -> Settings:
    # An explicit rate limit applies to every workspace (the fixtures' plan limits are not).
    return Settings(seed=config.seed, frozen_clock=config.clock,
                    rate_limit=120 if config.rate_limit is None else config.rate_limit,
                    workspace_limits=config.rate_limit is None)


@dataclass(frozen=True)
class MockApiSnapshot:
    """A snapshot on the plugin's server, made by `mock_api_snapshot`: tests fork from it."""

    name: str
    mock: MockApp | None  # None: on the server xdist workers share
    frozen_clock: str | None


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


@dataclass(frozen=True)
class RecordedRequest:
    """A journal entry read over the control API (shared server mode): the same attributes
    as `JournalEntry` (.method .path .query .headers .json .status)."""

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


class MockApiWarning(UserWarning):
    """Something asked of `mock_api` that cannot apply (shown in the test report's warnings)."""


def _frozen_deprecated(clock: Any) -> bool:
    warnings.warn("mock_api.clock.frozen is deprecated: call mock_api.clock.is_frozen() (the "
                  "clock's reads are methods, as now() is)", DeprecationWarning, stacklevel=3)
    return bool(clock.is_frozen())


class _RemoteClock:
    def __init__(self, remote: _Remote) -> None:
        self._remote = remote

    def now(self) -> str:
        return str(self._remote.control("GET", "clock")["now"])

    def is_frozen(self) -> bool:
        return bool(self._remote.control("GET", "clock")["frozen"])

    @property
    def frozen(self) -> bool:
        """Deprecated: `is_frozen()`."""
        return _frozen_deprecated(self)

    def advance(self, seconds: float) -> None:
        self._remote.control("POST", "clock", {"advance_seconds": seconds})

    def set(self, instant: str) -> None:
        self._remote.control("POST", "clock", {"now": instant})


class _Remote:
    """A test's session on a server shared by xdist workers, reached over its control API."""

    def __init__(self, server_url: str, name: str,
                 headers: Mapping[str, str] | None = None) -> None:
        self.server = server_url
        self.name = name
        self.base = f"{server_url}{SESSION_PREFIX}{name}/__mock__/"
        self._http = httpx.Client(timeout=30, headers=dict(headers or {}))
        self.clock: Any = _RemoteClock(self)

    def control(self, verb: str, endpoint: str, body: Any = None,
                params: dict[str, Any] | None = None) -> Any:
        response = self._http.request(verb, self.base + endpoint, json=body, params={
            k: v for k, v in (params or {}).items() if v is not None})
        if response.status_code >= 400:
            raise RuntimeError(f"mock control {verb} {endpoint}: {response.status_code} "
                               f"{response.text}")
        return response.json()

    def requests(self, **filters: Any) -> list[Any]:
        entries = self.control("GET", "requests", params=filters)["data"]
        return [RecordedRequest(e["seq"], e["time"], e["method"], e["path"], e["query"],
                                e["headers"], e.get("body"), e["status"],
                                e.get("response_body"), e.get("operation_id"), e.get("fault"))
                for e in entries]

    def add_fault(self, spec: dict[str, Any]) -> FaultRule:
        body = {k: v for k, v in spec.items()
                if v is not None or k == "count"}  # the control API's nulls: count only
        found = self.control("POST", "faults", body)["data"]
        rule = FaultRule(**{k: v for k, v in found.items() if k not in ("remaining", "hits")})
        rule.hits = found["hits"]
        return rule

    def close(self) -> None:
        self._http.close()


class _InSession:
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


class ClockControl:
    """The test's clock: reads it, and moves it through the state's methods. Every part is a
    method: `now()`, `is_frozen()`, `advance(seconds)`, `set(instant)` (`frozen`, a property
    before, still works with a DeprecationWarning)."""

    def __init__(self, state: MockState) -> None:
        self._state = state

    def now(self) -> str:
        return self._state.clock.now()

    def is_frozen(self) -> bool:
        return self._state.clock.frozen

    @property
    def frozen(self) -> bool:
        """Deprecated: `is_frozen()`."""
        return _frozen_deprecated(self)

    def advance(self, seconds: float) -> None:
        self._state.advance_clock(seconds)

    def set(self, instant: str) -> None:
        self._state.set_clock(instant)


class MockApi:
    """The handle a test gets: where the API is, who may call it, and (mock only) its state."""

    def __init__(self, config: MockApiConfig, *, base_url: str, tokens: Tokens,
                 workspaces: Workspaces, mock: MockApp | None = None, app: Any = None,
                 dispatch: _Dispatch | None = None, state: MockState | None = None,
                 remote: _Remote | None = None) -> None:
        self.config = config
        self._remote = remote
        self.base_url = base_url
        self.tokens = tokens
        self.workspaces = workspaces
        self._mock = mock
        self._state = state if state is not None or mock is None else mock.state
        self.app = app
        self._dispatch = dispatch
        self._closers: list[Any] = []
        self._base: httpx.URL | None = None

    # -- available against the mock and a real server ------------------------------------

    @property
    def is_mock(self) -> bool:
        return self._mock is not None or self._remote is not None

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
            # The session's server, called in-process as uvicorn would call it (no socket,
            # no HTTP parsing, no thread switch), and not a new pool, connection and TLS
            # set-up per test for anything else.
            kwargs["transport"] = self._dispatch.direct()
        kwargs.setdefault("verify", _ssl_context())
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
        elif self._dispatch is not None and not _TRANSPORT_SETTINGS.intersection(kwargs):
            # The session's server called on the test's loop as uvicorn would call it; a
            # socket for anything else (its own: connections belong to one event loop).
            kwargs["transport"] = AsyncDirectTransport(
                self._dispatch, self._dispatch.origin,
                httpx.AsyncHTTPTransport(verify=_ssl_context()))
            hooks = {**hooks, "response": [*hooks.get("response", []), self._areraise]}
        kwargs.setdefault("verify", _ssl_context())
        return httpx.AsyncClient(base_url=self._client_base(), headers=self.headers(token),
                                 event_hooks=hooks, **kwargs)

    def transport(self) -> httpx.BaseTransport:
        """A sync httpx transport calling the mock in-process (no socket)."""
        self._need_mock("transport()")
        if self._dispatch is not None:
            # One per mock for the whole session (its event-loop thread starts once); the
            # router in front of it addresses the current test's session.
            return self._dispatch.in_process(self._session_app())
        transport = SyncASGITransport(self._session_app())
        self._closers.append(transport.close)
        return transport

    def async_transport(self) -> httpx.AsyncBaseTransport:
        """An async httpx transport calling the mock in-process (no socket)."""
        self._need_mock("async_transport()")
        return AsyncASGITransport(self._session_app())

    def _session_app(self) -> Any:
        """The app as the test's session sees it: requests that name no session (a client
        with another base URL) are addressed to it by the session header. One router per
        app (tests of a process run one at a time), so in-process transports are reused."""
        if self._state is None or self._mock is None or self._state is self._mock.state:
            return self.app
        router = _ROUTERS.get(id(self.app))
        if router is None or router.app is not self.app:
            router = _ROUTERS[id(self.app)] = _InSession(self.app, self._state.name)
        router.route_to(self._state.name)
        return router

    # -- mock only -------------------------------------------------------------------------

    def _need_mock(self, what: str) -> MockApp:
        if self._remote is not None:
            pytest.skip(f"mock_api.{what} needs the mock in this process; with "
                        "--mock-api-share-server the workers reach one shared server over "
                        "HTTP (clock, requests(), fault(), set_rate_limit(), reset() work)")
        if self._mock is None:
            pytest.skip(f"mock_api.{what} needs the mock server; this run targets the real "
                        f"server at {self.base_url} (--mock-api-base-url / MOCK_API_BASE_URL)")
        return self._mock

    def _need_state(self, what: str) -> MockState:
        self._need_mock(what)
        assert self._state is not None
        return self._state

    @property
    def session(self) -> str:
        """The name of the test's session on the server (its base URL ends in it)."""
        if self._remote is not None:
            return self._remote.name
        return self._need_state("session").name

    def snapshot(self, name: str | None = None) -> str:
        """Save the test's state as a snapshot (to fork sessions from); returns its name."""
        mock = self._need_mock("snapshot()")
        name = name or f"{self.session}-snap"
        mock.sessions.save_snapshot(name, self.session, replace=True)
        return name

    @property
    def mock(self) -> MockApp:
        """The MockApp itself (the pipeline) for anything the helpers do not cover."""
        return self._need_mock("mock")

    @property
    def state(self) -> MockState:
        """The test's mock state (store, clock, journal ...): read its parts, change it
        through its methods."""
        return self._need_state("state")

    @property
    def clock(self) -> ClockControl:
        """The mock's clock: `.advance(seconds)`, `.set(iso)`, `.now()`, `.frozen`."""
        if self._remote is not None:
            return self._remote.clock
        return ClockControl(self._need_state("clock"))

    @property
    def journal(self) -> Any:
        return self._need_state("journal").journal

    def requests(self, method: str | None = None, path: str | None = None,
                 status: int | None = None) -> list[JournalEntry]:
        """Requests the mock received in this test, oldest first (path is a prefix). Each has
        .method .path .query .headers (token redacted) .json (the body) .status."""
        if self._remote is not None:
            return self._remote.requests(method=method, path=path, status=status)
        return self._need_state("requests()").journal.entries(method=method, path=path,
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
        spec = dict(method=method, path=path, status=status, count=count,
                    delay_ms=int(delay * 1000), drop=drop, probability=probability,
                    error=error, headers=dict(headers or {}))
        if self._remote is not None:
            return self._remote.add_fault(spec)
        state = self._need_state("fault()")
        self.mock.check_fault(method, path)  # a typo named here, not as `200 == 503` later
        return state.add_fault(**spec)

    def set_rate_limit(self, per_minute: int | None = None, *, workspace: str | None = None,
                       enabled: bool | None = None) -> None:
        """The default limit (or one workspace's) for the rest of the test."""
        if self._remote is not None:
            body: dict[str, Any] = ({"workspaces": {workspace: per_minute}}
                                    if workspace is not None else {})
            if workspace is None and per_minute is not None:
                body["per_minute"] = per_minute
            if workspace is None and enabled is not None:
                body["enabled"] = enabled
            self._remote.control("POST", "rate-limits", body)
            return
        state = self._need_state("set_rate_limit()")
        if workspace is not None:
            state.set_rate_limits(workspaces={workspace: per_minute})
        else:
            state.set_rate_limits(per_minute=per_minute, enabled=enabled)

    def reset(self) -> None:
        if self._remote is not None:
            self._remote.control("POST", "reset")
            return
        self._need_state("reset()").reset()

    def get(self, table: str, key: str) -> dict[str, Any] | None:
        """A stored record as the API shows it (internal `_` fields dropped)."""
        record = self._need_state("get()").store.get(table, key)
        return None if record is None else _public(record)

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
        mock = self._need_mock("add()")
        state = self._need_state("add()")
        table_def = TABLES.get(table)
        if table_def is None:
            raise pytest.UsageError(f"mock_api.add: no table {table!r}; "
                                    f"tables: {', '.join(sorted(TABLES))}")
        values = {**(overrides or {}), **fields}
        store = state.store
        ws_field = table_def.workspace_field
        workspace = values.get(ws_field) if ws_field else None
        templates = list(state.dataset.tables.get(table, {}).values())
        kinds = table_def.kinds
        if kinds is not None:  # a knowledge-base file for a body, a folder otherwise
            try:
                wanted = kinds.value(kinds.of(values))
            except ValueError as exc:
                raise ValueError(f"mock_api.add({table!r}): {exc}") from None
            templates = [t for t in templates if t.get(kinds.field) == wanted]
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
        self._validate(mock, state, table, record)
        store.insert(table, record)
        return _public(record)

    def _validate(self, mock: MockApp, state: MockState, table: str,
                  record: dict[str, Any]) -> None:
        # The fixture loader's own check (fixtures.RecordCheck): schemas and references.
        check = record_check(mock.spec)
        problem = check.schema_problem(table, record) or check.dangling(
            table, record, lambda target, key: state.store.get(target, key) is not None)
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

    async def _areraise(self, response: httpx.Response) -> None:
        self._reraise(response)

    def _close(self) -> BaseException | None:
        for close in reversed(self._closers):
            close()
        self._closers.clear()
        if self._dispatch is None:
            return None
        self._dispatch.drain()
        self._dispatch.wait_idle()
        return self._dispatch.take_error()


def _public(record: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in record.items() if not k.startswith("_")}


_IDENTITIES: dict[int, tuple[Any, Tokens, Workspaces]] = {}


def _mock_identities(state: MockState) -> tuple[Tokens, Workspaces]:
    """The fixtures' tokens and workspaces by role; worked out once per dataset (every test
    asks, and sessions over one seed share its dataset)."""
    tokens = state.dataset.tokens
    found = _IDENTITIES.get(id(tokens))
    if found is None or found[0] is not tokens:
        if len(_IDENTITIES) > 64:
            _IDENTITIES.clear()
        found = _IDENTITIES[id(tokens)] = (tokens, *_identities(tokens))
    return found[1], found[2]


def _identities(seed_tokens: list[dict[str, Any]]) -> tuple[Tokens, Workspaces]:
    entries = {t["token"]: t for t in seed_tokens}

    def token(role: str) -> dict[str, Any] | None:
        found = entries.get(DEFAULT_TOKENS[role])
        if found is None and role in ("write", "read"):
            found = next((t for t in seed_tokens if t["access"] == role), None)
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


_shared_count = itertools.count(1)


def _shared_session(config: MockApiConfig, info: dict[str, Any], workerinput: Any, label: str,
                    origin: MockApiSnapshot | None) -> MockApi:
    """A fresh session for one test on the server the xdist workers share."""
    if _server_key(config) != info["key"]:
        raise pytest.UsageError(
            "this test's mock_api settings (fixtures, self_check, journal_size) differ from "
            "the shared server's; run it without --mock-api-share-server")
    url = info["url"]
    worker = workerinput.get("workerid", "w")
    name = _session_name(f"{worker}-{next(_shared_count)}", label)
    body: dict[str, Any] = {"name": name, "seed": config.seed, "clock": config.clock}
    if config.rate_limit is not None:
        body["rate_limit"] = config.rate_limit
    if origin is not None:
        body["snapshot"] = origin.name
        body["clock"] = origin.frozen_clock
    headers = _control_headers(info)
    httpx.post(f"{url}/__mock__/sessions", json=body, headers=headers).raise_for_status()
    return MockApi(config, base_url=f"{url}{SESSION_PREFIX}{name}",
                   tokens=Tokens(**info["tokens"]), workspaces=Workspaces(**info["workspaces"]),
                   remote=_Remote(url, name, headers))


def _shared_snapshot(config: MockApiConfig, info: dict[str, Any], workerinput: Any,
                     setup: Callable[[MockApi], Any], name: str | None,
                     made: list[tuple[str, str, dict[str, str]]]) -> MockApiSnapshot:
    api = _shared_session(config, info, workerinput, "setup", None)
    assert api._remote is not None
    url, session = info["url"], api._remote.name
    try:
        setup(api)
    finally:
        api._close()
        api._remote.close()
    snap_name = name or f"{session}-snap"
    headers = _control_headers(info)
    try:
        saved = httpx.post(f"{url}/__mock__/snapshots", headers=headers,
                           json={"name": snap_name, "session": session, "replace": True})
        saved.raise_for_status()
        clock = httpx.get(f"{url}{SESSION_PREFIX}{session}/__mock__/clock",
                          headers=headers).json()
    finally:
        httpx.delete(f"{url}/__mock__/sessions/{session}", headers=headers)
    made.append((url, snap_name, headers))
    return MockApiSnapshot(snap_name, None, clock["now"] if clock["frozen"] else None)


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


# What only the mock can do: set against a real server, they cannot apply (decision U4).
_MOCK_ONLY = ("fixtures", "rate_limit", "seed", "clock", "journal_size", "strict_params",
              "fail_on_ignored_params", "state")


def _check_real_server(config: MockApiConfig) -> None:
    """Real-server mode: stop without a primary workspace (requests would go out with
    `workspace_id=""`), and warn of each mock-only setting that cannot apply."""
    if not config.remote.get("primary"):
        option, variable = _REMOTE_SETTINGS["primary"]
        pytest.exit(f"mock_api against the real server at {config.base_url} needs its "
                    f"workspace: give {option} ID (or set {variable})", returncode=4)
    default = MockApiConfig()
    for name in _MOCK_ONLY:
        value = getattr(config, name)
        if value != getattr(default, name):
            warnings.warn(MockApiWarning(
                f"mock_api: {name}={value!r} cannot apply: this run targets the real server "
                f"at {config.base_url}, whose {name.replace('_', ' ')} the tests do not set"),
                stacklevel=2)


@pytest.fixture(scope="session")
def mock_api_session() -> Iterator[_Session]:
    """The session's server (started on first use). `.get().base_url` for session fixtures."""
    session = _Session()
    yield session
    session.close()


@pytest.fixture(scope="session")
def mock_api_origin() -> MockApiSnapshot | None:
    """What each test's session starts from: None, the seed data. Override it in a module
    (scope="module") with a snapshot from `mock_api_snapshot` to fork its tests from that."""
    return None


@pytest.fixture(scope="module")
def mock_api_snapshot(
    mock_api_session: _Session, pytestconfig: pytest.Config
) -> Iterator[Callable[..., MockApiSnapshot]]:
    """A factory: `mock_api_snapshot(setup)` runs `setup(api)` once on a fresh session (api is
    a `MockApi`), saves the result as a snapshot and returns it; the module's snapshots are
    deleted after it. Typical use, forking every test of a module from one set-up:

        @pytest.fixture(scope="module")
        def mock_api_origin(mock_api_snapshot):
            return mock_api_snapshot(lambda api: api.add("tickets", status="open"))
    """
    made: list[tuple[MockApp, str]] = []
    shared_made: list[tuple[str, str, dict[str, str]]]

    def make(setup: Callable[[MockApi], Any], *, config: MockApiConfig | None = None,
             name: str | None = None) -> MockApiSnapshot:
        config = config or _config_from_options(pytestconfig)
        if config.real_server:
            pytest.skip("mock_api_snapshot needs the mock server; this run targets a real "
                        f"server at {config.base_url}")
        workerinput = getattr(pytestconfig, "workerinput", {})
        info = _shared_info(pytestconfig)
        if info is not None:
            return _shared_snapshot(config, info, workerinput, setup, name, shared_made)
        server = mock_api_session.get()
        mock, app, state = server.open_session(config, "setup")
        tokens, workspaces = _mock_identities(state)
        server.dispatch.wait_idle()
        server.dispatch.target = app
        api = MockApi(config, base_url=f"{server.base_url}/sessions/{state.name}",
                      tokens=tokens, workspaces=workspaces, mock=mock, app=app,
                      dispatch=server.dispatch, state=state)
        try:
            setup(api)
        finally:
            error = api._close()
        if error is not None:
            mock.sessions.delete(state.name)
            raise error
        snap_name = name or f"{state.name}-snap"
        snap = mock.sessions.save_snapshot(snap_name, state.name, replace=True)
        mock.sessions.delete(state.name)
        made.append((mock, snap_name))
        return MockApiSnapshot(snap_name, mock, snap.settings.frozen_clock)

    shared_made = []
    yield make
    for mock, snap_name in made:
        mock.sessions.delete_snapshot(snap_name)
    for url, snap_name, headers in shared_made:
        httpx.delete(f"{url}/__mock__/snapshots/{snap_name}", headers=headers)


@pytest.fixture
def mock_api(mock_api_config: MockApiConfig, mock_api_session: _Session,
             mock_api_origin: MockApiSnapshot | None,
             request: pytest.FixtureRequest) -> Iterator[MockApi]:
    """A fresh session of the mock for this test, over the fixtures (or forked from the
    module's `mock_api_origin`); or a real server: see the module doc."""
    config = mock_api_config
    if config.real_server:
        remote = config.remote
        assert config.base_url is not None
        _check_real_server(config)
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
    shared = _shared_info(request.config)
    if shared is not None:
        api = _shared_session(config, shared, getattr(request.config, "workerinput", {}),
                              request.node.name, mock_api_origin)
        try:
            yield api
        finally:
            api._close()
            assert api._remote is not None
            api._remote.close()
            httpx.delete(f"{api._remote.server}/__mock__/sessions/{api._remote.name}",
                         headers=_control_headers(shared))
        return
    server = mock_api_session.get()
    mock, app, state = server.open_session(config, request.node.name, mock_api_origin)
    server.dispatch.wait_idle()
    server.dispatch.errors.clear()
    server.dispatch.target = app
    tokens, workspaces = _mock_identities(state)
    api = MockApi(config, base_url=f"{server.base_url}/sessions/{state.name}", tokens=tokens,
                  workspaces=workspaces, mock=mock, app=app, dispatch=server.dispatch,
                  state=state)
    try:
        yield api
    finally:
        error = api._close()
        if state is not mock.state:
            mock.sessions.delete(state.name)
    if error is not None:
        raise error
    if config.fail_on_ignored_params:
        sent = [e for e in state.journal if e.ignored_params]
        if sent:
            pytest.fail("the code under test sent query parameters the API does not document "
                        "(the mock ignored them, as the real service does): " + "; ".join(
                            f"{', '.join(e.ignored_params)} in {e.method} {e.path}"
                            f"?{e.query_string.decode('latin-1')}" for e in sent),
                        pytrace=False)
