"""The mock without pytest: `MockApi.start(...)`, a context manager and a decorator giving the
object the `mock_api` fixture gives (decision W6), for unittest, scripts and notebooks:

    with MockApi.start(fixtures="tests/fixtures", clock="2026-11-01T12:00:00Z") as api:
        client = api.client()                     # httpx, in process (no socket)
        my_code.sync(api.base_url, api.tokens.write)  # or any HTTP client, over loopback
        api.assert_called("listTickets", times=1)

    @MockApi.start(rate_limit=2)
    def test_limited(self, mock_api): ...        # unittest: `mock_api` passed when named

    run = MockApi.start(); api = run.open(); ...; run.close()   # a notebook

It is the plugin's own way in (server.py's `MockServer`: uvicorn on 127.0.0.1, a free port,
in a thread; one session of it, `InProcessControl.open`), so everything `mock_api` does works
here, and the helpers that would skip a pytest test raise instead (pytest's `Skipped`).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar, cast

from .api import MockApi
from .config import MockApiConfig, _as_paths
from .control import InProcessControl
from .server import MockServer
from .verify import unexpected, unexpected_message

__all__ = ["MockApiRun", "start"]

F = TypeVar("F", bound=Callable[..., Any])
_NOT_HERE = ("base_url", "remote")  # a real server: the plugin's mode, not a mock started here


class MockApiRun:
    """A mock started for one block, function or notebook: `with` it (or `open()` and
    `close()`), or decorate a function with it (a fresh mock per call)."""

    def __init__(self, config: MockApiConfig, label: str = "run") -> None:
        self.config = config
        self.label = label
        self.api: MockApi | None = None
        self._server: MockServer | None = None
        self._control: InProcessControl | None = None

    def open(self) -> MockApi:
        if self.api is not None:
            raise RuntimeError("this mock is running already: close() it, or start another")
        self._server = server = MockServer()
        try:
            control, base_url, tokens, workspaces = InProcessControl.open(
                server, self.config, self.label)
        except BaseException:
            server.stop()
            self._server = None
            raise
        self._control = control
        self.api = MockApi(self.config, base_url=base_url, tokens=tokens,
                           workspaces=workspaces, control=control)
        return self.api

    def close(self, *, check: bool = True) -> None:
        """Stop the mock: what its server raised meanwhile is raised here (as the fixture
        fails the test at teardown), and, with `strict_requests`, the unexpected requests."""
        api, control, server = self.api, self._control, self._server
        self.api = self._control = self._server = None
        if api is None or control is None or server is None:
            return
        try:
            error = api._close()
            found = unexpected(api.requests()) if check and self.config.strict_requests else []
        finally:
            control.close()
            server.stop()
        if check and error is not None:
            raise error
        if found:
            raise AssertionError(unexpected_message(found))

    def __enter__(self) -> MockApi:
        return self.open()

    def __exit__(self, kind: Any, value: Any, traceback: Any) -> None:
        self.close(check=kind is None)  # an exception on the way out is not hidden

    def __call__(self, func: F) -> F:
        """`func` run with a fresh mock per call, given as `mock_api=` when it names such a
        parameter (the parameter hidden from pytest, which would look for a fixture)."""
        signature = inspect.signature(func)
        wants = "mock_api" in signature.parameters

        @functools.wraps(func)
        def run(*args: Any, **kwargs: Any) -> Any:
            with MockApiRun(self.config, func.__name__) as api:
                if wants:
                    kwargs["mock_api"] = api
                return func(*args, **kwargs)

        if wants:
            vars(run)["__signature__"] = signature.replace(
                parameters=[p for p in signature.parameters.values() if p.name != "mock_api"])
        return cast(F, run)


def start(fixtures: str | Path | list[str | Path] | None = None, *,
          clock: str | None = MockApiConfig.clock, config: MockApiConfig | None = None,
          **settings: Any) -> MockApiRun:
    """A mock to run: `fixtures` (directories overlaid in order, relative to the working
    directory; "default" the packaged ones), `clock` (frozen at this instant; "real" or None
    follows wall time) and any other `MockApiConfig` field (`rate_limit`, `seed`,
    `self_check`, `journal_size`, `strict_params`, `strict_requests` ...), over `config`."""
    base = config or MockApiConfig()
    changes: dict[str, Any] = dict(settings)
    if fixtures is not None:
        changes["fixtures"] = _as_paths(fixtures, Path.cwd())
    if config is None or clock != MockApiConfig.clock:
        changes["clock"] = None if clock == "real" else clock
    known = [f for f in MockApiConfig.__dataclass_fields__ if f not in _NOT_HERE]
    unknown = set(changes) - set(known)
    if unknown:
        raise TypeError(f"MockApi.start: unknown {sorted(unknown)}; known: {', '.join(known)}")
    return MockApiRun(base.replace(**changes))
