"""A knowledge-base search over large bodies does not hold the event loop for a pass over
their bytes: bodies are indexed (chunks and words) when written, and a search only intersects
word sets (DECISIONS H32). Measured as work, not wall time."""

from __future__ import annotations

from typing import Any

import pytest
from starlette.testclient import TestClient

from mockserver.engine.handlers import knowledge_base

WS = "ws_harborview"


def test_a_search_over_large_bodies_tokenises_no_body(client: TestClient,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    paragraph = "the heating manual covers boilers radiators and thermostats " * 40
    body = "\n\n".join(f"{paragraph} section{i}" for i in range(400))  # ~1 MB
    for i in range(3):
        made = client.post(f"/v1/kb/nodes?workspace_id={WS}",
                           json={"title": f"manual {i}", "body": body})
        assert made.status_code == 201, made.text
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
