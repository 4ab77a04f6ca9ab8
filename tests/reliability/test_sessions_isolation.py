"""Sessions are isolated: random writes, clock moves and faults driven through several
sessions of one server at once, from threads and from event loops, over sockets and
in-process transports, by base URL prefix and by header. Afterwards each session reads exactly
its own history: its skills (created and updated), its clock, its journal, and the faults it
injected hit only its own requests.

Every session starts from the same seed with the same id sequence, so the sessions' new
records get the *same ids*: a shared record layer shows another session's names or
descriptions under those ids, and the comparison below fails.
"""

from __future__ import annotations

import asyncio
import itertools
import threading
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mockserver.engine.clock import format_timestamp, parse_timestamp
from mockserver.testing.plugin import MockApiConfig, MockServer
from mockserver.testing.transport import AsyncASGITransport, DirectTransport, SyncASGITransport

WS = "ws_harborview"
TOKEN = {"Authorization": "Bearer mock-write-token"}
CLOCK = "2026-11-01T12:00:00.000Z"
DRIVERS = ("thread-socket", "thread-direct", "thread-in-process", "loop-socket",
           "loop-in-process-header")

_names = itertools.count(1)
_DIRECT: list[DirectTransport] = []
_DIRECT_LOCK = threading.Lock()

op = st.one_of(
    st.tuples(st.just("create")),
    st.tuples(st.just("update"), st.integers(0, 5), st.text("abcdef", min_size=1, max_size=8)),
    st.tuples(st.just("clock"), st.integers(1, 3600)),
    st.tuples(st.just("fault")),
)


@pytest.fixture(scope="module")
def server() -> Any:
    server = MockServer()
    mock, app = server.mock_for(MockApiConfig(clock=CLOCK, self_check=True))
    server.dispatch.target = app
    yield server, mock, app
    for transport in _DIRECT:
        transport.close()
    _DIRECT.clear()
    server.stop()


class Session:
    """One session's driver: its ops run in order, and the model of what it should read."""

    def __init__(self, name: str, ops: list[tuple[Any, ...]], driver: str) -> None:
        self.name = name
        self.ops = ops
        self.driver = driver
        self.skills: list[dict[str, str]] = []  # model: id, name, description
        self.advanced = 0
        self.api_paths: list[str] = []  # the /v1 requests it sent, in order
        self.errors: list[str] = []

    def expect(self, ok: bool, what: str) -> None:
        if not ok:
            self.errors.append(f"{self.name} ({self.driver}): {what}")


def _requests(session: Session) -> Any:
    """A generator of (method, path, json) that receives each response and checks it."""
    for i, step in enumerate(session.ops):
        kind = step[0]
        if kind == "create":
            name = f"p-{session.name}-{i}"
            response = yield ("POST", "/v1/skills", {
                "workspace_id": WS, "name": name, "description": "new", "body": "b",
                "auto_assign_to_existing_v2_agents": False})
            session.expect(response.status_code == 201, f"create: {response.status_code}")
            if response.status_code == 201:
                session.skills.append({"id": response.json()["data"]["id"], "name": name,
                                       "description": "new"})
        elif kind == "update" and session.skills:
            skill = session.skills[step[1] % len(session.skills)]
            text = f"{session.name}:{step[2]}"
            response = yield ("PATCH", f"/v1/skills/{skill['id']}", {"description": text})
            session.expect(response.status_code == 200, f"update: {response.status_code}")
            skill["description"] = text
        elif kind == "clock":
            response = yield ("POST", "/__mock__/clock", {"advance_seconds": step[1]})
            session.advanced += step[1]
            session.expect(response.json()["now"] == _after(session.advanced),
                           f"clock {response.json()} after {session.advanced} s")
        elif kind == "fault":
            response = yield ("POST", "/__mock__/faults",
                              {"method": "GET", "path": "/v1/models", "status": 503, "count": 1})
            session.expect(response.status_code == 201, f"fault: {response.status_code}")
            response = yield ("GET", "/v1/models", None)
            session.expect(response.status_code == 503, f"own fault: {response.status_code}")
            response = yield ("GET", "/v1/models", None)
            session.expect(response.status_code == 200, f"after fault: {response.status_code}")


def _after(seconds: int) -> str:
    return format_timestamp(parse_timestamp(CLOCK) + seconds * 1000)


def _run_sync(session: Session, client: httpx.Client, prefix: str) -> None:
    steps = _requests(session)
    response = None
    try:
        while True:
            method, path, body = steps.send(response)
            if path.startswith("/v1"):
                session.api_paths.append(path)
            response = client.request(method, prefix + path, json=body)
    except StopIteration:
        pass


