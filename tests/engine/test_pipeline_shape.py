"""The pipeline's shape: the facts of a request travel in its `Exchange`, not in the ASGI
scope (only what crosses an ASGI boundary is put there); fault kinds are effects that own
what they do."""

from __future__ import annotations

from typing import Any

import pytest
from conftest import SHARED_SUITE, WRITE
from starlette.testclient import TestClient

from mockserver.engine.app import MockApp
from mockserver.engine.faults import Delay, Drop, FaultRule, Status

WS = "ws_harborview"
BOUNDARY = {"mock.state", "mock.prefix", "mock.error"}  # see engine/app.py's docstring, "One route"


def _requests(client: TestClient) -> list[tuple[str, str, dict[str, Any]]]:
    token = {"Authorization": f"Bearer {WRITE}"}
    return [
        ("GET", f"/v1/tickets?workspace_id={WS}&unknown=1", {"headers": token}),
        ("GET", f"/v1/tickets?workspace_id={WS}&unknown=1", {"headers": token}),  # cached
        ("GET", "/v1/nope", {"headers": token}),
        ("DELETE", "/v1/tickets", {"headers": token}),
        ("GET", "/v1/models", {}),
        ("POST", "/v1/kb/nodes", {"headers": token, "json": {"workspace_id": WS}}),
        ("POST", "/v1/kb/nodes", {"headers": token,
                                  "json": {"workspace_id": WS, "title": "t", "kind": "page"}}),
        ("GET", "/v1/models", {"headers": {**token, "Prefer": "code=500"}}),
        ("GET", "/v1/models", {"headers": {**token, "X-Mock-Session": "default"}}),
    ]


@pytest.mark.skipif(SHARED_SUITE, reason="in memory: the shared state keeps its Redis ticket "
                                         "in the scope (shared.py)")
def test_the_scope_carries_only_what_crosses_an_asgi_boundary(
        mock: MockApp, client: TestClient, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[set[str]] = []
    serve = mock.serve

    async def watched(scope: Any, receive: Any, send: Any, scanned: Any = None) -> None:
        await serve(scope, receive, send, scanned)
        seen.append({key for key in scope if key.startswith("mock.")})

    monkeypatch.setattr(mock, "serve", watched)
    rules = [mock.state.add_fault(path="/v1/agents", status=503),
             mock.state.add_fault(path="/v1/agents", delay_ms=1)]
    requests = [*_requests(client), ("GET", f"/v1/agents?workspace_id={WS}", {}),
                ("GET", f"/v1/agents?workspace_id={WS}", {})]
    for method, url, options in requests:
        client.request(method, url, **options)
    assert len(seen) == len(requests)
    for url, keys in zip([u for _, u, _ in requests], seen, strict=True):
        assert keys <= BOUNDARY, (url, keys - BOUNDARY)
    assert [e.fault for e in mock.journal.entries()[-2:]] == [r.describe() for r in rules]


def test_each_fault_kind_is_an_effect_that_owns_its_answer() -> None:
    status = FaultRule(id=1, status=429, error="slow down", headers={"X-Why": "test"})
    effect = status.effect()
    assert isinstance(effect, Status)
    answered = effect.answer()
    assert answered is not None
    code, body, headers = answered
    assert (code, body) == (429, b'{"error":"slow down"}')
    assert dict(headers) == {b"x-why": b"test", b"retry-after": b"1",
                             b"content-length": str(len(body)).encode(),
                             b"content-type": b"application/json"}
    assert isinstance(FaultRule(id=2, delay_ms=5).effect(), Delay)
    assert FaultRule(id=2, delay_ms=5).effect().answer() is None  # the core answers
    drop = FaultRule(id=3, drop=True, status=500).effect()
    assert isinstance(drop, Drop) and drop.answer() == (200, b"", [(b"content-length", b"0")])
