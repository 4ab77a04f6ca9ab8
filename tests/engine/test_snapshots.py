"""A snapshot taken of a session that was itself forked from a snapshot leaves the parent
snapshot and its other forks untouched, in memory and on shared state (Redis).

The property, written directly: a parent snapshot `desk` of a session `setup`; forks `f1` and
`f2` of it; `f1` writes and is snapshotted as `child`; `child` is forked and both `f1` and the
fork write again. Then `desk` (a new fork of it, its description), `f2` (before and after its
reset) read exactly as `desk` did when it was taken, `f1` reset comes back to `desk`, and `child`
holds `f1`'s writes up to its snapshot, nothing after it. On Redis every session is read
through two workers (each holds its own decoded copy of `desk`: a flattening that wrote into
its base shows on the worker that took the snapshot).

Planted break seen failing (the store test and both runs of the served one): `Store.snapshot` reusing the
base delta's dict of records instead of copying it (`records = frozen.records if frozen else
{}`): `child`'s flattening wrote `f1`'s changes into `desk`.
"""

from __future__ import annotations

import copy
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from conftest import FROZEN_AT, auth
from redis_server import RedisServer
from starlette.testclient import TestClient

from mockserver.engine.app import Config, MockApp
from mockserver.engine.clock import Clock
from mockserver.engine.store import Seed, Store
from mockserver.standalone.server import create_app

TICKET = "xd_aisha_khan_parking"


# -- the store: the flattened delta is a copy -----------------------------------------------------

def test_a_store_over_a_snapshot_snapshots_without_touching_its_base() -> None:
    keys = {"tickets": "id"}
    seed = Seed({"tickets": {"t1": {"id": "t1", "status": "new"},
                             "t2": {"id": "t2", "status": "new"}}}, keys)
    setup = Store(seed, clock=Clock(frozen_at=FROZEN_AT))
    setup.update("tickets", "t1", {"status": "resolved"})
    parent = setup.snapshot()
    frozen = parent.delta
    assert frozen is not None
    before = (copy.deepcopy(frozen.records), dict(frozen.sizes), parent.counter, parent.last_ms)
    f1, f2 = (Store(parent, clock=Clock(frozen_at=FROZEN_AT)) for _ in range(2))
    f1.update("tickets", "t1", {"status": "open"})
    f1.delete("tickets", "t2")
    child = f1.snapshot()
    f1.update("tickets", "t1", {"status": "closed"})  # after the snapshot
    assert (frozen.records, frozen.sizes, parent.counter, parent.last_ms) == before
    assert child.delta is not None and child.delta.records is not frozen.records
    assert [f2.get("tickets", k) for k in ("t1", "t2")] == [
        {"id": "t1", "status": "resolved"}, {"id": "t2", "status": "new"}]
    assert f2.count("tickets") == 2
    g1 = Store(child, clock=Clock(frozen_at=FROZEN_AT))
    assert g1.get("tickets", "t1") == {"id": "t1", "status": "open"}
    assert g1.get("tickets", "t2") is None and g1.count("tickets") == 1


# -- the served mock: in memory and on Redis -----------------------------------------------------

def _config(**extra: Any) -> Config:
    return Config(self_check=True, frozen_clock=FROZEN_AT, cursor_secret=b"tests", **extra)


@pytest.fixture(params=["memory", "redis"])
def two(request: pytest.FixtureRequest) -> Iterator[tuple[TestClient, TestClient]]:
    """Two clients of one mock: in memory the same app twice; on Redis two workers (two
    `MockApp`s, each with its own store, on one namespace)."""
    if request.param == "memory":
        mock = MockApp(_config())
        with TestClient(create_app(mock=mock), headers=auth()) as client:
            yield client, client
        return
    server: RedisServer = request.getfixturevalue("redis_server")
    namespace = f"snap-{uuid.uuid4().hex[:12]}"
    mocks = [MockApp(_config(state=server.url, state_namespace=namespace)) for _ in range(2)]
    clients = [TestClient(create_app(mock=m), headers=auth()) for m in mocks]
    try:
        yield clients[0], clients[1]
    finally:
        for client in clients:
            client.close()
        for mock in mocks:
            state: Any = mock.state
            state.log.close()


