"""Sessions: addressing (prefix, header, default), the control API's lifecycle (create, list,
get, reset, delete; snapshots and forks), caps with nothing half-created, idle expiry, create
on use, and uploads that stay in their session. Every control answer is validated against
spec/control-openapi.yaml."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from conftest import auth
from starlette.testclient import TestClient

from mockserver.engine.app import Config, MockApp
from mockserver.engine.selfcheck import SelfCheck
from mockserver.engine.sessions import SessionLimit
from mockserver.standalone.control import control_spec
from mockserver.standalone.server import create_app

WS = "ws_harborview"
TICKET = "xd_aisha_khan_parking"
CLOCK = "2026-11-01T12:00:00.000Z"


@pytest.fixture(scope="module")
def module_mock() -> MockApp:
    return MockApp(Config(frozen_clock=CLOCK, self_check=True))


@pytest.fixture
def mock(module_mock: MockApp) -> MockApp:
    module_mock.sessions.clear()
    module_mock.reset()
    return module_mock


class Checked(TestClient):
    """A test client that validates every control API answer against its document."""

    checker = SelfCheck(control_spec())
    operations = control_spec().operations

    def request(self, method: str, url: Any, *args: Any, **kwargs: Any) -> httpx.Response:
        response = super().request(method, url, *args, **kwargs)
        path = httpx.URL(str(url)).path
        if "/__mock__/" in path:
            bare = "/__mock__/" + path.split("/__mock__/", 1)[1]
            for op in self.operations:
                if op.method == method.upper() and _matches(op.path, bare):
                    self.checker.check(op, response.status_code, response.content,
                                       dict(response.headers))
        return response


def _matches(template: str, path: str) -> bool:
    a, b = template.strip("/").split("/"), path.strip("/").split("/")
    return len(a) == len(b) and all(x == y or x.startswith("{") for x, y in zip(a, b, strict=True))


@pytest.fixture
def api(mock: MockApp) -> Iterator[TestClient]:
    with Checked(create_app(mock=mock), headers=auth()) as client:
        yield client


def _status(api: TestClient, base: str = "") -> str:
    return api.get(f"{base}/v1/tickets/{TICKET}").json()["data"]["status"]


def test_a_session_is_addressed_by_prefix_or_header_and_isolated(api: TestClient) -> None:
    created = api.post("/__mock__/sessions", json={"name": "ci-1"})
    assert created.status_code == 201
    assert created.json()["base_path"] == "/sessions/ci-1"
    assert api.post(f"/sessions/ci-1/v1/tickets/{TICKET}/resolve").status_code == 200
    assert _status(api, "/sessions/ci-1") == "resolved"
    assert api.get(f"/v1/tickets/{TICKET}", headers={"X-Mock-Session": "ci-1"}).json()[
        "data"]["status"] == "resolved"
    assert _status(api) == "new"  # the default session is untouched
    api.post("/__mock__/sessions", json={"name": "ci-2"})
    assert _status(api, "/sessions/ci-2") == "new"
    # Journal, clock and faults are the session's own.
    api.post("/sessions/ci-2/__mock__/clock", json={"advance_seconds": 90})
    api.post("/sessions/ci-2/__mock__/faults", json={"path": "/v1/models", "status": 503})
    assert api.get("/sessions/ci-1/__mock__/clock").json()["now"] == CLOCK
    assert api.get("/__mock__/clock", headers={"X-Mock-Session": "ci-2"}).json()["now"] == (
        "2026-11-01T12:01:30.000Z")
    assert api.get("/sessions/ci-1/v1/models").status_code == 200
    assert api.get("/sessions/ci-2/v1/models").status_code == 503
    journal = api.get("/__mock__/requests", params={"session": "ci-1"}).json()
    assert {e["session"] for e in journal["data"]} == {"ci-1"}
    assert [e["path"] for e in journal["data"]] == [
        f"/v1/tickets/{TICKET}/resolve", f"/v1/tickets/{TICKET}", f"/v1/tickets/{TICKET}",
        "/v1/models"]
    assert api.get("/__mock__/requests").json()["data"][0]["session"] == "default"


def test_unknown_sessions_answer_404_naming_them(api: TestClient) -> None:
    for response in (api.get("/sessions/nope/v1/models"),
                     api.get("/v1/models", headers={"X-Mock-Session": "nope"}),
                     api.get("/sessions/nope/__mock__/clock"),
                     api.get("/__mock__/sessions/nope"),
                     api.delete("/__mock__/sessions/nope"),
                     api.get("/__mock__/requests", params={"session": "nope"})):
        assert response.status_code == 404
        assert "'nope'" in response.json()["error"]
    assert api.get("/sessions/bad%20name/v1/models").status_code == 404


def test_create_refusals_leave_nothing_behind(api: TestClient, mock: MockApp) -> None:
    api.post("/__mock__/sessions", json={"name": "a"})
    assert api.post("/__mock__/sessions", json={"name": "a"}).status_code == 409
    assert api.post("/__mock__/sessions", json={"name": "default"}).status_code == 409
    bad = api.post("/__mock__/sessions", json={"name": "no spaces"})
    assert bad.status_code == 400 and "name" in bad.json()["error"]
    missing = api.post("/__mock__/sessions", json={"name": "b", "snapshot": "none"})
    assert missing.status_code == 404 and "'none'" in missing.json()["error"]
    assert api.delete("/__mock__/sessions/default").status_code == 409
    assert [s["name"] for s in api.get("/__mock__/sessions").json()["data"]] == ["default", "a"]
    generated = api.post("/__mock__/sessions").json()["name"]
    assert api.get(f"/__mock__/sessions/{generated}").status_code == 200


def test_the_session_cap(api: TestClient, mock: MockApp, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(mock.sessions, "max_sessions", 2)
    api.post("/__mock__/sessions", json={"name": "a"})
    api.post("/__mock__/sessions", json={"name": "b"})
    refused = api.post("/__mock__/sessions", json={"name": "c"})
    assert refused.status_code == 507 and "2 sessions" in refused.json()["error"]
    listed = api.get("/__mock__/sessions").json()
    assert (listed["sessions"], listed["total"], len(listed["data"])) == (2, 3, 3)
    assert api.get("/sessions/c/v1/models").status_code == 404
    api.delete("/__mock__/sessions/a")
    assert api.post("/__mock__/sessions", json={"name": "c"}).status_code == 201


def test_the_memory_cap(api: TestClient, mock: MockApp, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(mock.sessions, "memory_check_interval", 0)
    api.post("/__mock__/sessions", json={"name": "a"})
    for _ in range(3):
        api.post(f"/sessions/a/v1/tickets/{TICKET}/notes", json={"body": "x"})
    held = api.get("/__mock__/sessions").json()["change_bytes"]
    assert held > 0
    monkeypatch.setattr(mock.sessions, "max_change_bytes", held)
    refused = api.post("/__mock__/sessions", json={"name": "b"})
    assert refused.status_code == 507 and "memory" in refused.json()["error"]
    assert api.post("/__mock__/snapshots", json={"name": "s", "session": "a"}).status_code == 507
    assert api.get("/__mock__/sessions").json()["sessions"] == 1
    assert api.get("/__mock__/snapshots").json()["data"] == []
    api.post("/__mock__/sessions/a/reset")  # its changes dropped: room again
    assert api.post("/__mock__/sessions", json={"name": "b"}).status_code == 201
    with pytest.raises(SessionLimit):
        monkeypatch.setattr(mock.sessions, "max_change_bytes", 0)
        mock.sessions.create("c")


def test_a_journal_is_trimmed_only_after_it_gained_entries(
        api: TestClient, mock: MockApp, monkeypatch: pytest.MonkeyPatch) -> None:
    """`Sessions.resolve` walks the held memory (to trim a session's journal past the cap)
    only when the session's journal gained an entry since it last looked: a request of a
    session whose journal did not grow costs no walk (and no second clock read)."""
    sessions = mock.sessions
    monkeypatch.setattr(sessions, "memory_check_interval", 0)
    api.post("/__mock__/sessions", json={"name": "t"})
    walks = []
    held = sessions.held_bytes
    monkeypatch.setattr(sessions, "held_bytes", lambda: walks.append(1) or held())
    for _ in range(3):
        sessions.resolve("t")
    assert walks == []
    assert api.get("/sessions/t/v1/models", headers=auth()).status_code == 200  # one entry
    assert walks == []  # resolved before its entry was kept
    sessions.resolve("t")
    sessions.resolve("t")
    assert len(walks) == 1


def test_snapshots_fork_and_reset_returns_to_the_snapshot(api: TestClient) -> None:
    api.post("/__mock__/sessions", json={"name": "setup"})
    api.post(f"/sessions/setup/v1/tickets/{TICKET}/resolve")
    note = api.post(f"/sessions/setup/v1/tickets/{TICKET}/notes", json={"body": "set up"})
    api.post("/sessions/setup/__mock__/clock", json={"advance_seconds": 3600})
    saved = api.post("/__mock__/snapshots", json={"name": "desk", "session": "setup"})
    # the ticket, its note and its conversation (resolving moves its updated_at: DECISIONS I14)
    assert saved.status_code == 201 and saved.json()["changes"] == 3
    assert api.post("/__mock__/snapshots", json={"name": "desk", "session": "setup"}
                    ).status_code == 409
    fork = api.post("/__mock__/sessions", json={"name": "f1", "snapshot": "desk"}).json()
    assert fork["forked_from"] == "desk" and fork["changes"] == 0
    assert _status(api, "/sessions/f1") == "resolved"
    assert api.get("/sessions/f1/__mock__/clock").json()["now"] == "2026-11-01T13:00:00.000Z"
    # New ids continue the snapshot's sequence: the fork's next note is not the set-up's.
    other = api.post(f"/sessions/f1/v1/tickets/{TICKET}/notes", json={"body": "in f1"}).json()
    assert other["data"]["id"] != note.json()["data"]["id"]
    api.post(f"/sessions/f1/v1/tickets/{TICKET}/reopen")
    assert api.post("/sessions/f1/__mock__/reset").json() == {"reset": True}
    assert _status(api, "/sessions/f1") == "resolved"  # back to the snapshot, not the seed
    notes = api.get(f"/sessions/f1/v1/tickets/{TICKET}/notes").json()["data"]
    assert [n["body"] for n in notes if n["body"] in ("set up", "in f1")] == ["set up"]
    # Later writes to the set-up session do not reach the snapshot or its forks.
    api.post(f"/sessions/setup/v1/tickets/{TICKET}/reopen")
    assert _status(api, "/sessions/f1") == "resolved"
    assert _status(api) == "new"
    assert [s["name"] for s in api.get("/__mock__/snapshots").json()["data"]] == ["desk"]
    assert api.delete("/__mock__/snapshots/desk").json() == {"deleted": True}
    assert _status(api, "/sessions/f1") == "resolved"  # a fork keeps its base
    assert api.delete("/__mock__/snapshots/desk").status_code == 404


def test_idle_sessions_expire(mock: MockApp, monkeypatch: pytest.MonkeyPatch) -> None:
    sessions = mock.sessions
    sessions.create("old")
    sessions.create("busy")
    used = sessions.get("busy")
    assert used is not None
    now = used.last_used + sessions.idle_seconds + 1
    used.last_used = now - 5  # a request 5 s ago
    assert sessions.expire_idle(now) == ["old"]
    assert [i.name for i in sessions.all()] == ["busy"]
    monkeypatch.setattr(sessions, "idle_seconds", 0)  # 0: never
    assert sessions.expire_idle(now + 10**6) == []


def test_sessions_created_on_first_use() -> None:
    mock = MockApp(Config(sessions_on_use=True))
    with TestClient(create_app(mock=mock), headers=auth()) as api:
        assert api.get("/sessions/fresh/v1/models").status_code == 200
        assert api.get("/v1/models", headers={"X-Mock-Session": "fresh2"}).status_code == 200
        names = [s["name"] for s in api.get("/__mock__/sessions").json()["data"]]
        assert names == ["default", "fresh", "fresh2"]
        assert api.get("/sessions/bad%20name/v1/models").status_code == 400


def test_uploads_stay_in_their_session(api: TestClient) -> None:
    api.post("/__mock__/sessions", json={"name": "up"})
    made = api.post("/sessions/up/v1/attachments/upload-url", json={"workspace_id": WS})
    url = made.json()["data"]["upload_url"]
    assert "/sessions/up/__storage__/upload/" in url
    path = httpx.URL(url).path
    stored = api.put(path, content=b"hello", headers={"Content-Type": "text/plain"})
    assert stored.status_code == 200
    storage_id = stored.json()["storageId"]
    assert api.get(f"/sessions/up/__storage__/files/{storage_id}").content == b"hello"
    assert api.get(f"/__storage__/files/{storage_id}").status_code == 404
    assert api.put(path, content=b"again").status_code == 409


def test_a_session_created_with_its_own_settings(api: TestClient) -> None:
    made = api.post("/__mock__/sessions", json={"name": "s", "seed": 7, "rate_limit": 1,
                                                "clock": "2027-01-01T00:00:00Z"})
    assert made.status_code == 201
    assert api.get("/sessions/s/__mock__/clock").json() == {
        "now": "2027-01-01T00:00:00.000Z", "frozen": True}
    assert api.get("/sessions/s/__mock__/rate-limits").json()["per_minute"] == 1
    assert api.get("/sessions/s/__mock__/rate-limits").json()["workspaces"] == {}
    assert api.get("/sessions/s/v1/tickets", params={"workspace_id": WS}).status_code == 200
    assert api.get("/sessions/s/v1/tickets", params={"workspace_id": WS}).status_code == 429
    assert api.get("/v1/tickets", params={"workspace_id": WS}).status_code == 200
    # Another seed, other ids; the same seed, the same ids.
    api.post("/__mock__/sessions", json={"name": "s7", "seed": 7})
    seven = api.post(f"/sessions/s7/v1/tickets/{TICKET}/notes", json={"body": "x"})
    api.post("/__mock__/sessions", json={"name": "d"})
    default = api.post(f"/sessions/d/v1/tickets/{TICKET}/notes", json={"body": "x"})
    assert seven.json()["data"]["id"] != default.json()["data"]["id"]
    bad = api.post("/__mock__/sessions", json={"name": "t", "clock": "soon"})
    assert bad.status_code == 400 and "'clock'" in bad.json()["error"]


def test_fixtures_loaded_through_a_session_replace_that_session_only(
        api: TestClient, tmp_path: Any) -> None:
    import shutil

    from mockserver.data.fixtures import default_fixtures_dir

    fixtures = tmp_path / "fx"
    shutil.copytree(default_fixtures_dir(), fixtures)
    tickets = (fixtures / "tickets.yaml").read_text()
    (fixtures / "tickets.yaml").write_text(tickets.replace("status: new", "status: pending"))
    api.post("/__mock__/sessions", json={"name": "loader"})
    loaded = api.post("/sessions/loader/__mock__/fixtures", json={"path": str(fixtures)})
    assert loaded.status_code == 200, loaded.text
    assert _status(api, "/sessions/loader") == "pending"
    assert _status(api) == "new"  # the default session keeps its dataset


def test_loading_fixtures_without_a_path_is_a_400_naming_the_fields(api: TestClient) -> None:
    response = api.post("/__mock__/fixtures", json={"default": False})
    assert response.status_code == 400
    assert "'path'" in response.json()["error"]


def test_a_session_created_on_use_and_gone_before_the_retry_is_a_404(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from mockserver.engine.errors import Conflict
    from mockserver.engine.sessions import Sessions

    def lost_race(self: Sessions, name: str | None = None, **_: Any) -> Any:
        raise Conflict(f"session {name!r} exists")  # created elsewhere, then deleted at once

    mock = MockApp(Config(sessions_on_use=True))
    monkeypatch.setattr(Sessions, "create", lost_race)
    with TestClient(create_app(mock=mock), headers=auth()) as api:
        response = api.get("/sessions/racy/v1/models")
    assert response.status_code == 404
    assert "'racy'" in response.json()["error"]


def test_an_unexpected_error_in_a_control_route_answers_500_json(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    from mockserver.standalone import operations

    def boom(*_: Any) -> Any:
        raise RuntimeError("planted")

    monkeypatch.setitem(operations.registry(), "getClock", boom)
    with TestClient(create_app(mock=MockApp(Config())), raise_server_exceptions=False) as api:
        response = api.get("/__mock__/clock")
    assert response.status_code == 500
    assert response.json() == {"error": "internal error: RuntimeError: planted"}
    assert any(r.name == "mockserver.errors" for r in caplog.records)
