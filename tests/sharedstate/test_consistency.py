"""Shared state (mockserver/engine/replication/): workers on one Redis namespace behave as one mock.

Each test here was seen to fail under a planted break of the guarantee it names (listed in
the CHANGELOG entry of issue 19). Workers are two `MockApp`s of this process on one namespace
(each has its own store, as two `serve` workers do); test_processes.py runs `serve`.
"""

from __future__ import annotations

from typing import Any

import pytest
from redis_server import RedisServer

from mockserver.engine.errors import Conflict, StaleRead
from mockserver.engine.replication.log import StateUnavailable

from .conftest import Workers, in_memory

HARBOR = "ws_harborview"
NODES = f"/v1/kb/nodes?workspace_id={HARBOR}"


def create_node(client: Any, title: str = "note", **fields: Any) -> dict[str, Any]:
    response = client.post(NODES, json={"title": title, "body": f"{title} body", **fields})
    assert response.status_code == 201, response.text
    return dict(response.json()["data"])


def node(client: Any, node_id: str) -> Any:
    return client.get(f"/v1/kb/nodes/{node_id}?workspace_id={HARBOR}")


def test_a_write_on_one_worker_is_read_on_the_next_including_deletes_and_side_effects(
        workers: Workers) -> None:
    a, b = workers.add(), workers.add()
    created = create_node(a)
    # A read counted in the rate limit (a list), and one refused on a stale copy (404 on the
    # record B has not applied yet): each confirms what it read in its round trip.
    listed = b.get(NODES + "&limit=100").json()["data"]
    assert created["id"] in [n["id"] for n in listed]
    created = create_node(a)
    assert node(b, created["id"]).json()["data"] == created
    # A move changes other records (the moved folder's descendants): B sees them too.
    src = create_node(a, "src", is_directory=True)
    dst = create_node(a, "dst", is_directory=True)
    child = create_node(a, "child", parent_id=src["id"])
    moved = a.patch(f"/v1/kb/nodes/{src['id']}?workspace_id={HARBOR}",
                    json={"parent_id": dst["id"]})
    assert moved.status_code == 200, moved.text
    assert node(b, child["id"]).json()["data"]["ancestors"] == [dst["id"], src["id"]]
    assert a.delete(f"/v1/kb/nodes/{created['id']}?workspace_id={HARBOR}").status_code == 200
    assert node(b, created["id"]).status_code == 404


def test_ids_and_timestamps_are_those_of_the_in_memory_mock(workers: Workers) -> None:
    shared = [workers.add(), workers.add()]
    alone = in_memory()
    steps = 8
    got = [create_node(shared[i % 2], f"n{i}") for i in range(steps)]
    want = [create_node(alone, f"n{i}") for i in range(steps)]
    assert [(n["id"], n["created_at"]) for n in got] == \
        [(n["id"], n["created_at"]) for n in want]
    assert len({n["id"] for n in got}) == steps


def test_the_rate_limit_is_one_window_for_all_workers(workers: Workers) -> None:
    a, b = workers.add(), workers.add()
    alone = in_memory()
    for client in (a, alone):
        assert client.post("/__mock__/rate-limits",
                           json={"per_minute": 5, "reset_windows": True}).status_code == 200
    path = f"/v1/tickets?workspace_id={HARBOR}&limit=1"
    got = [(b if i % 2 else a).get(path) for i in range(7)]
    want = [alone.get(path) for _ in range(7)]
    assert [r.status_code for r in got] == [r.status_code for r in want] == [200] * 5 + [429] * 2
    assert got[5].headers["retry-after"] == want[5].headers["retry-after"]
    assert got[5].json() == want[5].json()
    assert b.get("/__mock__/rate-limits").json()["per_minute"] == 5


