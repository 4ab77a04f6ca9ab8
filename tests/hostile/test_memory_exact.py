"""The sessions' memory cap is decided on what is held now, never on an estimate from some
milliseconds ago: admissions do not depend on timing (the estimate's refresh interval is set
to a day here), a write's body counts, and a session reports its uploaded files' bytes in
`change_bytes` (DECISIONS H35)."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import orjson
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


# -- bytes by one definition (DECISIONS H37) ----------------------------------------------------
# A changed record version a session's store (or a snapshot) holds counts its key's bytes plus
# its compact JSON encoding (`store.entry_bytes`); the cap adds files, journals and cached
# answers. A session's write is admitted on what is held once it is done: by one byte past the
# cap it is taken back and refused 507.

def _node(client: TestClient, session: str, size: int, title: str = "node") -> httpx.Response:
    return client.post(f"/sessions/{session}/v1/kb/nodes?workspace_id={WS}",
                       json={"title": title, "body": "x" * size})


def _change_bytes(client: TestClient, session: str) -> int:
    found = client.get(f"/__mock__/sessions/{session}")
    assert found.status_code == 200, found.text
    return int(found.json()["change_bytes"])


def test_a_write_moves_change_bytes_by_exactly_what_it_holds(
        capped: tuple[MockApp, TestClient]) -> None:
    mock, client = capped
    assert client.post("/__mock__/sessions", json={"name": "e"}).status_code == 201
    store = mock.sessions.state("e").store
    assert _change_bytes(client, "e") == 0
    moved = []
    for size in (10, 1010, 5010):
        before = _change_bytes(client, "e")
        made = _node(client, "e", size)
        assert made.status_code == 201, made.text
        key = made.json()["data"]["id"]
        stored = store.get("kb_nodes", key)
        exact = len(key.encode()) + len(orjson.dumps(stored))
        assert _change_bytes(client, "e") - before == exact
        moved.append(exact)
    # A body 1,000 bytes longer holds exactly 1,000 bytes more.
    assert (moved[1] - moved[0], moved[2] - moved[1]) == (1000, 4000)
    # Deleted: its version gives way to a deletion (its key and `null`).
    before = _change_bytes(client, "e")
    assert client.delete(f"/sessions/e/v1/kb/nodes/{key}").status_code in (200, 204)
    assert _change_bytes(client, "e") - before == 4 - moved[2] + len(key.encode())
    # Released at once: a reset holds nothing, a deleted session nothing of the registry's.
    held = mock.sessions.change_bytes()
    assert client.post("/sessions/e/__mock__/reset").status_code == 200
    assert _change_bytes(client, "e") == 0
    assert mock.sessions.change_bytes() == held - (sum(moved[:2]) + len(key.encode()) + 4)
    assert _node(client, "e", 100).status_code == 201
    held_e = _change_bytes(client, "e")
    total = mock.sessions.change_bytes()
    assert client.delete("/__mock__/sessions/e").status_code == 200
    assert mock.sessions.change_bytes() == total - held_e


def test_the_write_one_byte_past_the_cap_is_refused_the_one_that_fits_admitted(
        capped: tuple[MockApp, TestClient]) -> None:
    mock, client = capped
    cap = mock.sessions.max_change_bytes
    assert client.post("/__mock__/sessions", json={"name": "x"}).status_code == 201
    store = mock.sessions.state("x").store
    # What a node holds beyond its body's characters (key, ids, a 4-letter title: fixed).
    made = _node(client, "x", 0)
    assert made.status_code == 201, made.text
    overhead = store.held
    assert _upload(client, "x", cap - 300_000).status_code == 200  # most of the cap used
    room = cap - mock.sessions.held_bytes()  # (journal entries included: counted after)
    assert 100_000 < room < 300_000, room
    changes, held = store.changes, store.held
    refused = _node(client, "x", room - overhead + 1, title="over")
    assert refused.status_code == 507, refused.text
    assert "--max-session-memory" in refused.json()["error"]
    assert (store.changes, store.held) == (changes, held)  # nothing applied
    listed = client.get(f"/sessions/x/v1/kb/nodes?workspace_id={WS}&limit=100").json()["data"]
    assert "over" not in {node.get("title") for node in listed}
    room = cap - mock.sessions.held_bytes()  # the refusal's journal entry is held now
    before = _change_bytes(client, "x")
    admitted = _node(client, "x", room - overhead, title="fits")
    assert admitted.status_code == 201, admitted.text
    assert _change_bytes(client, "x") - before == room  # the cap reached, to the byte
    # Anything more is refused, however small.
    assert _node(client, "x", 0, title="more").status_code == 507


def test_a_snapshot_counts_exactly_what_its_delta_holds(
        capped: tuple[MockApp, TestClient]) -> None:
    mock, client = capped
    assert client.post("/__mock__/sessions", json={"name": "s"}).status_code == 201
    for size in (100, 2000):
        assert _node(client, "s", size).status_code == 201
    held = mock.sessions.state("s").store.held
    before = mock.sessions.change_bytes()
    saved = client.post("/__mock__/snapshots", json={"name": "snap", "session": "s"})
    assert saved.status_code == 201, saved.text
    assert saved.json()["change_bytes"] == held
    assert mock.sessions.change_bytes() == before + held
    assert client.delete("/__mock__/snapshots/snap").status_code in (200, 204)
    assert mock.sessions.change_bytes() == before  # released at once


def test_an_upload_whose_records_pass_the_cap_is_taken_back_whole(
        capped: tuple[MockApp, TestClient]) -> None:
    """The file alone fits; with the records the upload writes it passes the cap: refused 507,
    neither the file nor its records kept, and the same upload URL takes a file that fits."""
    mock, client = capped
    cap = mock.sessions.max_change_bytes
    assert client.post("/__mock__/sessions", json={"name": "u"}).status_code == 201
    state = mock.sessions.state("u")
    made = client.post("/sessions/u/v1/attachments/upload-url", json={"workspace_id": WS})
    assert made.status_code == 201, made.text
    path = httpx.URL(made.json()["data"]["upload_url"]).raw_path.decode()
    room = cap - mock.sessions.held_bytes()
    held, files, changes = state.store.held, state.files.size, state.changes
    refused = client.put(path, content=b"u" * (room - 10), headers={"Content-Type": "text/plain"})
    assert refused.status_code == 507, refused.text
    assert (state.store.held, state.files.size, state.changes) == (held, files, changes)
    fits = client.put(path, content=b"u" * (room - 2000), headers={"Content-Type": "text/plain"})
    assert fits.status_code == 200, fits.text
    assert state.files.size == files + room - 2000


def test_a_control_write_past_the_cap_is_refused_with_nothing_written(
        capped: tuple[MockApp, TestClient]) -> None:
    """Records added through the control API are admitted as API writes are (H37)."""
    mock, client = capped
    cap = mock.sessions.max_change_bytes
    assert client.post("/__mock__/sessions", json={"name": "c"}).status_code == 201
    state = mock.sessions.state("c")
    assert _upload(client, "c", cap - 100_000).status_code == 200
    held, changes = state.store.held, state.changes
    refused = client.post("/sessions/c/__mock__/records/kb_nodes",
                          json={"workspace_id": WS, "title": "big", "body": "b" * 120_000})
    assert refused.status_code == 507, refused.text
    assert (state.store.held, state.changes) == (held, changes)
    added = client.post("/sessions/c/__mock__/records/kb_nodes",
                        json={"workspace_id": WS, "title": "small", "body": "s" * 1000})
    assert added.status_code == 201, added.text
    assert state.changes == changes + 1


def test_a_fork_keeps_its_deleted_snapshots_bytes_counted(
        capped: tuple[MockApp, TestClient]) -> None:
    """A session forked from a snapshot holds the snapshot's records in memory even after the
    snapshot is deleted: they stay counted until the last fork goes (else fork, delete the
    snapshot and the source, repeat: memory past any cap)."""
    mock, client = capped
    assert client.post("/__mock__/sessions", json={"name": "src"}).status_code == 201
    assert _node(client, "src", 900_000).status_code == 201
    assert client.post("/__mock__/snapshots",
                       json={"name": "snap", "session": "src"}).status_code == 201
    held = mock.sessions.snapshot("snap").held
    assert held > 900_000
    assert client.post("/__mock__/sessions",
                       json={"name": "fork", "snapshot": "snap"}).status_code == 201
    assert client.delete("/__mock__/snapshots/snap").status_code in (200, 204)
    assert client.delete("/__mock__/sessions/src").status_code == 200
    assert mock.sessions.change_bytes() == held  # the fork's base, once
    # A second fork's worth no longer fits beside it: 0.9 MB + 0.9 MB + 0.9 MB > 2 MiB.
    assert client.post("/__mock__/sessions", json={"name": "src2"}).status_code == 201
    assert _node(client, "src2", 900_000).status_code == 201
    assert _node(client, "src2", 900_000, "again").status_code == 507
    assert client.delete("/__mock__/sessions/fork").status_code == 200
    assert mock.sessions.change_bytes() == mock.sessions.state("src2").store.held


def test_a_session_created_right_after_a_deletion_is_admitted(
        capped: tuple[MockApp, TestClient]) -> None:
    """Creating a session is decided on what is held now (the estimate's refresh is a day
    here): a deletion that frees the cap admits the next creation at once."""
    mock, client = capped
    assert client.post("/__mock__/sessions", json={"name": "full"}).status_code == 201
    assert _upload(client, "full", MIB).status_code == 200
    mock.sessions.max_change_bytes = mock.sessions.held_bytes()  # at the cap exactly
    assert client.post("/__mock__/sessions", json={"name": "next"}).status_code == 507
    assert client.delete("/__mock__/sessions/full").status_code == 200
    assert client.post("/__mock__/sessions", json={"name": "next"}).status_code == 201
