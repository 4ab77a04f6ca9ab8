"""Shared fixtures: one mock per session (self-check on, clock frozen), reset before each test.

With MOCK_TEST_SHARED_STATE=1 the same tests run against a mock shared through Redis (a
redis-server started for the session): `mock` is one worker of it and `client` sends its
requests in turn to that worker and to a second one (two stores, as two `serve` workers).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from redis_server import RedisServer
from starlette.testclient import TestClient

from mockserver.engine.app import Config, MockApp
from mockserver.standalone.server import create_app

FROZEN_AT = "2026-11-01T12:00:00.000Z"
WRITE = "mock-write-token"
READ = "mock-read-token"
OTHER = "mock-other-token"
COLLEAGUE = "mock-colleague-token"


def auth(token: str = WRITE) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


SHARED_SUITE = os.environ.get("MOCK_TEST_SHARED_STATE") == "1"


def _suite_config(namespace: str | None) -> Config:
    url = None
    if namespace is not None:
        url = os.environ["MOCK_TEST_REDIS_URL"]
    return Config(self_check=True, frozen_clock=FROZEN_AT, cursor_secret=b"tests",
                  state=url, state_namespace=namespace or "mock")


@pytest.fixture(scope="session")
def _suite_namespace(request: pytest.FixtureRequest) -> str | None:
    if not SHARED_SUITE:
        return None
    server = request.getfixturevalue("redis_server")
    os.environ["MOCK_TEST_REDIS_URL"] = server.url
    return f"suite-{uuid.uuid4().hex[:12]}"


@pytest.fixture(scope="session")
def session_mock(_suite_namespace: str | None) -> MockApp:
    return MockApp(_suite_config(_suite_namespace))


@pytest.fixture(scope="session")
def second_worker(_suite_namespace: str | None) -> MockApp | None:
    """In the shared-state run, another worker of the session's mock."""
    return MockApp(_suite_config(_suite_namespace)) if _suite_namespace else None


class _InTurn:
    """An ASGI app that hands requests to two workers in turn; after one the second worker
    answered, the first applies it (tests read `mock`'s store directly)."""

    def __init__(self, first: MockApp, second: MockApp) -> None:
        self.apps = [create_app(mock=first), create_app(mock=second)]
        self.first = first
        self.turn = 0

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.apps[0](scope, receive, send)
            return
        self.turn += 1
        await self.apps[self.turn % 2](scope, receive, send)
        if self.turn % 2:
            self.first.state.sync()  # type: ignore[attr-defined]


@pytest.fixture
def mock(session_mock: MockApp) -> MockApp:
    session_mock.reset()
    return session_mock


@pytest.fixture
def client(mock: MockApp, second_worker: MockApp | None) -> Iterator[TestClient]:
    app: Any = create_app(mock=mock) if second_worker is None else _InTurn(mock, second_worker)
    with TestClient(app, headers=auth()) as test_client:
        yield test_client


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    """A real redis-server for this test session (fails, naming how to install it, when
    redis-server is missing)."""
    server = RedisServer(tmp_path_factory.mktemp("redis"))
    yield server
    server.stop()


@pytest.fixture(params=["in_process", "http"])
def mock_control(request: pytest.FixtureRequest, mock: MockApp) -> Iterator[Any]:
    """The fixture's control (`testing.control.MockControl`) of a fresh session of `mock`,
    once in this process and once over the control API (HTTP through the server's routes):
    a control operation's test takes this fixture and so runs over both transports."""
    from mockserver.testing.control import ControlClient, HttpControl, InProcessControl
    from mockserver.testing.transport import SyncASGITransport

    name = f"ctl-{request.param}-{uuid.uuid4().hex[:8]}"
    if request.param == "in_process":
        mock.sessions.create(name)
        yield InProcessControl(mock, mock.sessions.state(name))
    else:
        client = ControlClient("http://mock.test",
                               transport=SyncASGITransport(create_app(mock=mock)))
        client.call("createSession", body={"name": name})
        yield HttpControl(client, name)
        client.close()
    mock.sessions.delete(name)
