"""Shared fixtures: one mock per session (self-check on, clock frozen), reset before each test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from starlette.testclient import TestClient

from mockserver.app import Config, MockApp, create_app

FROZEN_AT = "2026-11-01T12:00:00.000Z"
WRITE = "mock-write-token"
READ = "mock-read-token"
OTHER = "mock-other-token"
COLLEAGUE = "mock-colleague-token"


def auth(token: str = WRITE) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@pytest.fixture(scope="session")
def session_mock() -> MockApp:
    return MockApp(Config(self_check=True, frozen_clock=FROZEN_AT, cursor_secret=b"tests"))


@pytest.fixture
def mock(session_mock: MockApp) -> MockApp:
    session_mock.reset()
    return session_mock


@pytest.fixture
def client(mock: MockApp) -> Iterator[TestClient]:
    with TestClient(create_app(mock=mock), headers=auth()) as test_client:
        yield test_client
