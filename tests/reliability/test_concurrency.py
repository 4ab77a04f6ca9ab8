"""Concurrency through the real server: uvicorn in a thread on loopback, several client threads
each with its own httpx.Client. Writes are not lost, and pagination keeps its exactly-once law
for records that exist throughout a walk while others are created and deleted."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest
from conform.serve import serve
from conftest import FROZEN_AT, auth

from mockserver.app import Config, MockApp, create_app

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


def test_concurrent_code_patches_bump_the_version_by_exactly_n(base: str) -> None:
    with httpx.Client(base_url=base, headers=auth()) as http:
        tools = http.get(f"/v1/custom-tools?workspace_id={WS}&limit=100").json()["data"]
    tool = next(t for t in tools if t["language"] == "python")
    n = 40

    def patch(client: httpx.Client, i: int) -> tuple[int, int]:
        code = f"def main(**params):\n    return {{'message': 'variant {i}'}}\n"
        response = client.patch(f"/v1/custom-tools/{tool['id']}", json={"code": code})
        assert response.status_code == 200, response.text
        return i, response.json()["data"]["version"]

    results = in_threads(base, n, patch)
    versions = sorted(v for _, v in results)
    # Each patch saw a distinct version: read-modify-write is atomic.
    assert versions == list(range(tool["version"] + 1, tool["version"] + n + 1))
    with httpx.Client(base_url=base, headers=auth()) as http:
        final = http.get(f"/v1/custom-tools/{tool['id']}").json()["data"]
    assert final["version"] == tool["version"] + n
    last = max(results, key=lambda r: r[1])[0]
    assert f"variant {last}'" in final["code"]


def test_concurrent_ticket_note_creates_all_land(base: str) -> None:
    with httpx.Client(base_url=base, headers=auth()) as http:
        ticket = http.get(f"/v1/tickets?workspace_id={WS}&limit=1").json()["data"][0]
        url = f"/v1/tickets/{ticket['id']}/notes"
        before = _walk(http, url, {"limit": 100})
    n = 60

    def create(client: httpx.Client, i: int) -> str:
        response = client.post(url, json={"body": f"concurrent note {i}"})
        assert response.status_code == 201, response.text
        return str(response.json()["data"]["id"])

    created = in_threads(base, n, create)
    assert len(set(created)) == n
    with httpx.Client(base_url=base, headers=auth()) as http:
        after = _walk(http, url, {"limit": 100})
    assert len(after) == len(before) + n
    assert set(after) == set(before) | set(created)
    with httpx.Client(base_url=base, headers=auth()) as http:
        bodies = {n["body"] for n in _walk_records(http, url, {"limit": 100})}
    assert {f"concurrent note {i}" for i in range(n)} <= bodies


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
    url = "/v1/kb/nodes"
    params = {"workspace_id": WS, "limit": 3}
    with httpx.Client(base_url=base, headers=auth()) as http:
        stable = set(_walk(http, url, {"workspace_id": WS, "limit": 100}))
    assert len(stable) > 6
    stop = threading.Event()
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

    walks: list[list[str]] = []
    with ThreadPoolExecutor(max_workers=2) as outer:
        writers = outer.submit(in_threads, base, 3, writer)
        walkers = outer.submit(in_threads, base, 4,
                               lambda client, i: [_walk(client, url, params) for _ in range(3)])
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