def _ok(response: Any, status: int = 200) -> Any:
    assert response.status_code == status, response.text
    return response.json()


def _note(client: TestClient, session: str, body: str) -> None:
    _ok(client.post(f"/sessions/{session}/v1/tickets/{TICKET}/notes", json={"body": body}), 201)


def _seen(client: TestClient, session: str) -> tuple[str, list[str]]:
    """What a session shows of the ticket: its status and its notes' bodies."""
    base = f"/sessions/{session}/v1/tickets/{TICKET}"
    status = _ok(client.get(base))["data"]["status"]
    notes = _ok(client.get(f"{base}/notes?limit=100"))["data"]
    return status, sorted(n["body"] for n in notes)


def _fork(client: TestClient, name: str, snapshot: str) -> None:
    _ok(client.post("/__mock__/sessions", json={"name": name, "snapshot": snapshot}), 201)


def _described(client: TestClient) -> dict[str, tuple[str, int]]:
    listed = _ok(client.get("/__mock__/snapshots"))["data"]
    return {s["name"]: (s["session"], s["changes"]) for s in listed}


def test_a_snapshot_of_a_fork_leaves_its_parent_snapshot_and_sibling_forks_untouched(
        two: tuple[TestClient, TestClient]) -> None:
    a, b = two
    _ok(a.post("/__mock__/sessions", json={"name": "setup"}), 201)
    _ok(a.post(f"/sessions/setup/v1/tickets/{TICKET}/resolve"))
    _note(a, "setup", "set up")
    _ok(a.post("/__mock__/snapshots", json={"name": "desk", "session": "setup"}), 201)
    desk = _seen(a, "setup")
    assert desk[0] == "resolved" and "set up" in desk[1]
    described = _described(a)
    _fork(a, "f1", "desk")
    _fork(b, "f2", "desk")
    for client in (a, b):  # every fork of desk materialised on both workers
        assert _seen(client, "f1") == _seen(client, "f2") == desk

    # f1 changes what desk holds (the ticket, a note), then is snapshotted as child.
    _ok(a.post(f"/sessions/f1/v1/tickets/{TICKET}/reopen"))
    _note(a, "f1", "in f1")
    _ok(b.post("/__mock__/snapshots", json={"name": "child", "session": "f1"}), 201)
    child = _seen(b, "f1")
    assert child != desk and "in f1" in child[1]
    _note(a, "f1", "f1 after child")
    _fork(b, "g1", "child")
    _note(b, "g1", "in g1")

    for n, client in enumerate((a, b)):
        # The parent snapshot: its forks, old and new, read as it was taken.
        assert _seen(client, "f2") == desk
        _fork(client, f"again{n}", "desk")
        assert _seen(client, f"again{n}") == desk
        # The child holds f1 up to its snapshot: nothing written after it, here or in g1.
        _fork(client, f"child{n}", "child")
        assert _seen(client, f"child{n}") == child
    after = _described(a)
    assert after == _described(b) and after.pop("child")[0] == "f1" and after == described
    for name in ("f2", "f1"):  # a reset goes back to desk: the snapshot of f1 changed neither
        _ok(b.post(f"/__mock__/sessions/{name}/reset"))
        assert _seen(a, name) == _seen(b, name) == desk
    # Deleting the child leaves the parent and its forks as they were.
    _ok(a.delete("/__mock__/snapshots/child"))
    _fork(b, "late", "desk")
    assert _seen(a, "late") == _seen(b, "f2") == desk
    assert _seen(a, "g1")[1] == sorted([*child[1], "in g1"])  # a fork keeps its base

