"""Sessions and snapshots of a shared mock (mockserver/engine/shared_sessions.py): a session
created through one worker is served by every worker, sessions stay apart from each other, from
the default and across namespaces, snapshots fork on any worker, and deleting or resetting is
seen everywhere. Workers are `MockApp`s of this process on one namespace (each with its own
store, as `serve` workers have); test_processes.py runs `serve` processes.

Each test was seen to fail under a planted break (named in the CHANGELOG entry).
"""

from __future__ import annotations

import time
from typing import Any

import httpx
import pytest
from redis_server import RedisServer

from .conftest import Workers, fresh, in_memory, serve

HARBOR = "ws_harborview"
TICKET = "xd_aisha_khan_parking"


def nodes(base: str = "") -> str:
    return f"{base}/v1/kb/nodes?workspace_id={HARBOR}"


def create_node(client: Any, base: str = "", title: str = "note",
                **headers: str) -> dict[str, Any]:
    response = client.post(nodes(base), json={"title": title, "body": f"{title} body"},
                           headers=headers)
    assert response.status_code == 201, response.text
    return dict(response.json()["data"])


def indexed(made: dict[str, Any]) -> dict[str, Any]:
    """A file as created, once indexed: 10 s of the mock's clock later (DECISIONS P5)."""
    return {**made, "embed_status": "indexed", "chunk_count": 1}


def node(client: Any, node_id: str, base: str = "") -> Any:
    return client.get(f"{base}/v1/kb/nodes/{node_id}?workspace_id={HARBOR}")


def status(client: Any, base: str = "") -> str:
    return str(client.get(f"{base}/v1/tickets/{TICKET}").json()["data"]["status"])


def test_a_session_created_through_one_worker_is_served_by_every_worker(
        workers: Workers) -> None:
    a, b, c = workers.add(), workers.add(), workers.add()
    assert a.post("/__mock__/sessions", json={"name": "ci"}).status_code == 201
    # Read-your-writes inside the session, whichever worker writes and reads, by prefix
    # or header; ids and timestamps are those of the same session in memory.
    clients = [b, c, a]
    made = [create_node(clients[i % 3], "/sessions/ci", f"n{i}") for i in range(5)]
    made.append(create_node(b, title="by header", **{"X-Mock-Session": "ci"}))
    for i, record in enumerate(made):
        reader = clients[(i + 1) % 3]
        assert node(reader, record["id"], "/sessions/ci").json()["data"] == record
        assert node(reader, record["id"]).status_code == 404  # not in the default
    alone = in_memory()
    alone.post("/__mock__/sessions", json={"name": "ci"})
    want = [create_node(alone, "/sessions/ci", f"n{i}") for i in range(5)]
    want.append(create_node(alone, title="by header", **{"X-Mock-Session": "ci"}))
    assert [(n["id"], n["created_at"]) for n in made] == \
        [(n["id"], n["created_at"]) for n in want]
    # A write that changes another record, then read through another worker.
    assert c.post(f"/sessions/ci/v1/tickets/{TICKET}/resolve").status_code == 200
    assert status(a, "/sessions/ci") == "resolved" and status(b) == "new"
    # Uploaded bytes travel with the session's log: URL on one, PUT on another, GET on a third.
    url = a.post("/sessions/ci/v1/attachments/upload-url",
                 json={"workspace_id": HARBOR}).json()["data"]["upload_url"]
    stored = b.put(httpx.URL(url).path, content=b"hello", headers={"Content-Type": "text/plain"})
    assert stored.status_code == 200, stored.text
    storage_id = stored.json()["storageId"]
    assert c.get(f"/sessions/ci/__storage__/files/{storage_id}").content == b"hello"
    assert c.get(f"/__storage__/files/{storage_id}").status_code == 404
    # The journal of the session holds the requests every worker answered in it.
    for client in (a, c):
        journal = client.get("/__mock__/requests", params={"session": "ci"}).json()
        assert {e["session"] for e in journal["data"]} == {"ci"}
        assert journal["total"] == 15
    assert [s["name"] for s in b.get("/__mock__/sessions").json()["data"]] == ["default", "ci"]
    # The default session is the shared mock, by any of its names.
    created = create_node(a)
    assert b.get(f"/sessions/default/v1/kb/nodes/{created['id']}").status_code == 200


