"""The session memory cap (--max-session-memory) counts everything sessions hold: changed
records, journal entries and bodies, uploaded files (and snapshots); a session's upload or
write that would pass it is refused with 507 before anything is kept."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from .conftest import WS, Served, auth, start, stop

MIB = 1024 * 1024


@pytest.fixture(scope="module")
def capped(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    found = start(tmp_path_factory.mktemp("capped"), "--max-session-memory", "1", "--quiet")
    yield found
    stop(found)


@pytest.fixture
def client(capped: Served) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=capped.base, timeout=30) as client:
        for session in client.get("/__mock__/sessions").json()["data"][1:]:
            client.delete(f"/__mock__/sessions/{session['name']}")
        yield client


def _upload(client: httpx.Client, prefix: str, size: int) -> httpx.Response:
    created = client.post(f"{prefix}/v1/attachments/upload-url", json={"workspace_id": WS},
                          headers=auth())
    if created.status_code != 201:
        return created  # refused itself (a write in a session at the cap)
    path = httpx.URL(created.json()["data"]["upload_url"]).raw_path.decode()
    return client.put(path, content=b"u" * size, headers={"Content-Type": "text/plain"})


def test_uploads_count_and_are_refused_507_before_the_cap(capped: Served,
                                                          client: httpx.Client) -> None:
    before = capped.rss_kib()
    answers = []
    for i in range(8):
        assert client.post("/__mock__/sessions", json={"name": f"s{i}"}).status_code == 201
        answers.append(_upload(client, f"/sessions/s{i}", 20 * MIB // 8 * 7).status_code)
        answers.append(_upload(client, f"/sessions/s{i}", 600 * 1024).status_code)
    assert answers.count(200) == 1 and set(answers) == {200, 507}
    refused = _upload(client, "/sessions/s0", 600 * 1024)
    assert refused.status_code == 507 and "--max-session-memory" in refused.json()["error"]
    # Outside sessions nothing is capped by it.
    assert _upload(client, "", 600 * 1024).status_code == 200
    assert capped.rss_kib() - before < 64 * 1024  # KiB; eight 17.5 MiB uploads were refused


def test_a_write_past_the_cap_is_refused_and_writes_nothing(client: httpx.Client) -> None:
    assert client.post("/__mock__/sessions", json={"name": "w"}).status_code == 201
    assert _upload(client, "/sessions/w", 900 * 1024).status_code == 200
    for size in (60 * 1024, 4 * 1024, 256):  # fill the cap to within a record
        for _ in range(40):
            if _upload(client, "/sessions/w", size).status_code != 200:
                break
        else:
            raise AssertionError(f"uploads of {size} bytes never reached the cap")
    for _ in range(100):  # then upload URLs (a record each: counted exactly) until one
        before = client.get("/__mock__/sessions/w").json()  # no longer fits
        refused = client.post("/sessions/w/v1/attachments/upload-url",
                              json={"workspace_id": WS}, headers=auth())
        if refused.status_code != 201:
            break
    assert refused.status_code == 507, refused.text
    after = client.get("/__mock__/sessions/w").json()
    assert (after["changes"], after["change_bytes"]) == (before["changes"],
                                                         before["change_bytes"])
    # Reads keep being answered.
    listed = client.get("/sessions/w/v1/conversations", params={"workspace_id": WS},
                        headers=auth())
    assert listed.status_code == 200


def test_journals_give_way_past_the_cap(client: httpx.Client) -> None:
    assert client.post("/__mock__/sessions", json={"name": "j"}).status_code == 201
    assert _upload(client, "/sessions/j", 1000 * 1024).status_code == 200
    for _ in range(40):  # ~40 x 20 KB answers kept by the session's journal
        client.get("/sessions/j/v1/conversations",
                   params={"workspace_id": WS, "limit": 100}, headers=auth())
    # The estimate follows each journal's growth byte for byte: the journal gives way as soon
    # as the cap is passed, however fast the requests come (no interval decides it).
    journal = client.get("/__mock__/requests", params={"session": "j"}).json()
    assert journal["dropped"] > 0
