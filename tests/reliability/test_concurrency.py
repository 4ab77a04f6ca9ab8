"""Concurrency: one mock driven at once through the real server (uvicorn in a thread on
loopback, client threads each with its own httpx.Client) and from in-process event loops in
other threads, as the pytest plugin's transports do. Writes are not lost, and pagination keeps
its exactly-once law for records that exist throughout a walk while others are created and
deleted."""

from __future__ import annotations

import asyncio
import sys
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest
from conform.serve import serve
from conftest import FROZEN_AT, auth

from mockserver.engine.app import Config, MockApp
from mockserver.standalone.server import create_app
from mockserver.testing.transport import AsyncASGITransport, DirectTransport, SyncASGITransport

WS = "ws_harborview"
THREADS = 8


@pytest.fixture(scope="module")
def own_mock() -> MockApp:
    # Rate limits off: these tests send hundreds of requests to one workspace.
    return MockApp(Config(self_check=True, frozen_clock=FROZEN_AT, cursor_secret=b"concurrency",
                          rate_limit=0))


@pytest.fixture
def base(own_mock: MockApp) -> Iterator[str]:
    own_mock.reset()
    with serve(create_app(mock=own_mock)) as url:
        yield url


def in_threads(base: str, count: int, work: Callable[[httpx.Client, int], Any]) -> list[Any]:
    """Run work(client, i) for i in range(count) over THREADS threads, each its own client."""
    local = threading.local()
    clients: list[httpx.Client] = []
    lock = threading.Lock()
    start = threading.Barrier(min(THREADS, count))

    def run(i: int) -> Any:
        client = getattr(local, "client", None)
        if client is None:
            client = local.client = httpx.Client(base_url=base, headers=auth(), timeout=30)
            with lock:
                clients.append(client)
            start.wait(timeout=30)  # every thread connected before the burst
        return work(client, i)

    try:
        with ThreadPoolExecutor(max_workers=THREADS) as pool:
            return list(pool.map(run, range(count)))
    finally:
        for client in clients:
            client.close()


def _walk_records(client: httpx.Client, url: str, params: dict[str, Any]) -> list[dict[str, Any]]:
    seen: list[dict[str, Any]] = []
    cursor = None
    for _ in range(10_000):
        query = {**params, **({"cursor": cursor} if cursor else {})}
        response = client.get(url, params=query)
        assert response.status_code == 200, response.text
        page = response.json()
        seen += page["data"]
        assert (page["next_cursor"] is None) == (page["has_more"] is False)
        if not page["has_more"]:
            return seen
        cursor = page["next_cursor"]
    raise AssertionError("pagination did not end")


def _walk(client: httpx.Client, url: str, params: dict[str, Any]) -> list[str]:
    return [r["id"] for r in _walk_records(client, url, params)]


def test_pagination_is_exactly_once_for_stable_records_under_creates_and_deletes(
        base: str) -> None:
    # Seen to fail with an offset walk planted in pagination.walk (a cursor that stands for a
    # position, not a key): creates sorting before the stable records repeat them, deletes skip
    # them. Requests go through uvicorn's one loop, so a no-op store lock does not show here
    # (the next test guards the lock).
    url = "/v1/kb/nodes"
    params = {"workspace_id": WS, "limit": 3}
    with httpx.Client(base_url=base, headers=auth()) as http:
        stable = set(_walk(http, url, {"workspace_id": WS, "limit": 100}))
    assert len(stable) > 6
    stop = threading.Event()
    writing = threading.Event()  # walkers start once the writers do (not before, not after)
    errors: list[str] = []
    writes = [0]

    def writer(client: httpx.Client, i: int) -> None:
        mine: list[str] = []
        k = 0
        while not stop.is_set():
            k += 1
            # Titles that sort before, between and after the stable ones (order: depth, title).
            title = ["0000", "Mmmm", "zzzz"][k % 3] + f" writer {i} #{k}"
            r = client.post(f"/v1/kb/nodes?workspace_id={WS}", json={"title": title})
            if r.status_code != 201:
                errors.append(f"create {r.status_code} {r.text[:200]}")
                return
            mine.append(r.json()["data"]["id"])
            if len(mine) > 2:
                r = client.delete(f"/v1/kb/nodes/{mine.pop(0)}")
                if r.status_code != 200:
                    errors.append(f"delete {r.status_code} {r.text[:200]}")
                    return
            writes[0] += 1
            writing.set()

    def walker(client: httpx.Client, i: int) -> list[list[str]]:
        if not writing.wait(timeout=60):
            errors.append("no write was answered within 60 s")
        return [_walk(client, url, params) for _ in range(3)]

    walks: list[list[str]] = []
    with ThreadPoolExecutor(max_workers=2) as outer:
        writers = outer.submit(in_threads, base, 3, writer)
        walkers = outer.submit(in_threads, base, 4, walker)
        try:
            for result in walkers.result(timeout=120):
                walks += result
        finally:
            stop.set()
        writers.result(timeout=60)
    assert not errors, errors[:5]
    assert writes[0] > 0
    assert len(walks) == 12
    for walk in walks:
        seen_stable = [key for key in walk if key in stable]
        assert sorted(seen_stable) == sorted(stable), "a stable record was missed or repeated"
        assert len(walk) == len(set(walk)), "an id appeared twice in one walk"