def test_sessions_are_isolated_from_each_other_and_from_the_default(workers: Workers) -> None:
    a, b = workers.add(), workers.add()
    for name in ("one", "two"):
        assert a.post("/__mock__/sessions", json={"name": name}).status_code == 201
    first = create_node(a, "/sessions/one", "in one")
    assert node(b, first["id"], "/sessions/two").status_code == 404
    assert node(b, first["id"]).status_code == 404
    second = create_node(b, "/sessions/two", "in two")
    # Each session has its own id sequence, salted with its own scope (DECISIONS H2, H20):
    # the same writes in two sessions make different ids.
    assert second["id"] != first["id"]
    assert node(a, first["id"], "/sessions/one").json()["data"]["title"] == "in one"
    assert node(a, second["id"], "/sessions/two").json()["data"]["title"] == "in two"
    # Clock, faults and rate limits are each session's, through any worker.
    assert a.post("/sessions/one/__mock__/clock", json={"advance_seconds": 60}).status_code == 200
    assert b.get("/sessions/one/__mock__/clock").json()["now"] == "2026-11-01T12:01:00.000Z"
    assert b.get("/sessions/two/__mock__/clock").json()["now"] == "2026-11-01T12:00:00.000Z"
    assert b.get("/__mock__/clock").json()["now"] == "2026-11-01T12:00:00.000Z"
    b.post("/sessions/two/__mock__/faults", json={"path": "/v1/models", "status": 503})
    assert a.get("/sessions/two/v1/models").status_code == 503
    assert a.get("/sessions/one/v1/models").status_code == 200
    assert a.get("/v1/models").status_code == 200
    a.post("/sessions/one/__mock__/rate-limits", json={"per_minute": 1, "reset_windows": True})
    path = f"/v1/tickets?workspace_id={HARBOR}&limit=1"
    assert [x.get("/sessions/one" + path).status_code for x in (a, b)] == [200, 429]
    assert b.get("/sessions/two" + path).status_code == 200
    assert b.get(path).status_code == 200
    # Each session's journal holds only its requests.
    paths = [e["path"] for e in a.get("/sessions/two/__mock__/requests").json()["data"]]
    assert paths == [f"/v1/kb/nodes/{first['id']}", "/v1/kb/nodes",
                     f"/v1/kb/nodes/{second['id']}", "/v1/models", "/v1/tickets"]


def test_snapshots_fork_on_any_worker_and_a_fork_resets_to_its_snapshot(
        workers: Workers) -> None:
    a, b, c = workers.add(), workers.add(), workers.add()
    a.post("/__mock__/sessions", json={"name": "setup"})
    a.post(f"/sessions/setup/v1/tickets/{TICKET}/resolve")
    kept = create_node(a, "/sessions/setup", "set up")
    a.post("/sessions/setup/__mock__/clock", json={"advance_seconds": 3600})
    saved = b.post("/__mock__/snapshots", json={"name": "desk", "session": "setup"})
    # the ticket, the node and the conversation (resolving moves its updated_at: DECISIONS I14)
    assert saved.status_code == 201 and saved.json()["changes"] == 3
    assert c.post("/__mock__/snapshots", json={"name": "desk", "session": "setup"}
                  ).status_code == 409
    fork = c.post("/__mock__/sessions", json={"name": "f1", "snapshot": "desk"})
    assert fork.status_code == 201 and fork.json()["forked_from"] == "desk"
    assert status(a, "/sessions/f1") == "resolved"
    assert node(b, kept["id"], "/sessions/f1").json()["data"] == indexed(kept)
    assert b.get("/sessions/f1/__mock__/clock").json()["now"] == "2026-11-01T13:00:00.000Z"
    # New ids continue the snapshot's sequence (as in memory).
    other = create_node(b, "/sessions/f1", "in f1")
    assert other["id"] != kept["id"]
    a.post(f"/sessions/f1/v1/tickets/{TICKET}/reopen")
    assert c.post("/__mock__/sessions/f1/reset").json() == {"reset": True}
    assert status(b, "/sessions/f1") == "resolved"  # the snapshot's, not the seed's
    assert node(a, other["id"], "/sessions/f1").status_code == 404
    # Later writes to the set-up session reach neither the snapshot nor its forks.
    c.post(f"/sessions/setup/v1/tickets/{TICKET}/reopen")
    assert status(a, "/sessions/f1") == "resolved" and status(a) == "new"
    assert [s["name"] for s in b.get("/__mock__/snapshots").json()["data"]] == ["desk"]
    assert a.delete("/__mock__/snapshots/desk").json() == {"deleted": True}
    assert c.delete("/__mock__/snapshots/desk").status_code == 404
    # A fork keeps its base after its snapshot is deleted, on a worker that starts now.
    late = workers.add()
    assert status(late, "/sessions/f1") == "resolved"
    assert node(late, kept["id"], "/sessions/f1").json()["data"] == indexed(kept)
    assert b.post("/__mock__/sessions", json={"name": "f2", "snapshot": "desk"}
                  ).status_code == 404


