"""The mock's clock moved back: a rate-limit window never lasts longer than its length on the
mock's clock (in memory and on Redis), and a clock before 1970 stamps its own time on writes
(DECISIONS H24, H8)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from conftest import FROZEN_AT, auth
from redis_server import RedisServer
from starlette.testclient import TestClient

from mockserver.engine.app import Config, MockApp
from mockserver.standalone.server import create_app

WS = "ws_harborview"
LIST = f"/v1/workspaces/{WS}/users"


@pytest.fixture(params=["memory", "redis"])
def fresh(request: pytest.FixtureRequest) -> Iterator[TestClient]:
    settings: dict[str, object] = {"self_check": True, "frozen_clock": FROZEN_AT,
                                   "cursor_secret": b"tests"}
    if request.param == "redis":
        server: RedisServer = request.getfixturevalue("redis_server")
        settings.update(state=server.url, state_namespace=f"clock-{uuid.uuid4().hex[:12]}")
    mock = MockApp(Config(**settings))  # type: ignore[arg-type]
    with TestClient(create_app(mock=mock), headers=auth()) as client:
        yield client
    mock.state.close()  # a shared state's connection (nothing in memory)


def test_a_clock_moved_back_after_a_429_does_not_lock_the_workspace_out(
        fresh: TestClient) -> None:
    assert fresh.post("/__mock__/rate-limits", json={"per_minute": 2}).status_code == 200
    assert [fresh.get(LIST).status_code for _ in range(3)] == [200, 200, 429]
    # Back a day: the window that started "tomorrow" is not waited for.
    assert fresh.post("/__mock__/clock", json={"now": "2026-10-31T12:00:00Z"}).status_code == 200
    answer = fresh.get(LIST)
    assert answer.status_code == 200, answer.headers.get("retry-after")
    assert fresh.get(LIST).status_code == 200
    refused = fresh.get(LIST)
    assert refused.status_code == 429 and int(refused.headers["retry-after"]) <= 60


def test_a_clock_before_1970_stamps_its_own_time(fresh: TestClient) -> None:
    assert fresh.post("/__mock__/clock", json={"now": "0001-01-01T00:00:00Z"}).status_code == 200
    made = fresh.post(f"/v1/kb/nodes?workspace_id={WS}", json={"title": "old"})
    assert made.status_code == 201, made.text
    assert made.json()["data"]["created_at"].startswith("0001-01-01T00:00:00")
