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

This module holds the hooks and fixtures; the rest is in modules of its own: `config`
(options, ini, environment), `server` (the session's uvicorn server), `control` (the one
control interface: in process, over the control API, a real server), `api` (`MockApi`),
`shared` (one server for many processes), `identities`, `records` (`add`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from ..robust import pytest_mode as robust_mode
from . import coverage, shared, verify
from .api import ClockControl, MockApi
from .config import (
    MockApiConfig,
    MockApiWarning,
    add_options,
    check_real_server,
    config_from_options,
    with_marker,
)
from .control import Control, InProcessControl, RealServerControl
from .identities import Tokens, Workspaces
from .server import LazyServer, MockApiSnapshot, MockServer

__all__ = ["ClockControl", "MockApi", "MockApiConfig", "MockApiSnapshot", "MockApiWarning",
           "MockServer", "Tokens", "Workspaces"]


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)
    coverage.add_options(parser.getgroup("mock_api"), parser)  # --mock-api-coverage
    robust_mode.add_options(parser)  # robustness mode (mockserver/robust/pytest_mode.py)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "mock_api(fixtures=None, rate_limit=None, seed=None, self_check=None, clock=None, "
        "journal_size=None, strict_params=None, fail_on_ignored_params=None, "
        "strict_requests=None, run_tool_code=None, progression=None): configure the "
        "mock_api fixture for this test",
    )
    robust_mode.configure(config)  # the mock_api_robust marker and its hook
    coverage.register(config)  # --mock-api-coverage: the run's report (testing/coverage.py)
    image = (config.getoption("--mock-api-container") or os.environ.get("MOCK_API_CONTAINER")
             or config.getini("mock_api_container"))
    share = config.getoption("--mock-api-share-server") or config.getini("mock_api_share_server")
    shared.register(config, image, bool(share), shared.attach_options(config))


def _open(config: MockApiConfig, server: LazyServer, pytestconfig: pytest.Config, label: str,
          origin: MockApiSnapshot | None) -> tuple[Control, MockApi]:
    """A test's control and handle: a real server, a session on the shared server (over its
    control API), or a session of the session's server in this process."""
    if config.real_server:
        assert config.base_url is not None
        check_real_server(config)
        remote = config.remote
        tokens = Tokens(write=remote.get("write"), read=remote.get("read"),
                        colleague=remote.get("colleague"), other=remote.get("other"))
        workspaces = Workspaces(primary=remote.get("primary"), secondary=remote.get("secondary"),
                                other=remote.get("other_workspace"))
        control: Control = RealServerControl(config.base_url)
        base_url = config.base_url
    elif (info := shared.shared_info(pytestconfig)) is not None:
        control, base_url, tokens, workspaces = shared.open_shared(info, config, pytestconfig,
                                                                   label, origin)
    else:
        control, base_url, tokens, workspaces = InProcessControl.open(server.get(), config,
                                                                      label, origin)
    if config.progression is not None and not config.real_server:
        # The marker's or ini's mode for every kind of the test's session.
        control.progression({"kinds": {kind: {"mode": config.progression}
                                       for kind in ("agent_runs", "workflow_executions",
                                                    "messages", "kb_nodes")}})
    return control, MockApi(config, base_url=base_url, tokens=tokens, workspaces=workspaces,
                            control=control)


def _fail_on_ignored_params(api: MockApi) -> None:
    sent = [e for e in api.requests() if e.ignored_params]
    if sent:
        pytest.fail("the code under test sent query parameters the API does not document "
                    "(the mock ignored them, as the real service does): " + "; ".join(
                        f"{', '.join(e.ignored_params)} in {e.method} {e.path}"
                        f"?{e.query_string.decode('latin-1')}" for e in sent),
                    pytrace=False)


def _fail_on_unexpected_requests(api: MockApi) -> None:
    found = verify.unexpected(api.requests())
    if found:
        pytest.fail(verify.unexpected_message(found), pytrace=False)


# -- fixtures --------------------------------------------------------------------------------

@pytest.fixture
def mock_api_config(request: pytest.FixtureRequest, pytestconfig: pytest.Config) -> MockApiConfig:
    """Options and ini, then the test's `@pytest.mark.mock_api(...)`. Override to customise."""
    return with_marker(config_from_options(pytestconfig), request.node.get_closest_marker(
        "mock_api"), Path(str(request.path)).parent)


@pytest.fixture(scope="session")
def mock_api_session() -> Iterator[LazyServer]:
    """The session's server (started on first use). `.get().base_url` for session fixtures."""
    server = LazyServer()
    yield server
    server.close()


@pytest.fixture(scope="session")
def mock_api_origin() -> MockApiSnapshot | None:
    """What each test's session starts from: None, the seed data. Override it in a module
    (scope="module") with a snapshot from `mock_api_snapshot` to fork its tests from that."""
    return None


@pytest.fixture(scope="module")
def mock_api_snapshot(
    mock_api_session: LazyServer, pytestconfig: pytest.Config
) -> Iterator[Callable[..., MockApiSnapshot]]:
    """A factory: `mock_api_snapshot(setup)` runs `setup(api)` once on a fresh session (api is
    a `MockApi`), saves the result as a snapshot and returns it; the module's snapshots are
    deleted after it. Typical use, forking every test of a module from one set-up:

        @pytest.fixture(scope="module")
        def mock_api_origin(mock_api_snapshot):
            return mock_api_snapshot(lambda api: api.add("tickets", status="open"))
    """
    deleters: list[Callable[[], Any]] = []

    def make(setup: Callable[[MockApi], Any], *, config: MockApiConfig | None = None,
             name: str | None = None) -> MockApiSnapshot:
        config = config or config_from_options(pytestconfig)
        if config.real_server:
            pytest.skip("mock_api_snapshot needs the mock server; this run targets a real "
                        f"server at {config.base_url}")
        control, api = _open(config, mock_api_session, pytestconfig, "setup", None)
        try:
            try:
                setup(api)
            finally:
                error = api._close()
            if error is not None:
                raise error
            snapshot, delete = control.origin(name or f"{control.session}-snap")
        finally:
            control.close()
        deleters.append(delete)
        return snapshot

    yield make
    for delete in deleters:
        delete()


@pytest.fixture
def mock_api(mock_api_config: MockApiConfig, mock_api_session: LazyServer,
             mock_api_origin: MockApiSnapshot | None,
             request: pytest.FixtureRequest) -> Iterator[MockApi]:
    """A fresh session of the mock for this test, over the fixtures (or forked from the
    module's `mock_api_origin`); or a real server: see the module doc."""
    config = mock_api_config
    control, api = _open(config, mock_api_session, request.config, request.node.name,
                         mock_api_origin)
    try:
        try:
            yield api
        finally:
            error = api._close()
            found = coverage.collector(request.config)
            if found is not None and api.is_mock:  # the test's requests, for the report
                found.add([entry.as_entry() for entry in api.requests()])
        if error is not None:
            raise error
        if config.fail_on_ignored_params:
            _fail_on_ignored_params(api)
        if config.strict_requests and api.is_mock:
            _fail_on_unexpected_requests(api)
    finally:
        control.close()