def test_delete_and_reset_of_a_session_are_seen_by_every_worker(workers: Workers) -> None:
    a, b = workers.add(), workers.add()
    a.post("/__mock__/sessions", json={"name": "s"})
    made = create_node(a, "/sessions/s")
    assert node(b, made["id"], "/sessions/s").status_code == 200  # b holds a copy now
    assert a.post("/sessions/s/__mock__/reset").json() == {"reset": True}
    assert node(b, made["id"], "/sessions/s").status_code == 404
    assert b.get("/sessions/s/__mock__/requests").json()["total"] == 1  # the read above
    again = create_node(b, "/sessions/s")
    assert again["id"] == made["id"]  # ids started over
    assert a.delete("/__mock__/sessions/s").json() == {"deleted": True}
    for response in (node(b, again["id"], "/sessions/s"), b.get("/sessions/s/__mock__/clock"),
                     b.get("/__mock__/requests", params={"session": "s"}),
                     b.post(nodes("/sessions/s"), json={"title": "t"}),
                     b.get("/__mock__/sessions/s"), b.delete("/__mock__/sessions/s")):
        assert response.status_code == 404, response.text
        assert "'s'" in response.json()["error"]
    # Created again under the same name, with other settings: b serves the new one.
    assert a.post("/__mock__/sessions", json={"name": "s", "clock": "2027-01-01T00:00:00Z"}
                  ).status_code == 201
    assert node(b, again["id"], "/sessions/s").status_code == 404
    assert b.get("/sessions/s/__mock__/clock").json()["now"] == "2027-01-01T00:00:00.000Z"
    assert create_node(b, "/sessions/s")["created_at"].startswith("2027-01-01")
    # ... and when b sees no request in between (its copy is of the deleted incarnation;
    # its once-a-second sweep held off, so the request itself must notice).
    workers.mocks[1].sessions._last_sweep = time.monotonic() + 3600
    a.delete("/__mock__/sessions/s")
    assert a.post("/__mock__/sessions", json={"name": "s", "clock": "2028-01-01T00:00:00Z"}
                  ).status_code == 201
    assert b.get("/sessions/s/__mock__/clock").json()["now"] == "2028-01-01T00:00:00.000Z"
    assert node(b, again["id"], "/sessions/s").status_code == 404


def test_caps_and_name_conflicts_hold_across_workers(redis_server: RedisServer,
                                                     namespace: str) -> None:
    pool = Workers(redis_server.url, namespace, max_sessions=2)
    try:
        a, b = pool.add(), pool.add()
        assert a.post("/__mock__/sessions", json={"name": "x"}).status_code == 201
        assert b.post("/__mock__/sessions", json={"name": "x"}).status_code == 409
        assert b.post("/__mock__/sessions", json={"name": "y"}).status_code == 201
        refused = a.post("/__mock__/sessions", json={"name": "z"})
        assert refused.status_code == 507 and "2 sessions" in refused.json()["error"]
        assert a.get("/sessions/z/v1/models").status_code == 404
        assert b.get("/__mock__/sessions").json()["sessions"] == 2
        b.delete("/__mock__/sessions/x")
        assert a.post("/__mock__/sessions", json={"name": "z"}).status_code == 201
        # The memory cap counts every worker's sessions and snapshots.
        for _ in range(3):
            b.post(f"/sessions/y/v1/tickets/{TICKET}/notes", json={"body": "x"})
        held = a.get("/__mock__/sessions").json()["change_bytes"]
        assert held > 0
        for mock in pool.mocks:
            mock.sessions.max_change_bytes = held
        a.delete("/__mock__/sessions/z")
        refused = a.post("/__mock__/sessions", json={"name": "w"})
        assert refused.status_code == 507 and "memory" in refused.json()["error"]
        assert b.post("/__mock__/snapshots", json={"name": "s", "session": "y"}
                      ).status_code == 507
        assert a.get("/__mock__/snapshots").json()["data"] == []
        b.post("/__mock__/sessions/y/reset")  # its changes dropped: room again
        assert a.post("/__mock__/sessions", json={"name": "w"}).status_code == 201
    finally:
        pool.close()


