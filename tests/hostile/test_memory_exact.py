"""The sessions' memory cap is decided on what is held now, never on an estimate from some
milliseconds ago: admissions do not depend on timing (the estimate's refresh interval is set
to a day here), a write's body counts, and a session reports its uploaded files' bytes in
`change_bytes` (DECISIONS H35)."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from conftest import FROZEN_AT, auth
from starlette.testclient import TestClient

from mockserver.engine.app import Config, MockApp
from mockserver.standalone.server import create_app

WS = "ws_harborview"
MIB = 1024 * 1024


@pytest.fixture
def capped() -> Iterator[tuple[MockApp, TestClient]]:
    mock = MockApp(Config(self_check=True, frozen_clock=FROZEN_AT,
                          max_session_memory=2 * MIB, max_body_bytes=4 * MIB))
    mock.sessions.memory_check_interval = 86_400.0  # no refresh by time during the test
    with TestClient(create_app(mock=mock), headers=auth()) as client:
        yield mock, client


def _upload(client: TestClient, session: str, size: int) -> httpx.Response:
    made = client.post(f"/sessions/{session}/v1/attachments/upload-url",
                       json={"workspace_id": WS})
    if made.status_code != 201:
        return made
    path = httpx.URL(made.json()["data"]["upload_url"]).raw_path.decode()
    return client.put(path, content=b"u" * size, headers={"Content-Type": "text/plain"})


def test_admissions_count_what_is_held_now(capped: tuple[MockApp, TestClient]) -> None:
    _, client = capped
    for name in ("a", "b"):
        assert client.post("/__mock__/sessions", json={"name": name}).status_code == 201
    assert _upload(client, "a", int(1.5 * MIB)).status_code == 200
    assert _upload(client, "b", int(1.5 * MIB)).status_code == 507  # a holds 1.5 of 2 MiB
    assert client.delete("/__mock__/sessions/a").status_code == 200
    # Freed at once, whatever the estimate's age.
    assert _upload(client, "b", int(1.5 * MIB)).status_code == 200


def test_a_sessions_files_are_in_its_change_bytes(capped: tuple[MockApp, TestClient]) -> None:
    _, client = capped
    assert client.post("/__mock__/sessions", json={"name": "f"}).status_code == 201
    assert _upload(client, "f", MIB).status_code == 200
    (info,) = [s for s in client.get("/__mock__/sessions").json()["data"] if s["name"] == "f"]
    assert info["change_bytes"] >= MIB


def test_a_write_body_counts_before_it_is_kept(capped: tuple[MockApp, TestClient]) -> None:
    _, client = capped
    assert client.post("/__mock__/sessions", json={"name": "w"}).status_code == 201
    assert _upload(client, "w", int(1.5 * MIB)).status_code == 200
    big = "b" * 900_000  # 1.5 MiB + 0.9 MB > 2 MiB
    refused = client.post(f"/sessions/w/v1/kb/nodes?workspace_id={WS}",
                          json={"title": "big", "body": big})
    assert refused.status_code == 507, refused.status_code
    assert client.post(f"/sessions/w/v1/kb/nodes?workspace_id={WS}",
                       json={"title": "small", "body": "s"}).status_code == 201


def test_a_journal_gives_way_past_the_cap_with_no_refresh_by_time(
        capped: tuple[MockApp, TestClient]) -> None:
    """The estimate's refresh interval is a day here: only its byte-for-byte following of the
    journal's growth can make the journal give way (the served test once needed a sleep)."""
    _, client = capped
    assert client.post("/__mock__/sessions", json={"name": "j"}).status_code == 201
    assert _upload(client, "j", int(1.9 * MIB)).status_code == 200
    for _ in range(20):  # ~20 KB answers kept by the session's journal: past 2 MiB
        client.get("/sessions/j/v1/conversations", params={"workspace_id": WS, "limit": 100})
    journal = client.get("/__mock__/requests", params={"session": "j"}).json()
    assert journal["dropped"] > 0
