"""A 503 from shared state means the write was not applied: an append that Redis runs after
the worker stopped waiting for it (Redis paused, `DEBUG SLEEP`) is refused by the script
itself, so the write never appears once Redis resumes (DECISIONS H33). The late run is made
deterministic by a deadline already past, not by pausing Redis."""

from __future__ import annotations

import pytest

from mockserver.engine.replication import log

from .conftest import Workers

NOTES = "/v1/kb/nodes?workspace_id=ws_harborview"


def _titles(client: object) -> list[str]:
    listed = client.get(NOTES + "&limit=100")  # type: ignore[attr-defined]
    assert listed.status_code == 200, listed.text
    return [n["title"] for n in listed.json()["data"]]


def test_an_append_run_after_its_deadline_is_not_applied(workers: Workers,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    first, second = workers.add(), workers.add()
    before = _titles(first)
    monkeypatch.setattr(log, "append_deadline_ms", lambda: 1)  # long past on Redis's clock
    refused = first.post(NOTES, json={"title": "late", "body": "x"})
    assert refused.status_code == 503, refused.text
    assert "not applied" in refused.json()["error"]
    monkeypatch.undo()
    assert _titles(first) == before and _titles(second) == before  # on no worker
    made = first.post(NOTES, json={"title": "on time", "body": "x"})
    assert made.status_code == 201, made.text
    assert "on time" in _titles(second)