# -- several threads and event loops over one mock at once ----------------------------------
#
# uvicorn runs every handler on its one loop, so requests through the server alone never
# interleave inside a handler. The plugin also serves the same mock in-process: each
# SyncASGITransport has an event loop in its own thread, and a test may run its own loop with
# an AsyncASGITransport. Here all of these drive one mock at once, with a tiny thread switch
# interval so that threads interleave inside handlers: without the store lock, patches lose
# updates and timestamps or ids repeat.


@pytest.fixture
def fine_switching() -> Iterator[None]:
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        yield
    finally:
        sys.setswitchinterval(before)


def test_server_thread_and_in_process_loops_lose_no_update(own_mock: MockApp, base: str,
                                                           fine_switching: None) -> None:
    app = create_app(mock=own_mock)
    with httpx.Client(base_url=base, headers=auth()) as http:
        tools = http.get(f"/v1/custom-tools?workspace_id={WS}&limit=100").json()["data"]
    tool = next(t for t in tools if t["language"] == "python")
    per_driver = 25
    start = threading.Barrier(8, timeout=30)
    # One transport for both threads (as mock_api.client()'s): each runs the app on its own loop.
    direct = DirectTransport(app, httpx.URL("http://mock"), httpx.HTTPTransport())

    def body(driver: str, i: int) -> dict[str, str]:
        return {"code": f"def main(**params):\n    return {{'message': '{driver} {i}'}}\n"}

    def over_socket(driver: str) -> list[int]:
        with httpx.Client(base_url=base, headers=auth(), timeout=30) as client:
            start.wait()
            return [client.patch(f"/v1/custom-tools/{tool['id']}", json=body(driver, i))
                    .json()["data"]["version"] for i in range(per_driver)]

    def sync_transport(driver: str) -> list[int]:
        transport = SyncASGITransport(app)
        try:
            with httpx.Client(transport=transport, base_url="http://mock",
                              headers=auth()) as client:
                start.wait()
                return [client.patch(f"/v1/custom-tools/{tool['id']}", json=body(driver, i))
                        .json()["data"]["version"] for i in range(per_driver)]
        finally:
            transport.close()

    def this_thread(driver: str) -> list[int]:
        client = httpx.Client(transport=direct, base_url="http://mock", headers=auth())
        start.wait()  # not closed: closing it would close the transport the other thread uses
        return [client.patch(f"/v1/custom-tools/{tool['id']}", json=body(driver, i))
                .json()["data"]["version"] for i in range(per_driver)]

    def own_loop(driver: str) -> list[int]:
        async def run() -> list[int]:
            async with httpx.AsyncClient(transport=AsyncASGITransport(app),
                                         base_url="http://mock", headers=auth()) as client:
                start.wait()

                async def one(i: int) -> int:
                    response = await client.patch(f"/v1/custom-tools/{tool['id']}",
                                                  json=body(driver, i))
                    return int(response.json()["data"]["version"])

                return list(await asyncio.gather(*(one(i) for i in range(per_driver))))

        return asyncio.run(run())

    drivers = [("socket-a", over_socket), ("socket-b", over_socket),
               ("portal-a", sync_transport), ("portal-b", sync_transport),
               ("loop-a", own_loop), ("loop-b", own_loop),
               ("direct-a", this_thread), ("direct-b", this_thread)]
    with ThreadPoolExecutor(max_workers=len(drivers)) as pool:
        results = list(pool.map(lambda d: d[1](d[0]), drivers))
    direct.close()
    versions = sorted(v for result in results for v in result)
    n = per_driver * len(drivers)
    # Every patch changed the code, so each saw a distinct version: none was lost.
    assert versions == list(range(tool["version"] + 1, tool["version"] + n + 1))
    with httpx.Client(base_url=base, headers=auth()) as http:
        final = http.get(f"/v1/custom-tools/{tool['id']}").json()["data"]
    assert final["version"] == tool["version"] + n


