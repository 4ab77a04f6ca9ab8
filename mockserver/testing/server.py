"""The session's server: uvicorn in a thread on 127.0.0.1 serving the current test's mock
(`MockServer`), the dispatch in front of it that keeps what the app raised for the test thread,
and the shared transports `mock_api.client()` uses."""

from __future__ import annotations

import dataclasses
import re
import socket
import threading
import time
import uuid
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from ..engine.app import MockApp
from ..engine.config import Config
from ..engine.faults import ConnectionDropped
from ..engine.state import MockState, Settings
from ..standalone.server import create_app
from .config import MockApiConfig
from .transport import DirectTransport, SyncASGITransport

# What makes a client need its own transport rather than the session's shared one.
TRANSPORT_SETTINGS = frozenset({"transport", "verify", "cert", "trust_env", "http1", "http2",
                                 "limits", "proxy", "mounts", "app"})
_SSL: list[Any] = []
_SSL_LOCK = threading.Lock()


def ssl_context() -> Any:
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


class Dispatch:
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
                self, self.origin, httpx.HTTPTransport(verify=ssl_context())))
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
        self.dispatch = Dispatch(self.base_url)
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
                run_tool_code=config.run_tool_code,  # a test's own setting: open_session
            ))
            found = self._mocks[key] = (mock, create_app(mock=mock))
        return found

    def open_session(self, config: MockApiConfig, label: str,
                     origin: MockApiSnapshot | None = None) -> tuple[MockApp, Any, MockState]:
        """A fresh session for one test (or a snapshot's set-up): over the seed, or forked
        from `origin`, with the test's settings."""
        mock, app = self.mock_for(config)
        self._count += 1
        name = session_name(f"t{self._count}", label)
        settings = _settings(config)
        if origin is not None:
            if origin.mock is not mock:
                raise pytest.UsageError(
                    f"mock_api_origin: snapshot {origin.name!r} was set up with other mock "
                    "settings (fixtures, self_check, journal_size) than this test's")
            offset = mock.sessions.snapshot(origin.name).settings.clock_offset_ms
            settings = dataclasses.replace(settings, frozen_clock=origin.frozen_clock,
                                           clock_offset_ms=offset)
            info = mock.sessions.create(name, snapshot=origin.name, settings=settings)
        else:
            info = mock.sessions.create(name, settings=settings)
        info.state.run_tool_code = config.run_tool_code  # option, ini, marker (per test)
        return mock, app, info.state

    def stop(self) -> None:
        self.dispatch.close()
        self._server.should_exit = True
        self._thread.join(timeout=5)
        self._socket.close()
        for mock, _ in self._mocks.values():  # a shared state's connection (Redis keys
            state = mock.state  # of the namespaces it made dropped); nothing in memory
            state.close(drop=state.namespace in self._namespaces)


_LABEL = re.compile(r"[^A-Za-z0-9._-]+")
# A session's name is in every URL of its test's client, and httpx parses and checks a URL
# character by character a few times per request (~4 us per character and request here): the
# test's name is cut short (enough to recognise it in the inspector), not its 64 characters.
_LABEL_CHARS = 16


def session_name(prefix: str, label: str) -> str:
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


class LazyServer:
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
