"""Write access, stated directly: the description's rule 4 ("write endpoints (create, patch,
delete, resolve, close and similar) require a token with write access") read off the method,
not off the document's own security roles, so a write role dropped from the document fails
here and not only through a gate run.

Planted defect this was seen failing on: the `write` role removed from `createAgent`'s
security requirement in spec/openapi.yaml (both tests fail naming createAgent).
"""

from __future__ import annotations

import re

from conftest import READ, auth
from starlette.testclient import TestClient

from mockserver.engine.app import MockApp

# POST operations that only read (a search with a body): the description lists them as reads.
POST_READS = {"searchKnowledgeNodes", "searchKnowledgeBase"}


def _writes(mock: MockApp) -> list:
    return [op for op in mock.spec.operations
            if op.method in ("POST", "PUT", "PATCH", "DELETE")
            and op.operation_id not in POST_READS]


def test_every_write_method_requires_the_write_role(mock: MockApp) -> None:
    unguarded = [op.operation_id for op in _writes(mock) if not op.requires_write]
    assert unguarded == []
    reads = [op.operation_id for op in mock.spec.operations
             if op.method == "GET" and op.requires_write]
    assert reads == []


def test_a_read_token_is_refused_on_every_write(mock: MockApp, client: TestClient) -> None:
    accepted = []
    for op in _writes(mock):
        path = re.sub(r"\{[^}]+\}", "ph_nonexistent", op.path)
        answer = client.request(op.method, path, params={"workspace_id": "ws_harborview"},
                                json={"workspace_id": "ws_harborview"}, headers=auth(READ))
        if answer.status_code != 403:
            accepted.append((op.operation_id, answer.status_code))
        else:
            assert "error" in answer.json()
    assert accepted == []
