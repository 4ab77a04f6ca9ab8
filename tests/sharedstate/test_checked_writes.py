"""A write on a shared state whose answer the self-check refuses is not applied, on any
worker (issue 38's leftover; in memory `Core.checked_write` takes it back, DECISIONS H27):
the self-check runs inside the shared log's transaction, before the append (R23).

Seen to fail with the check moved after the append (the planted break: the shared branch of
`Core.answer` transacting `handle` instead of `checked`).
"""

from __future__ import annotations

from typing import Any

from .conftest import Workers

WS = "ws_harborview"


def _nodes(client: Any) -> Any:
    listed = client.get("/v1/kb/nodes", params={"workspace_id": WS, "limit": 100})
    assert listed.status_code == 200, listed.text
    return listed.json()


def test_a_shared_write_the_self_check_refuses_is_not_appended(workers: Workers) -> None:
    a, b = workers.add(), workers.add()
    before = _nodes(b)
    mock = workers.mocks[0]
    original = mock.handlers["createKnowledgeNode"]

    def leaky(ctx: Any) -> Any:
        answer = original(ctx)  # writes the node
        return {**answer, "data": {**answer["data"], "_leak": 1}}  # a bug of ours

    mock.handlers = {**mock.handlers, "createKnowledgeNode": leaky}
    try:
        refused = a.post(f"/v1/kb/nodes?workspace_id={WS}", json={"title": "leaked"})
    finally:
        mock.handlers = {**mock.handlers, "createKnowledgeNode": original}
    assert refused.status_code == 500 and "_leak" in refused.json()["error"]
    # Nothing of it on either worker: not in the writer's copy, not in the shared log.
    assert _nodes(a) == before
    assert _nodes(b) == before
    # The state goes on: the next write is appended and seen by both.
    made = a.post(f"/v1/kb/nodes?workspace_id={WS}", json={"title": "kept"})
    assert made.status_code == 201, made.text
    for client in (a, b):
        titles = [node["title"] for node in _nodes(client)["data"]]
        assert "kept" in titles and "leaked" not in titles