def test_concurrent_skill_creates_each_reach_every_agent(own_mock: MockApp, base: str,
                                                         fine_switching: None) -> None:
    # Creating a skill with auto_assign appends it to every agent's skill_ids (a
    # read-modify-write of each agent): concurrent creates must each land on every agent, and
    # get distinct ids and distinct creation instants.
    app = create_app(mock=own_mock)
    per_driver = 30
    start = threading.Barrier(8, timeout=30)
    direct = DirectTransport(app, httpx.URL("http://mock"), httpx.HTTPTransport())

    def skill(driver: str, i: int) -> dict[str, Any]:
        return {"workspace_id": WS, "name": f"{driver}-{i}", "description": "d", "body": "b",
                "auto_assign_to_existing_v2_agents": True}

    def over_socket(driver: str) -> list[dict[str, Any]]:
        with httpx.Client(base_url=base, headers=auth(), timeout=30) as client:
            start.wait()
            return [client.post("/v1/skills", json=skill(driver, i)).json()["data"]
                    for i in range(per_driver)]

    def sync_transport(driver: str) -> list[dict[str, Any]]:
        transport = SyncASGITransport(app)
        try:
            with httpx.Client(transport=transport, base_url="http://mock",
                              headers=auth()) as client:
                start.wait()
                return [client.post("/v1/skills", json=skill(driver, i)).json()["data"]
                        for i in range(per_driver)]
        finally:
            transport.close()

    def this_thread(driver: str) -> list[dict[str, Any]]:
        client = httpx.Client(transport=direct, base_url="http://mock", headers=auth())
        start.wait()  # not closed: closing it would close the transport the other thread uses
        return [client.post("/v1/skills", json=skill(driver, i)).json()["data"]
                for i in range(per_driver)]

    def own_loop(driver: str) -> list[dict[str, Any]]:
        async def run() -> list[dict[str, Any]]:
            async with httpx.AsyncClient(transport=AsyncASGITransport(app),
                                         base_url="http://mock", headers=auth()) as client:
                start.wait()
                responses = await asyncio.gather(*(
                    client.post("/v1/skills", json=skill(driver, i)) for i in range(per_driver)))
                return [r.json()["data"] for r in responses]

        return asyncio.run(run())

    drivers = [("socket-a", over_socket), ("socket-b", over_socket),
               ("portal-a", sync_transport), ("portal-b", sync_transport),
               ("loop-a", own_loop), ("loop-b", own_loop),
               ("direct-a", this_thread), ("direct-b", this_thread)]
    with ThreadPoolExecutor(max_workers=len(drivers)) as pool:
        skills = [s for result in pool.map(lambda d: d[1](d[0]), drivers) for s in result]
    direct.close()
    n = per_driver * len(drivers)
    created = {s["id"] for s in skills}
    assert len(created) == n, "two creates got the same id"
    assert len({s["created_at"] for s in skills}) == n, "two writes got the same instant"
    with httpx.Client(base_url=base, headers=auth()) as http:
        agents = _walk_records(http, "/v1/agents", {"workspace_id": WS, "limit": 100})
    assert agents
    for agent in agents:
        missing = created - {s["id"] for s in agent["skills"]}
        assert not missing, f"agent {agent['id']} lost {len(missing)} of {n} skills"