def test_idle_expiry_counts_requests_on_every_worker(workers: Workers) -> None:
    a, b = workers.add(), workers.add()
    a.post("/__mock__/sessions", json={"name": "old"})
    time.sleep(0.05)
    a.post("/__mock__/sessions", json={"name": "busy"})
    time.sleep(0.05)
    assert b.get("/sessions/busy/v1/models").status_code == 200  # used through b only
    sessions: Any = workers.mocks[0].sessions
    client = sessions.log.client
    old_ms, busy_ms = (int(client.get(f"{sessions.prefix}session:{name}:used"))
                       for name in ("old", "busy"))
    assert busy_ms - old_ms >= 80
    # A moment when "old" has been idle longer than the limit and "busy" not.
    now = (old_ms + busy_ms) / 2000 + sessions.idle_seconds
    assert sessions.expire_idle(now) == ["old"]
    assert b.get("/sessions/old/v1/models").status_code == 404
    assert [s["name"] for s in b.get("/__mock__/sessions").json()["data"]] == ["default", "busy"]


def test_two_namespaces_on_one_redis_do_not_see_each_others_sessions(
        redis_server: RedisServer) -> None:
    one, two = Workers(redis_server.url, "ns-s-one"), Workers(redis_server.url, "ns-s-two")
    try:
        a, b = one.add(), two.add()
        assert a.post("/__mock__/sessions", json={"name": "s"}).status_code == 201
        made = create_node(a, "/sessions/s")
        assert b.get("/sessions/s/v1/models").status_code == 404
        assert [s["name"] for s in b.get("/__mock__/sessions").json()["data"]] == ["default"]
        assert b.post("/__mock__/sessions", json={"name": "s"}).status_code == 201
        assert node(b, made["id"], "/sessions/s").status_code == 404
        a.post("/__mock__/snapshots", json={"name": "snap", "session": "s"})
        assert b.get("/__mock__/snapshots").json()["data"] == []
        assert b.post("/__mock__/sessions", json={"name": "f", "snapshot": "snap"}
                      ).status_code == 404
        b.delete("/__mock__/sessions/s")
        assert node(a, made["id"], "/sessions/s").status_code == 200
    finally:
        one.close()
        two.close()


@pytest.mark.parametrize("session", ["", "/sessions/long"])
def test_a_worker_started_after_compaction_sees_the_same_state(workers: Workers,
                                                               session: str) -> None:
    a, b = workers.add(), workers.add()
    if session:
        a.post("/__mock__/sessions", json={"name": "long"})
    state: Any = workers.mocks[0].sessions.state(session.rsplit("/", 1)[-1] or "default")
    for mock in workers.mocks:
        mock.state.log.compact_after = 6
    state.log.compact_after = 6
    log_key = state.log.keys["log"]
    client = state.log.client
    # Writes, a deletion, a clock move, an upload and faults (one half spent, one random).
    made = [create_node((a, b)[i % 2], session, f"n{i}") for i in range(9)]
    assert b.delete(f"{session}/v1/kb/nodes/{made[0]['id']}?workspace_id={HARBOR}"
                    ).status_code == 200
    a.post(f"{session}/__mock__/clock", json={"advance_seconds": 90})
    url = a.post(f"{session}/v1/attachments/upload-url",
                 json={"workspace_id": HARBOR}).json()["data"]["upload_url"]
    storage_id = b.put(httpx.URL(url).path, content=b"kept",
                       headers={"Content-Type": "text/plain"}).json()["storageId"]
    b.post(f"{session}/__mock__/faults", json={"path": "/v1/models", "status": 418, "count": 3})
    b.post(f"{session}/__mock__/faults", json={"path": "/v1/agents", "status": 503,
                                               "probability": 0.5, "count": None})
    assert a.get(f"{session}/v1/models").status_code == 418
    draws = [a.get(f"{session}/v1/agents?workspace_id={HARBOR}").status_code for _ in range(4)]
    made.append(create_node(b, session, "last"))
    late = workers.add()
    workers.mocks[-1].state.log.compact_after = 6  # its own writes compact the log too
    for reader in (late, a):
        listed = reader.get(nodes(session) + "&limit=100").json()["data"]
        assert [n["id"] for n in listed] == [n["id"] for n in a.get(
            nodes(session) + "&limit=100").json()["data"]]
        assert node(reader, made[0]["id"], session).status_code == 404
        assert node(reader, made[5]["id"], session).json()["data"] == indexed(made[5])
    assert late.get(f"{session}/__mock__/clock").json() == a.get(
        f"{session}/__mock__/clock").json()
    assert late.get(f"{session}/__storage__/files/{storage_id}").content == b"kept"
    assert late.get(f"{session}/__mock__/faults").json() == b.get(
        f"{session}/__mock__/faults").json()
    # The next random draws, the next spent fault and the next id are the same on both.
    more = [late.get(f"{session}/v1/agents?workspace_id={HARBOR}").status_code
            for _ in range(6)]
    alone = in_memory()
    if session:
        alone.post("/__mock__/sessions", json={"name": "long"})
    alone.post(f"{session}/__mock__/faults", json={"path": "/v1/agents", "status": 503,
                                                   "probability": 0.5, "count": None})
    want = [alone.get(f"{session}/v1/agents?workspace_id={HARBOR}").status_code
            for _ in range(10)]
    assert draws + more == want
    assert late.get(f"{session}/v1/models").status_code == 418
    following = create_node(late, session, "after")
    assert node(a, following["id"], session).json()["data"] == following
    assert following["id"] not in {n["id"] for n in made}
    assert following["created_at"] > made[-1]["created_at"]
    entries = client.xrange(log_key)
    assert entries[0][1][b"d"].startswith(b'{"k":"checkpoint"'), "no checkpoint was written"
    assert len(entries) <= 7  # trimmed before it