def test_writes_are_counted_in_the_one_window_and_a_refused_one_is_not_applied(
        workers: Workers) -> None:
    # A write is counted by the script that appends it: past the limit nothing is appended.
    a, b = workers.add(), workers.add()
    alone = in_memory()
    for client in (a, alone):
        assert client.post("/__mock__/rate-limits",
                           json={"per_minute": 3, "reset_windows": True}).status_code == 200
    got = [(b if i % 2 else a).post(NODES, json={"title": f"n{i}", "body": "x"})
           for i in range(5)]
    want = [alone.post(NODES, json={"title": f"n{i}", "body": "x"}) for i in range(5)]
    assert [r.status_code for r in got] == [r.status_code for r in want] == [201] * 3 + [429] * 2
    assert got[3].json() == want[3].json()
    for client in (a, alone):
        client.post("/__mock__/rate-limits", json={"per_minute": 120, "reset_windows": True})
    titles = [n["title"] for n in b.get(NODES + "&limit=100").json()["data"]]
    assert sorted(t for t in titles if t.startswith("n")) == ["n0", "n1", "n2"]
    assert create_node(b)["id"] == create_node(alone)["id"]


def test_control_actions_act_on_every_worker(workers: Workers) -> None:
    a, b = workers.add(), workers.add()
    first = create_node(b)
    # Clock: moved through one worker, read and used by the other.
    assert a.post("/__mock__/clock", json={"advance_seconds": 3600}).status_code == 200
    assert b.get("/__mock__/clock").json()["now"] == "2026-11-01T13:00:00.000Z"
    assert create_node(b)["created_at"].startswith("2026-11-01T13:00:00")
    # Faults: a rule's count is spent across workers.
    rule = a.post("/__mock__/faults", json={"status": 503, "path": "/v1/tickets", "count": 2})
    assert rule.status_code == 201
    statuses = [(b if i % 2 == 0 else a).get(f"/v1/tickets?workspace_id={HARBOR}").status_code
                for i in range(3)]
    assert statuses == [503, 503, 200]
    assert b.get("/__mock__/faults").json()["data"] == []
    # Reset through one worker: the other is back at the fixtures, ids start over.
    assert a.post("/__mock__/reset").json() == {"reset": True}
    assert node(b, first["id"]).status_code == 404
    assert create_node(b)["id"] == first["id"]
    assert b.get("/__mock__/clock").json()["now"] == "2026-11-01T12:00:00.000Z"


def test_records_added_through_control_are_writes_of_the_one_log(workers: Workers) -> None:
    """POST /__mock__/records on one worker, between the API's creates on another: each record
    takes its id on the caught-up state (no two share one) and every worker reads them all."""
    a, b = workers.add(), workers.add()
    ids = []
    for i in range(3):
        added = a.post("/__mock__/records/kb_nodes", params={"workspace": HARBOR},
                       json={"title": f"added {i}", "body": "text"})
        assert added.status_code == 201, added.text
        ids += [added.json()["data"]["id"], create_node(b, f"created {i}")["id"]]
    assert len(set(ids)) == 6, ids
    for key in ids:
        for worker in (a, b):
            assert worker.get(f"/__mock__/records/kb_nodes/{key}").status_code == 200, key
            assert node(worker, key).status_code == 200, key


def test_a_record_is_made_inside_its_own_write(workers: Workers) -> None:
    """SharedMockState.add_record makes the record (its checks: the id free, references
    there) inside one write of the log: when another worker appends between the check and the
    insert, the record is made again on the caught-up state, and the check sees that write."""
    a, b = workers.add(), workers.add()
    state: Any = workers.mocks[0].state
    key = "0123456789abcdef01234567"
    raced: list[int] = []

    def build(store: Any) -> dict[str, Any]:  # as engine/records.py makes one
        if not raced:  # the first time only: worker B adds a record of that id meanwhile
            raced.append(b.post("/__mock__/records/kb_nodes", params={"workspace": HARBOR},
                                json={"id": key, "title": "theirs", "body": "b"}).status_code)
        if store.get("kb_nodes", key) is not None:
            raise Conflict(f"field 'id': kb_nodes already holds a record {key!r}")
        return {"id": key, "workspace_id": HARBOR, "title": "mine"}

    with pytest.raises(Conflict):
        state.add_record("kb_nodes", build)
    assert raced == [201]
    assert node(a, key).json()["data"]["title"] == "theirs"  # not overwritten


