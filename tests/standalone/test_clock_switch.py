"""The standalone clock (issue 43 item 6): `serve --clock ISO|real` (and MOCK_API_CLOCK), the
freeze switch of `POST /__mock__/clock`, and snapshots that keep a running clock's offset, in
memory and on Redis shared state. Wall time is a stand-in the tests move (no sleeping)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from conftest import auth
from redis_server import RedisServer
from starlette.testclient import TestClient

from mockserver.cli import build_parser
from mockserver.engine import clock as clock_module
from mockserver.engine.app import Config, MockApp
from mockserver.engine.clock import format_timestamp, parse_timestamp
from mockserver.standalone.server import create_app

WALL = "2031-05-05T05:05:05.000Z"


class Wall:
    """time.time() for the clock module: stands at `WALL` until moved."""

    def __init__(self) -> None:
        self.ms = parse_timestamp(WALL)

    def __call__(self) -> float:
        return self.ms / 1000

    def move(self, seconds: float) -> None:
        self.ms += int(seconds * 1000)

    def at(self, seconds: float = 0) -> str:
        return format_timestamp(self.ms + int(seconds * 1000))


@pytest.fixture
def wall(monkeypatch: pytest.MonkeyPatch) -> Wall:
    fake = Wall()
    monkeypatch.setattr(clock_module.time, "time", fake)
    import mockserver.engine.state as state_module
    monkeypatch.setattr(state_module.time, "time", fake)
    return fake


def _client(**config: Any) -> TestClient:
    return TestClient(create_app(mock=MockApp(Config(self_check=True, **config))),
                      headers=auth())


@pytest.fixture
def running(wall: Wall) -> Iterator[TestClient]:
    with _client(frozen_clock=None) as client:
        yield client


def test_the_freeze_switch_stops_a_running_clock_and_lets_it_run_on(
        running: TestClient, wall: Wall) -> None:
    assert running.get("/__mock__/clock").json() == {"now": wall.at(), "frozen": False}
    assert running.post("/__mock__/clock", json={"frozen": True}).json() == {
        "now": wall.at(), "frozen": True}
    wall.move(30)
    assert running.get("/__mock__/clock").json() == {"now": wall.at(-30), "frozen": True}
    # Running on from where it stood: 30 s behind wall time from now on.
    assert running.post("/__mock__/clock", json={"frozen": False}).json() == {
        "now": wall.at(-30), "frozen": False}
    wall.move(5)
    assert running.get("/__mock__/clock").json()["now"] == wall.at(-30)


def test_now_and_advance_take_the_switch_in_the_same_call(running: TestClient,
                                                          wall: Wall) -> None:
    frozen = running.post("/__mock__/clock", json={"now": "2026-11-01T12:00:00Z", "frozen": True})
    assert frozen.json() == {"now": "2026-11-01T12:00:00.000Z", "frozen": True}
    wall.move(10)
    assert running.get("/__mock__/clock").json()["now"] == "2026-11-01T12:00:00.000Z"
    moved = running.post("/__mock__/clock", json={"advance_seconds": 60, "frozen": False})
    assert moved.json() == {"now": "2026-11-01T12:01:00.000Z", "frozen": False}
    wall.move(2)
    assert running.get("/__mock__/clock").json()["now"] == "2026-11-01T12:01:02.000Z"
    # Without the switch a frozen clock stays frozen (as before).
    running.post("/__mock__/clock", json={"frozen": True})
    running.post("/__mock__/clock", json={"advance_seconds": 1})
    wall.move(2)
    assert running.get("/__mock__/clock").json() == {"now": "2026-11-01T12:01:03.000Z",
                                                     "frozen": True}


@pytest.mark.parametrize("body", [{"frozen": "yes"}, {"now": "2026-11-01T12:00:00Z",
                                                       "advance_seconds": 1},
                                  {"frozen": True, "at": 1}, {}])
def test_a_bad_switch_is_refused_and_the_clock_unmoved(running: TestClient, wall: Wall,
                                                       body: dict[str, Any]) -> None:
    refused = running.post("/__mock__/clock", json=body)
    assert refused.status_code == 400 and "error" in refused.json()
    assert running.get("/__mock__/clock").json() == {"now": wall.at(), "frozen": False}


def test_a_fork_keeps_its_snapshot_s_running_offset(running: TestClient, wall: Wall) -> None:
    running.post("/__mock__/sessions", json={"name": "setup"})
    running.post("/sessions/setup/__mock__/clock", json={"advance_seconds": 3600})
    assert running.post("/__mock__/snapshots", json={"name": "later", "session": "setup"}
                        ).status_code == 201
    wall.move(7)
    running.post("/__mock__/sessions", json={"name": "fork", "snapshot": "later"})
    assert running.get("/sessions/fork/__mock__/clock").json() == {
        "now": wall.at(3600), "frozen": False}
    wall.move(1)
    assert running.get("/sessions/fork/__mock__/clock").json()["now"] == wall.at(3600)
    # A reset of the fork returns to its snapshot's offset; a chosen clock drops it.
    running.post("/sessions/fork/__mock__/clock", json={"advance_seconds": 60})
    assert running.post("/__mock__/sessions/fork/reset").status_code == 200
    assert running.get("/sessions/fork/__mock__/clock").json()["now"] == wall.at(3600)
    running.post("/__mock__/sessions", json={"name": "chosen", "snapshot": "later",
                                             "clock": None})
    assert running.get("/sessions/chosen/__mock__/clock").json()["now"] == wall.at()


def test_a_fork_on_shared_state_keeps_the_offset(redis_server: RedisServer, wall: Wall) -> None:
    import uuid
    shared = {"frozen_clock": None, "state": redis_server.url,
              "state_namespace": f"clock-{uuid.uuid4().hex[:10]}"}
    mocks = [MockApp(Config(self_check=True, cursor_secret=b"t", **shared)) for _ in range(2)]
    try:
        with TestClient(create_app(mock=mocks[0]), headers=auth()) as a, \
                TestClient(create_app(mock=mocks[1]), headers=auth()) as b:
            a.post("/__mock__/sessions", json={"name": "setup"})
            a.post("/sessions/setup/__mock__/clock", json={"advance_seconds": 3600})
            assert b.post("/__mock__/snapshots", json={"name": "later", "session": "setup"}
                          ).status_code == 201
            wall.move(3)
            assert a.post("/__mock__/sessions", json={"name": "fork", "snapshot": "later"}
                          ).status_code == 201
            for worker in (a, b):
                assert worker.get("/sessions/fork/__mock__/clock").json() == {
                    "now": wall.at(3600), "frozen": False}
            # The switch replicates too: frozen on one worker, frozen on the other.
            a.post("/sessions/fork/__mock__/clock", json={"frozen": True})
            wall.move(9)
            assert b.get("/sessions/fork/__mock__/clock").json() == {
                "now": wall.at(3600 - 9), "frozen": True}
    finally:
        for mock in mocks:
            state: Any = mock.state
            state.close(drop=True)


def test_the_clock_option_and_its_environment_variable() -> None:
    parser = build_parser("mock")
    assert parser.parse_args(["serve"]).clock == "real"
    assert parser.parse_args(["serve", "--clock", "2026-11-01T12:00:00Z"]).clock \
        == "2026-11-01T12:00:00Z"
    with pytest.raises(SystemExit):
        parser.parse_args(["serve", "--clock", "tomorrow"])
    import os
    os.environ["MOCK_API_CLOCK"] = "never"
    try:
        bad = build_parser("mock").parse_args(["serve"])
    finally:
        del os.environ["MOCK_API_CLOCK"]
    assert any("MOCK_API_CLOCK" in e and "not an ISO 8601 instant" in e for e in bad.env_errors)


def test_serve_with_a_frozen_clock_answers_that_time(tmp_path: Any) -> None:
    from tests.standalone.test_serve_cli import _free_port, _wait
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    proc = subprocess.Popen(
        [sys.executable, "-m", "mockserver", "serve", "--port", str(port), "--quiet",
         "--clock", "2026-11-01T12:00:00Z"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _wait(base)
        assert httpx.get(f"{base}/__mock__/clock").json() == {
            "now": "2026-11-01T12:00:00.000Z", "frozen": True}
        note = httpx.post(f"{base}/v1/tickets/xd_aisha_khan_parking/notes",
                          json={"body": "hello"}, headers=auth())
        assert note.json()["data"]["created_at"].startswith("2026-11-01T12:00:00")
    finally:
        proc.terminate()
        out, _ = proc.communicate(timeout=30)
    assert "clock: frozen at 2026-11-01T12:00:00.000Z" in out


FORKED_ON_A_RUNNING_CLOCK = '''
import datetime

import pytest

@pytest.fixture(scope="module")
def mock_api_origin(mock_api_snapshot):
    return mock_api_snapshot(lambda api: api.clock.advance(3600))

def test_the_fork_runs_an_hour_ahead(mock_api):
    now = datetime.datetime.fromisoformat(mock_api.clock.now().replace("Z", "+00:00"))
    ahead = (now - datetime.datetime.now(datetime.timezone.utc)).total_seconds()
    assert not mock_api.clock.is_frozen() and 3590 < ahead < 3610, ahead
'''


@pytest.mark.parametrize("share", [(), ("-n", "1", "--mock-api-share-server")],
                         ids=["in-process", "shared-server"])
def test_the_plugin_s_forks_keep_a_running_clock_s_offset(tmp_path: Any,
                                                          share: tuple[str, ...]) -> None:
    import os
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    (tmp_path / "test_fork.py").write_text(FORKED_ON_A_RUNNING_CLOCK)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--mock-api-clock",
         "real", *share, str(tmp_path)], capture_output=True, text=True, cwd=tmp_path,
        timeout=300, env={**os.environ, "PYTHONPATH": str(root)})
    assert done.returncode == 0 and "1 passed" in done.stdout, done.stdout + done.stderr