def test_sessions_are_shared_by_serve_processes_and_their_workers(
        redis_server: RedisServer, namespace: str) -> None:
    with serve(redis_server.url, namespace, workers=2) as one, \
            serve(redis_server.url, namespace) as two, fresh(one) as a, fresh(two) as b:
        assert a.post("/__mock__/sessions", json={"name": "p"}).status_code == 201
        made = [create_node((a, b)[i % 2], "/sessions/p", f"n{i}") for i in range(4)]
        for client in (a, b):
            listed = client.get(nodes("/sessions/p") + "&limit=100").json()["data"]
            assert {n["id"] for n in made} <= {n["id"] for n in listed}
            assert node(client, made[0]["id"]).status_code == 404  # not in the default
        assert b.post("/__mock__/snapshots", json={"name": "snap", "session": "p"}
                      ).status_code == 201
        assert a.post("/__mock__/sessions", json={"name": "f", "snapshot": "snap"}
                      ).status_code == 201
        assert node(b, made[3]["id"], "/sessions/f").json()["data"] == made[3]
        assert a.delete("/__mock__/sessions/p").status_code == 200
        assert [node(b, made[0]["id"], "/sessions/p").status_code for _ in range(3)] == [404] * 3
        assert [s["name"] for s in b.get("/__mock__/sessions").json()["data"]] == [
            "default", "f"]


def test_sessions_created_on_first_use_through_any_worker(redis_server: RedisServer,
                                                          namespace: str) -> None:
    pool = Workers(redis_server.url, namespace, sessions_on_use=True)
    try:
        a, b = pool.add(), pool.add()
        made = create_node(b, "/sessions/auto")
        assert node(a, made["id"], "/sessions/auto").json()["data"] == made
        assert a.get("/v1/models", headers={"X-Mock-Session": "auto2"}).status_code == 200
        names = [s["name"] for s in b.get("/__mock__/sessions").json()["data"]]
        assert names == ["default", "auto", "auto2"]
    finally:
        pool.close()


def test_a_reset_starts_the_fault_draws_over_on_every_worker(workers: Workers) -> None:
    a = workers.add()
    rule = {"path": "/v1/models", "status": 503, "probability": 0.5, "count": None}
    a.post("/__mock__/faults", json=rule)
    for _ in range(5):
        a.get("/v1/models")
    a.post("/__mock__/reset")
    a.post("/__mock__/faults", json=rule)
    late = workers.add()  # replays from the reset: its draws start at the seed
    got = [(a, late)[i % 2].get("/v1/models").status_code for i in range(8)]
    alone = in_memory()
    alone.post("/__mock__/faults", json=rule)
    assert got == [alone.get("/v1/models").status_code for _ in range(8)]


def test_sessions_talk_to_redis_through_their_worker_s_one_connection(
        workers: Workers) -> None:
    # Every session's log calls, posts and transactions go through the worker's connection:
    # sessions add no connection to Redis, however many there are and whatever they do.
    a = workers.add()
    redis: Any = workers.mocks[0].state.log.client  # type: ignore[attr-defined]
    a.get(nodes())
    before = len(redis.client_list())
    for name in ("c1", "c2", "c3"):
        assert a.post("/__mock__/sessions", json={"name": name}).status_code == 201
        create_node(a, f"/sessions/{name}")
        assert a.get(nodes(f"/sessions/{name}")).status_code == 200
        assert a.post(f"/sessions/{name}/__mock__/reset").status_code == 200
        assert a.get(f"/sessions/{name}/__mock__/requests").status_code == 200
    assert len(redis.client_list()) == before
