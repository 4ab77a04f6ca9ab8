"""Reads of a shared mock answered in one turn of a worker's event loop settle in one round
trip to Redis (SharedLog.settle, DECISIONS R18): each is still confirmed against the log,
counted once and journaled once, in the order they were answered."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import httpx
import pytest
from conftest import auth

from mockserver.engine.errors import StaleRead
from mockserver.engine.replication.batch import ReadBatches
from mockserver.standalone.server import create_app

from .conftest import Workers, in_memory
from .test_consistency import HARBOR, NODES, create_node

LIST = f"/v1/kb/nodes?workspace_id={HARBOR}&limit=100"


def batches(monkeypatch: pytest.MonkeyPatch, before: Any = None) -> list[int]:
    """Record the size of every batch settled (after calling `before` on the first)."""
    sizes: list[int] = []
    original = ReadBatches.exchange

    def exchange(batches: ReadBatches, batch: list[Any]) -> Any:
        if before is not None and not sizes:
            before()
        sizes.append(len(batch))
        return original(batches, batch)

    monkeypatch.setattr(ReadBatches, "exchange", exchange)
    return sizes


async def concurrently(app: Any, count: int, path: str = LIST) -> list[httpx.Response]:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://mock",
                                 headers=auth()) as client:
        return list(await asyncio.gather(*(client.get(path) for _ in range(count))))


def test_reads_answered_together_are_each_counted_and_journaled_once(
        workers: Workers, monkeypatch: pytest.MonkeyPatch) -> None:
    a = workers.add()
    assert a.post("/__mock__/rate-limits",
                  json={"per_minute": 10, "reset_windows": True}).status_code == 200
    a.delete("/__mock__/requests")
    sizes = batches(monkeypatch)
    got = asyncio.run(concurrently(create_app(mock=workers.mocks[0]), 25))
    assert max(sizes) > 1  # they did settle together
    assert sorted(r.status_code for r in got) == [200] * 10 + [429] * 15
    assert all(r.headers.get("retry-after") for r in got if r.status_code == 429)
    journal = a.get("/__mock__/requests", params={"limit": 100}).json()
    assert journal["total"] == 25
    assert sorted(e["status"] for e in journal["data"]) == [200] * 10 + [429] * 15


def test_reads_settled_after_another_worker_wrote_run_again_and_see_the_write(
        workers: Workers, monkeypatch: pytest.MonkeyPatch) -> None:
    a, b = workers.add(), workers.add()
    a.get(LIST)  # a holds a copy from before b's write
    a.delete("/__mock__/requests")
    written: list[dict[str, Any]] = []
    # b's write is answered after a's reads read their copy and before they settle: their
    # answers leave after it, so each must show it (run again on the caught-up copy).
    sizes = batches(monkeypatch, before=lambda: written.append(create_node(b, "late")))
    got = asyncio.run(concurrently(create_app(mock=workers.mocks[0]), 8))
    for response in got:
        assert response.status_code == 200, response.text
        assert written[0]["id"] in [n["id"] for n in response.json()["data"]]
    assert sizes[0] == 8 and len(sizes) > 1  # the first batch was stale, then run again
    paths = [e["method"] for e in b.get("/__mock__/requests").json()["data"]]
    assert paths == ["POST"] + ["GET"] * 8  # each read journaled once, after the write
    assert b.get(NODES + "&limit=100").json()["data"] == got[0].json()["data"]


def test_a_read_that_writes_after_all_is_counted_before_its_write_stands(
        workers: Workers) -> None:
    # A read's round trip waits for its answer; one that writes (here: takes an id) is undone,
    # counted, and run again, so a read refused by the rate limit leaves no write behind.
    a, b = workers.add(response_cache=0), workers.add()
    alone = in_memory(response_cache=0)
    for mock in (workers.mocks[0], alone.app.mock):  # type: ignore[attr-defined]
        handlers = mock.handlers
        original = handlers["listKnowledgeNodes"]

        def writing(ctx: Any, original: Any = original) -> Any:
            ctx.store.new_id()
            return original(ctx)

        handlers["listKnowledgeNodes"] = writing
    for client in (a, alone):
        assert client.post("/__mock__/rate-limits",
                           json={"per_minute": 2, "reset_windows": True}).status_code == 200
        assert [client.get(LIST).status_code for _ in range(3)] == [200, 200, 429]
        client.post("/__mock__/rate-limits", json={"per_minute": 120, "reset_windows": True})
    assert create_node(b)["id"] == create_node(alone)["id"]


def test_a_read_whose_session_is_deleted_before_it_settles_is_404_and_leaves_nothing(
        workers: Workers, monkeypatch: pytest.MonkeyPatch) -> None:
    a, b = workers.add(), workers.add()
    assert a.post("/__mock__/sessions", json={"name": "s"}).status_code == 201
    assert b.get(f"/sessions/s{LIST}").status_code == 200  # b holds the session
    batches(monkeypatch, before=lambda: a.delete("/__mock__/sessions/s"))
    got = asyncio.run(concurrently(create_app(mock=workers.mocks[1]), 3, f"/sessions/s{LIST}"))
    assert [r.status_code for r in got] == [404] * 3, [r.text for r in got]
    assert all("'s'" in r.json()["error"] for r in got)
    # Their journal entries, staged in the same write as their scripts, are not left behind.
    # Nor are their 404s journaled into the deleted session (keys of no session).
    redis: Any = workers.mocks[0].state.log.client
    assert redis.keys(f"mock:{{{workers.namespace}}}:*jstage*") == []
    assert redis.keys(f"mock:{{{workers.namespace}}}:session:s:*") == []


def test_a_pending_read_is_settled_by_its_own_round_trip_not_by_another_caller_s_write(
        workers: Workers) -> None:
    # A read's deferred round trip belongs to that read: a write made meanwhile by another
    # caller of the same worker (the plugin's test thread, a store write outside the
    # pipeline) appends without it, and the read still confirms its copy when it settles.
    a, b = workers.add(), workers.add()
    assert a.get(LIST).status_code == 200
    state: Any = workers.mocks[0].state
    view = state.view()
    view.deferrable = True
    state.count_request("workspace", HARBOR, view)
    assert view.pending
    create_node(b, "late")  # a's copy is stale now
    other = threading.Thread(target=state.store.new_id)  # catches up, then appends
    other.start()
    other.join()
    assert view.pending and not view.confirmed
    with pytest.raises(StaleRead):  # the read ran on a copy that has moved: run it again
        asyncio.run(state.settle(view, None))


def test_settling_a_batch_takes_no_session_lock_under_the_connection_s_lock(
        workers: Workers, monkeypatch: pytest.MonkeyPatch) -> None:
    # Elsewhere a session's lock is taken before its worker's connection's: a batch that has
    # to catch a session up does so after letting the connection's lock go (no deadlock with a
    # thread working on the session, as the plugin's test thread does).
    a, b = workers.add(), workers.add()
    assert a.post("/__mock__/sessions", json={"name": "s"}).status_code == 201
    assert b.get(f"/sessions/s{LIST}").status_code == 200  # b holds the session
    mock = workers.mocks[1]
    holding = threading.Event()

    def on_the_session() -> None:
        session: Any = mock.sessions.state("s")
        with session.log.lock:  # a session's lock, then the connection's
            holding.set()
            session.log.command("PING")

    def before() -> None:  # under the connection's lock, the batch about to be sent
        a.post(f"/sessions/s{NODES}", json={"title": "x", "body": "y"})  # the batch is stale
        threading.Thread(target=on_the_session, daemon=True).start()
        holding.wait(0.5)  # it holds the session's lock, waiting for the connection's

    sizes = batches(monkeypatch, before=before)
    got: list[Any] = []
    runner = threading.Thread(target=lambda: got.extend(asyncio.run(concurrently(
        create_app(mock=mock), 2, f"/sessions/s{LIST}"))), daemon=True)
    runner.start()
    runner.join(20)
    assert not runner.is_alive(), "deadlock: the batch waits for the session's lock"
    assert sizes[0] == 2 and [r.status_code for r in got] == [200, 200]
    assert all("x" in [n["title"] for n in r.json()["data"]] for r in got)


def test_reads_pending_while_their_own_worker_appends_are_not_run_again(
        workers: Workers, monkeypatch: pytest.MonkeyPatch) -> None:
    # The worker's own append found the log ending where those reads read it, while they
    # were unanswered: they read the present then, and settle without running again.
    a = workers.add()
    a.delete("/__mock__/requests")
    state: Any = workers.mocks[0].state
    sizes = batches(monkeypatch, before=state.store.new_id)  # an append of this worker
    got = asyncio.run(concurrently(create_app(mock=workers.mocks[0]), 8))
    assert [r.status_code for r in got] == [200] * 8
    assert sizes == [8]  # one round trip for the eight, none run again
    assert a.get("/__mock__/requests").json()["total"] == 8
