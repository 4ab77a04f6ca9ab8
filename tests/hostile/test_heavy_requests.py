"""A knowledge-base search over large bodies does not hold the event loop for a pass over
their bytes: bodies are indexed (chunks and words) when written, and a search only intersects
word sets (DECISIONS H32). Measured as work, not wall time."""

from __future__ import annotations

import asyncio
import threading
import types
from typing import Any

import httpx
import pytest
from conftest import FROZEN_AT, auth
from starlette.testclient import TestClient

from mockserver.engine import context, exchange
from mockserver.engine.app import Config, MockApp
from mockserver.engine.handlers import knowledge_base
from mockserver.standalone.server import create_app

WS = "ws_harborview"


def test_a_search_over_large_bodies_tokenises_no_body(client: TestClient,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    paragraph = "the heating manual covers boilers radiators and thermostats " * 40
    body = "\n\n".join(f"{paragraph} section{i}" for i in range(400))  # ~1 MB
    for i in range(3):
        made = client.post(f"/v1/kb/nodes?workspace_id={WS}",
                           json={"title": f"manual {i}", "body": body})
        assert made.status_code == 201, made.text
    # A written file is searchable once indexed (DECISIONS P5): an hour of mock time.
    assert client.post("/__mock__/clock", json={"advance_seconds": 3600}).status_code == 200
    tokenised: list[int] = []
    tokens = knowledge_base._tokens

    def counting(text: str) -> Any:
        tokenised.append(len(text))
        return tokens(text)

    monkeypatch.setattr(knowledge_base, "_tokens", counting)
    found = client.post(f"/v1/kb/search?workspace_id={WS}", json={"query": "section7 boilers"})
    assert found.status_code == 200, found.text
    assert any(hit["chunk_text"].endswith("section7") for hit in found.json()["data"])
    # Only the query and titles were tokenised by the search: at most a few hundred bytes.
    assert sum(tokenised) < 10_000, (len(tokenised), sum(tokenised))


# -- big pages (DECISIONS H38) ------------------------------------------------------------------

def _heavy_mock() -> MockApp:
    return MockApp(Config(self_check=True, frozen_clock=FROZEN_AT))


def _fill(client: TestClient, count: int, size: int) -> None:
    for i in range(count):
        made = client.post(f"/v1/kb/nodes?workspace_id={WS}",
                           json={"title": f"big {i}", "body": f"{i} " + "b" * size})
        assert made.status_code == 201, made.text


SLICE = exchange.SEND_SLICE
HEAVY = f"/v1/kb/nodes?workspace_id={WS}&limit=20&include_body=true"


def test_a_heavy_page_is_encoded_off_the_loop_while_another_request_is_answered(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The heavy page's encoding is held in its worker thread on an event; a request sent
    meanwhile is answered (the event loop is free), and the page is then the same bytes a
    quiet page would have been, self-checked."""
    entered, release = threading.Event(), threading.Event()
    encoders: list[int] = []
    heavy_page = context.heavy_page

    def held(envelope: dict[str, Any]) -> dict[str, Any]:
        encoders.append(threading.get_ident())
        entered.set()
        release.wait(10)  # a safety net only: released below as soon as the other answers
        return heavy_page(envelope)

    monkeypatch.setattr(context, "heavy_page", held)
    with TestClient(create_app(mock=_heavy_mock()), headers=auth()) as client:
        _fill(client, 20, 100_000)  # ~100 KB each: a page of 20 holds past 1 MiB of them
        answers: dict[str, httpx.Response] = {}
        worker = threading.Thread(target=lambda: answers.update(heavy=client.get(HEAVY)))
        worker.start()
        assert entered.wait(10), "the page was not encoded as a heavy page"
        other = client.get("/v1/workspaces")
        answered_while_held = not release.is_set() and worker.is_alive()
        release.set()
        worker.join(10)
        assert other.status_code == 200, other.text
        assert answered_while_held
        assert encoders and encoders[0] != threading.get_ident()
        heavy = answers["heavy"]
        assert heavy.status_code == 200, heavy.text
        # The same bytes as the page encoded the quiet way (the threshold out of reach).
        monkeypatch.setattr(context, "HEAVY_PAGE_BYTES", 1 << 40)
        quiet = client.get(HEAVY)
        assert encoders == [encoders[0]]  # not heavy now
        assert heavy.content == quiet.content
        data = heavy.json()["data"]
        assert len(data) == 20 and sum(len(node["body"]) for node in data) > 1024 * 1024


def test_the_encoding_runs_in_a_worker_thread_not_the_loop(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Served: the heavy page's items are encoded in a thread that runs no event loop."""
    threads: list[bool] = []
    heavy_page = context.heavy_page

    def where(envelope: dict[str, Any]) -> dict[str, Any]:
        try:
            asyncio.get_running_loop()
            threads.append(True)
        except RuntimeError:
            threads.append(False)
        return heavy_page(envelope)

    monkeypatch.setattr(context, "heavy_page", where)
    with TestClient(create_app(mock=_heavy_mock()), headers=auth()) as client:
        _fill(client, 20, 100_000)
        assert client.get(HEAVY).status_code == 200
        assert threads == [False]
        # A small page (one record) is answered the quiet way: no heavy encoding.
        assert client.get(HEAVY.replace("limit=20", "limit=1")).status_code == 200
        assert threads == [False]


@pytest.mark.parametrize("size", [1, SLICE - 1, SLICE, SLICE + 1, 3 * SLICE, 3 * SLICE + 7])
def test_a_large_body_is_sent_in_slices_that_add_up_to_it(size: int) -> None:
    body = bytes(range(256)) * (size // 256) + b"x" * (size % 256)
    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    asyncio.run(exchange.send_slices(bytearray(body), send))
    assert b"".join(m["body"] for m in sent) == body
    assert all(type(m["body"]) is bytes and len(m["body"]) <= SLICE for m in sent)
    assert [m["more_body"] for m in sent] == [True] * (len(sent) - 1) + [False]
    assert len(sent) == max(1, -(-size // SLICE))


def test_a_heavy_page_that_projects_small_is_sent_and_journaled_as_bytes() -> None:
    """A heavy page whose projection is small (`include_body=false`) goes out whole, as the
    bytes ASGI requires, and its journal entry keeps those bytes (a bytearray would be read as
    no body by the export)."""
    mock = _heavy_mock()
    sent: list[type] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        async def spy(message: Any) -> None:
            if message["type"] == "http.response.body":
                sent.append(type(message["body"]))
            await send(message)
        await create_app(mock=mock)(scope, receive, spy)

    with TestClient(app, headers=auth()) as client:
        _fill(client, 20, 100_000)
        sent.clear()
        light = client.get(HEAVY.replace("include_body=true", "include_body=false"))
        assert light.status_code == 200, light.text
        assert len(light.content) < SLICE
        assert sent == [bytes]
        assert type(mock.journal.entries()[-1].response_body) is bytes


def test_the_shared_runners_send_slices_a_large_body_too() -> None:
    """`exchange.send_answer` (the answer of a request on shared state, replica.py) sends a
    body past one slice in slices, as the in-memory runner does."""
    ex: Any = types.SimpleNamespace(effect=None, status=200, headers=[],
                               response=b"x" * (2 * SLICE + 5))
    messages: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        messages.append(message)

    asyncio.run(exchange.send_answer(ex, send))
    bodies = [m for m in messages if m["type"] == "http.response.body"]
    assert [len(m["body"]) for m in bodies] == [SLICE, SLICE, 5]
    assert [m["more_body"] for m in bodies] == [True, True, False]


def test_a_heavy_page_of_a_table_without_progression_is_encoded_off_the_loop(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Ticket notes never progress: their heavy page is weighed by the store's big records
    alone (the page's gate tests `store.big`, not only the progression's moved records)."""
    encoded: list[int] = []
    heavy_page = context.heavy_page

    def counted(envelope: dict[str, Any]) -> Any:
        encoded.append(len(envelope["data"]))
        return heavy_page(envelope)

    monkeypatch.setattr(context, "heavy_page", counted)
    ticket = "/v1/tickets/xd_aisha_khan_parking/notes"
    with TestClient(create_app(mock=_heavy_mock()), headers=auth()) as client:
        for i in range(12):
            made = client.post(ticket, json={"body": f"{i} " + "n" * 100_000})
            assert made.status_code == 201, made.text
        page = client.get(ticket, params={"limit": 12})
        assert page.status_code == 200, page.text
        assert len(page.json()["data"]) >= 12
        assert encoded == [len(page.json()["data"])]