async def _run_async(session: Session, client: httpx.AsyncClient, prefix: str) -> None:
    steps = _requests(session)
    response = None
    try:
        while True:
            method, path, body = steps.send(response)
            if path.startswith("/v1"):
                session.api_paths.append(path)
            response = await client.request(method, prefix + path, json=body)
            await asyncio.sleep(0)
    except StopIteration:
        pass


def _drive(session: Session, base_url: str, app: Any, start: threading.Barrier) -> None:
    prefix = f"/sessions/{session.name}"
    start.wait()
    try:
        if session.driver == "thread-socket":
            with httpx.Client(base_url=base_url, headers=TOKEN) as client:
                _run_sync(session, client, prefix)
        elif session.driver == "thread-in-process":
            with httpx.Client(base_url="http://mock.test", headers=TOKEN,
                              transport=SyncASGITransport(app)) as client:
                _run_sync(session, client, prefix)
        elif session.driver == "thread-direct":  # the app on this thread's own loop
            with _DIRECT_LOCK:  # one transport for every thread, as the plugin's
                if not _DIRECT:
                    _DIRECT.append(DirectTransport(app, httpx.URL(base_url),
                                                   httpx.HTTPTransport()))
            client = httpx.Client(base_url=base_url, headers=TOKEN, transport=_DIRECT[0])
            _run_sync(session, client, prefix)
        elif session.driver == "loop-socket":
            async def main() -> None:
                async with httpx.AsyncClient(base_url=base_url, headers=TOKEN) as client:
                    await _run_async(session, client, prefix)
            asyncio.run(main())
        else:  # addressed by the header, not the path
            async def main() -> None:
                async with httpx.AsyncClient(
                    base_url="http://mock.test", transport=AsyncASGITransport(app),
                    headers={**TOKEN, "X-Mock-Session": session.name},
                ) as client:
                    await _run_async(session, client, "")
            asyncio.run(main())
    except Exception as exc:  # reported with the session's other errors
        session.errors.append(f"{session.name} ({session.driver}): {exc!r}")


def _read_back(session: Session, client: httpx.Client) -> None:
    prefix = f"/sessions/{session.name}"
    journal = client.get(prefix + "/__mock__/requests").json()  # before the reads below
    paths = [e["path"] for e in journal["data"]]
    session.expect(paths == session.api_paths, f"journal {paths} != {session.api_paths}")
    session.expect(all(e["session"] == session.name for e in journal["data"]),
                   "journal entries of another session")
    found: dict[str, dict[str, str]] = {}
    cursor = None
    while True:
        params: dict[str, Any] = {"workspace_id": WS, "limit": 100}
        if cursor:
            params["cursor"] = cursor
        page = client.get(prefix + "/v1/skills", params=params).json()
        for skill in page["data"]:
            if skill["name"].startswith("p-"):
                found[skill["id"]] = {"id": skill["id"], "name": skill["name"],
                                      "description": skill["description"]}
        cursor = page["next_cursor"]
        if not cursor:
            break
    expected = {s["id"]: s for s in session.skills}
    session.expect(found == expected, f"skills {found} != own history {expected}")
    for skill in session.skills:  # and one by one
        got = client.get(f"{prefix}/v1/skills/{skill['id']}").json()["data"]
        session.expect(got["name"] == skill["name"]
                       and got["description"] == skill["description"],
                       f"skill {skill['id']}: {got['name']}/{got['description']}")
    clock = client.get(prefix + "/__mock__/clock").json()
    session.expect(clock["now"] == _after(session.advanced), f"clock {clock}")


@settings(max_examples=8, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(plans=st.lists(st.lists(op, min_size=1, max_size=10), min_size=2, max_size=5))
def test_each_session_reads_exactly_its_own_history(server: Any,
                                                    plans: list[list[tuple[Any, ...]]]) -> None:
    mock_server, mock, app = server
    sessions = []
    for i, ops in enumerate(plans):
        name = f"iso{next(_names)}"
        mock.sessions.create(name)
        sessions.append(Session(name, ops, DRIVERS[i % len(DRIVERS)]))
    try:
        start = threading.Barrier(len(sessions))
        threads = [threading.Thread(target=_drive, args=(s, mock_server.base_url, app, start))
                   for s in sessions]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        with httpx.Client(base_url=mock_server.base_url, headers=TOKEN) as client:
            for session in sessions:
                _read_back(session, client)
            # The default session saw none of it.
            default = client.get("/v1/skills", params={"workspace_id": WS, "limit": 100}).json()
            assert not [s for s in default["data"] if s["name"].startswith("p-")]
            assert client.get("/__mock__/clock").json()["now"] == CLOCK
        errors = [e for s in sessions for e in s.errors]
        assert errors == []
        assert mock_server.dispatch.errors == []
    finally:
        for session in sessions:
            mock.sessions.delete(session.name)
