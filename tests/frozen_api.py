"""The frozen-clock API client the living-workspace tests share (tests/progression,
tests/simulate): one mock per module (self-check on, clock frozen at `FROZEN_AT`), reset with
its sessions before each test; `api` a client of its API and control API. Imported by those
folders' conftest.py."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from conftest import FROZEN_AT
from starlette.testclient import TestClient

from mockserver.engine.app import Config, MockApp
from mockserver.standalone.server import create_app
from tests.test_sessions import Checked, auth


@pytest.fixture(scope="module")
def module_mock() -> MockApp:
    return MockApp(Config(frozen_clock=FROZEN_AT, self_check=True))


@pytest.fixture
def api(module_mock: MockApp) -> Iterator[TestClient]:
    module_mock.sessions.clear()
    module_mock.reset()
    with Checked(create_app(mock=module_mock), headers=auth()) as client:
        yield client
