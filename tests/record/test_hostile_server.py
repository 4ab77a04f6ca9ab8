"""`record` against a hostile server: a next_cursor that does not advance stops the walk with
an error naming it; a long Retry-After is capped (and said); a record id is one path segment
(DECISIONS H31). No sleeping: the client's sleep is recorded."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from mockserver.openapi.spec import load_spec
from mockserver.record.client import MAX_RETRY_AFTER, PacedClient, RecordError
from mockserver.record.drift import Drift
from mockserver.record.scrub import Scrubber
from mockserver.record.walk import Walk


def _walk() -> Walk:
    spec = load_spec()
    scrubber = Scrubber(key=b"k" * 32)
    return Walk(spec, scrubber, Drift(spec, scrubber))


def _client(handler: Any, waits: list[float]) -> PacedClient:
    http = httpx.Client(base_url="http://recorded.example",
                        transport=httpx.MockTransport(handler))
    return PacedClient(http, per_minute=0, sleep=waits.append)


@pytest.mark.parametrize("cursors", [["same"], ["a", "b"]])
def test_a_cursor_that_does_not_advance_stops_with_an_error(cursors: list[str]) -> None:
    calls = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request.url)
        if len(calls) > 50:  # the walk would go on forever
            raise AssertionError("the walk did not stop on a cursor that does not advance")
        return httpx.Response(200, json={"data": [], "has_more": True,
                                         "next_cursor": cursors[len(calls) % len(cursors)]})

    walk = _walk()
    walk.queue.append({"op": "listKnowledgeNodes", "table": "kb_nodes",
                       "ws": "ws_x", "path": {}, "query": {}})
    with pytest.raises(RecordError, match=r"next_cursor .* does not advance"):
        walk.run(_client(handler, []))
    assert len(calls) <= len(cursors) + 1


def test_a_long_retry_after_is_capped_and_said(capsys: pytest.CaptureFixture[str]) -> None:
    answers = iter([httpx.Response(429, headers={"Retry-After": "999999999"}),
                    httpx.Response(200, json={"data": []})])
    waits: list[float] = []
    client = _client(lambda request: next(answers), waits)
    assert client.get("/v1/models", {}).status_code == 200
    assert waits == [MAX_RETRY_AFTER] and client.capped_retry_after == 1
    assert "capped" in capsys.readouterr().err


@pytest.mark.parametrize("key", ["../../admin", "a/b", "x?y=1#z", "%2e%2e"])
def test_a_record_id_is_one_path_segment(key: str) -> None:
    paths = []

    def handler(request: httpx.Request) -> httpx.Response:
        paths.append(request.url.raw_path.decode().split("?")[0])
        return httpx.Response(404, json={"error": "no"})

    walk = _walk()
    walk.queue.append({"op": "getKnowledgeNode", "table": "kb_nodes", "ws": "ws_x",
                       "path": {"node_id": key, "id": key}, "detail": True})
    walk.run(_client(handler, []))
    (path,) = paths
    assert path.startswith("/v1/kb/nodes/") and path.count("/") == 4, path
    assert ".." not in path.split("/") and "?" not in path


@pytest.mark.parametrize("key", ["..", "."])
def test_a_dot_segment_id_is_refused(key: str) -> None:
    walk = _walk()
    walk.queue.append({"op": "getKnowledgeNode", "table": "kb_nodes", "ws": "ws_x",
                       "path": {"node_id": key, "id": key}, "detail": True})
    with pytest.raises(RecordError, match="not a path segment"):
        walk.run(_client(lambda request: httpx.Response(404), []))