def test_the_journal_is_one_for_all_workers(workers: Workers) -> None:
    a, b = workers.add(), workers.add()
    a.get("/v1/tickets", params={"workspace_id": HARBOR})
    b.get("/v1/agents", params={"workspace_id": HARBOR})
    for client in (a, b):
        found = client.get("/__mock__/requests").json()
        assert [e["path"] for e in found["data"]] == ["/v1/tickets", "/v1/agents"]
        assert found["data"][0]["seq"] < found["data"][1]["seq"]
    assert b.delete("/__mock__/requests").json() == {"cleared": 2}
    assert a.get("/__mock__/requests").json()["total"] == 0


def test_the_journal_keeps_the_byte_budget_of_the_in_memory_one(workers: Workers) -> None:
    """`--journal-bytes` bounds the shared journal as it does the in-memory one: the same
    requests leave the same entries, the same dropped count and the same bytes kept."""
    budget = {"journal_size": 1000, "journal_bytes": 40_000}
    shared = [workers.add(**budget), workers.add(**budget)]
    alone = in_memory(**budget)
    skills = f"/v1/skills?workspace_id={HARBOR}"
    big = b'{"first_name": "' + b"x" * 70_000 + b'"}'  # over 64 KiB: kept as its size
    for client in (shared[0], alone):
        client.post(skills, content=big)
    for i in range(24):
        for client in (shared[i % 2], alone):
            client.post(skills, content=b'{"x": "' + b"y" * (3_000 + i) + b'"}')

    def kept(client: Any) -> tuple[Any, ...]:
        listed = client.get("/__mock__/requests").json()
        return (listed["total"], listed["dropped"],
                [(e["seq"], e["path"], e["status"], e["body"], e["truncated"])
                 for e in listed["data"]])

    want = kept(alone)
    assert 5 < want[0] < 24 and want[1] > 1  # the budget, not the entry count, dropped them
    assert kept(shared[0]) == kept(shared[1]) == want
    mocks: Any = workers.mocks
    assert mocks[0].state.journal.kept_bytes == alone.app.mock.state.journal.kept_bytes  # type: ignore[attr-defined]
    assert mocks[1].state.journal.kept_bytes <= 40_000
    # Cleared, it starts counting again (numbers go on, as in memory).
    assert shared[1].delete("/__mock__/requests").json() == {"cleared": want[0]}
    shared[0].get(skills)
    after = shared[1].get("/__mock__/requests").json()
    assert (after["total"], after["dropped"]) == (1, 0)
    assert after["data"][0]["seq"] == want[2][-1][0] + 1


def test_a_request_run_again_fires_its_fault_and_is_recorded_once(
        workers: Workers, monkeypatch: pytest.MonkeyPatch) -> None:
    """A request whose read turns out stale runs again (StaleRead): the fault it fired is
    not fired twice and it has one journal entry."""
    a, b = workers.add(), workers.add()
    assert a.post("/__mock__/faults", json={"delay_ms": 1, "path": "/v1/tickets",
                                            "count": 2}).status_code == 201
    assert len(b.get("/__mock__/faults").json()["data"]) == 1  # B has applied the rule
    state: Any = workers.mocks[1].state
    confirm = state.log.confirm
    runs = []

    def stale_once(view: Any, count: Any = None) -> None:
        runs.append(count)
        if len(runs) == 1:
            raise StaleRead  # as when another worker appends after the fault fired
        confirm(view, count)

    monkeypatch.setattr(state.log, "confirm", stale_once)
    assert b.get("/v1/tickets", params={"workspace_id": HARBOR}).status_code == 200
    assert len(runs) == 2
    assert [r["remaining"] for r in a.get("/__mock__/faults").json()["data"]] == [1]
    recorded = a.get("/__mock__/requests").json()["data"]
    assert [(e["path"], e["fault"] is not None) for e in recorded] == [("/v1/tickets", True)]


def test_namespaces_keep_mocks_on_one_redis_apart(redis_server: RedisServer) -> None:
    one, two = Workers(redis_server.url, "ns-one"), Workers(redis_server.url, "ns-two")
    try:
        a, b = one.add(), two.add()
        for client in (a, b):
            client.post("/__mock__/reset")
            client.post("/__mock__/rate-limits", json={"per_minute": 2, "reset_windows": True})
        created = create_node(a)
        assert node(b, created["id"]).status_code == 404
        assert create_node(b)["id"] == created["id"]  # its own id sequence
        b.post("/__mock__/reset")
        assert node(a, created["id"]).status_code == 200
        # Windows are per namespace: `a` spent its two, `b` starts with two.
        assert node(a, created["id"]).status_code == 429
        assert node(b, created["id"]).status_code == 404
    finally:
        one.close()
        two.close()


def test_a_worker_that_starts_late_catches_up_and_resets_trim_the_log(
        workers: Workers) -> None:
    a = workers.add()
    kept = [create_node(a, f"n{i}") for i in range(3)]
    late = workers.add()
    assert [node(late, n["id"]).status_code for n in kept] == [200] * 3
    a.post("/__mock__/reset")
    after = create_node(a)
    log: Any = workers.mocks[0].state
    # The log holds the reset and what came after it, not the history it discarded.
    assert log.log.client.xlen(log.log.keys["log"]) == 2
    newest = workers.add()
    assert node(newest, after["id"]).json()["data"] == after
    assert node(newest, kept[1]["id"]).status_code == (200 if kept[1]["id"] == after["id"]
                                                       else 404)


def test_a_failed_append_undoes_the_local_write(workers: Workers,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    a, b = workers.add(), workers.add()
    state: Any = workers.mocks[0].state

    def lost(*args: Any, **kwargs: Any) -> Any:
        raise StateUnavailable("shared state unavailable: connection lost (test)")

    monkeypatch.setattr(state.log, "append", lost)
    refused = a.post(NODES, json={"title": "lost", "body": "x"})
    assert refused.status_code == 503
    assert "unavailable" in refused.json()["error"]
    monkeypatch.undo()
    listed = [n["id"] for n in a.get(NODES + "&limit=100").json()["data"]]
    assert listed == [n["id"] for n in b.get(NODES + "&limit=100").json()["data"]]
    # Nothing of the refused write stands: the next id is the one it would have taken.
    assert create_node(a)["id"] == create_node(in_memory())["id"]


def test_redis_lost_while_serving_answers_503_and_the_mock_recovers(
        tmp_path_factory: pytest.TempPathFactory) -> None:
    redis = RedisServer(tmp_path_factory.mktemp("redis-loss"))
    pool = Workers(redis.url, "loss")
    try:
        a, b = pool.add(), pool.add()
        created = create_node(a)
        redis.stop(save=True)
        for response in (node(a, created["id"]), a.post(NODES, json={"title": "t"}),
                         b.get("/__mock__/clock"), b.get("/__mock__/requests")):
            assert response.status_code == 503, response.text
            assert redis.url in response.json()["error"]
        redis.start()  # its data back, as after a restart
        assert node(b, created["id"]).json()["data"] == created
        assert len({create_node(x)["id"] for x in (a, b, a)}) == 3
    finally:
        pool.close()
        redis.stop()


def test_redis_restarted_without_its_data_starts_every_worker_over(workers: Workers) -> None:
    a, b = workers.add(), workers.add()
    created = create_node(a)
    state: Any = workers.mocks[0].state
    client = state.log.client
    client.delete(*client.keys(state.log.prefix + "*"))  # as a restart without persistence
    assert node(a, created["id"]).status_code == 404
    assert node(b, created["id"]).status_code == 404
    again = create_node(b)
    assert again["id"] == created["id"]  # the id sequence started over too
    assert node(a, again["id"]).status_code == 200



def test_a_write_made_outside_the_pipeline_is_shared_too(workers: Workers) -> None:
    """A test's or helper's write straight to a worker's store (no request) opens a
    transaction of its own (`Store.outside`): the other worker reads it."""
    a, b = workers.add(), workers.add()
    store = workers.mocks[0].state.store
    key = next(k for k, r in store.rows("kb_nodes").items() if r["workspace_id"] == HARBOR)
    store.update("kb_nodes", key, {"title": "retitled by a helper"})
    assert node(b, key).json()["data"]["title"] == "retitled by a helper"
    assert node(a, key).json()["data"]["title"] == "retitled by a helper"
