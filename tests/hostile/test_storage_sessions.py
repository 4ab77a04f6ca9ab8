"""Issue 38 items 1, 3 and 16 (DECISIONS H2, H3, H14, H21): sessions do not share storage.

Every fresh session handed out the same first upload URL and storage id (one counter per
session, one server-wide secret): a client of session `attacker` filled session `victim`'s
upload URL, and a file URL of session A re-pointed at `/sessions/B/__storage__/files/<id>`
opened B's file. Now ids are salted per session (and incarnation) with the server's key, and a
file URL's signature covers the session, the file's workspace and its id. Files are served inert
(an attachment, nosniff, a sandboxing CSP), and a stranger cannot predict another session's next
knowledge-node id."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from .conftest import OTHER, WRITE, WS, Served, auth


@pytest.fixture
def control(served: Served) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=served.base, timeout=10) as client:
        yield client


def _session(client: httpx.Client, name: str) -> str:
    client.delete(f"/__mock__/sessions/{name}")
    created = client.post("/__mock__/sessions", json={"name": name})
    assert created.status_code == 201, created.text
    return f"/sessions/{name}"


def _upload(client: httpx.Client, prefix: str, data: bytes, *, token: str = WRITE,
            workspace: str = WS, content_type: str = "text/plain") -> tuple[str, str]:
    created = client.post(f"{prefix}/v1/attachments/upload-url",
                          json={"workspace_id": workspace}, headers=auth(token))
    assert created.status_code == 201, created.text
    url = created.json()["data"]["upload_url"]
    put = client.put(httpx.URL(url).raw_path.decode(), content=data,
                     headers={"Content-Type": content_type})
    assert put.status_code == 200, put.text
    return url, str(put.json()["storageId"])


def _file_url(client: httpx.Client, prefix: str, storage_id: str, size: int,
              content_type: str = "text/plain") -> httpx.URL:
    listed = client.get(f"{prefix}/v1/tickets", params={"workspace_id": WS}, headers=auth())
    ticket = listed.json()["data"][0]
    sent = client.post(f"{prefix}/v1/tickets/{ticket['id']}/messages", headers=auth(),
                       json={"body": "see attached", "attachments": [
                           {"attachment_id": storage_id, "filename": "a.bin",
                            "content_type": content_type, "size": size}]})
    assert sent.status_code == 200, sent.text
    messages = client.get(f"{prefix}/v1/tickets/{ticket['id']}/messages",
                          headers=auth()).json()["data"]
    return httpx.URL(messages[-1]["attachments"][0]["url"])


def test_fresh_sessions_hand_out_different_upload_urls_and_ids(control: httpx.Client) -> None:
    victim, attacker = _session(control, "victim"), _session(control, "attacker")
    first = control.post(f"{victim}/v1/attachments/upload-url", json={"workspace_id": WS},
                         headers=auth()).json()["data"]["upload_url"]
    mine = control.post(f"{attacker}/v1/attachments/upload-url",
                        json={"workspace_id": "ws_desert"},
                        headers=auth(OTHER)).json()["data"]["upload_url"]
    token = httpx.URL(first).path.rsplit("/", 1)[1]
    assert httpx.URL(mine).path.rsplit("/", 1)[1] != token
    # The same request in a third fresh session (same workspace, same seed): another URL.
    third = _session(control, "bystander")
    same = control.post(f"{third}/v1/attachments/upload-url", json={"workspace_id": WS},
                        headers=auth()).json()["data"]["upload_url"]
    assert httpx.URL(same).path.rsplit("/", 1)[1] != token
    # The attacker's guess (its own token) at the victim's URL opens nothing ...
    guess = httpx.URL(mine).path.rsplit("/", 1)[1]
    assert control.put(f"{victim}/__storage__/upload/{guess}", content=b"first!").status_code == 404
    # ... and the victim's own upload goes through.
    put = control.put(httpx.URL(first).raw_path.decode(), content=b"mine")
    assert put.status_code == 200, put.text
    # Same seed, same writes, different sessions: different storage ids.
    _, a = _upload(control, victim, b"x")
    _, b = _upload(control, attacker, b"x")
    assert a != b


def test_a_file_url_never_opens_another_sessions_file(control: httpx.Client) -> None:
    one, two = _session(control, "files-a"), _session(control, "files-b")
    _, in_one = _upload(control, one, b"A's file")
    _, in_two = _upload(control, two, b"B's file")
    url = _file_url(control, one, in_one, 8)
    assert control.get(url.raw_path.decode()).content == b"A's file"
    signature = url.params["signature"]
    for path in (f"{two}/__storage__/files/{in_one}", f"{two}/__storage__/files/{in_two}",
                 f"/__storage__/files/{in_one}"):
        moved = control.get(path, params={"signature": signature})
        assert moved.status_code == 403, (path, moved.text)
        assert "signature" in moved.json()["error"]
    # B's own URL still opens B's file.
    assert control.get(_file_url(control, two, in_two, 8).raw_path.decode()).content == b"B's file"


def test_uploads_are_served_inert(control: httpx.Client) -> None:
    page = b"<script>fetch('/__mock__/reset', {method: 'POST'})</script>"
    prefix = _session(control, "inert")
    _, storage_id = _upload(control, prefix, page, content_type="text/html")
    for response in (control.get(f"{prefix}/__storage__/files/{storage_id}", headers=auth()),
                     control.get(_file_url(control, prefix, storage_id, len(page),
                                           "text/html").raw_path.decode())):
        assert response.status_code == 200 and response.content == page
        assert response.headers["content-disposition"] == "attachment"
        assert response.headers["x-content-type-options"] == "nosniff"
        assert response.headers["content-security-policy"] == "sandbox; default-src 'none'"


def test_a_strangers_session_does_not_predict_the_next_node_id(control: httpx.Client) -> None:
    """A stranger's fresh session shows nothing of another fresh session's next ids."""
    ids = []
    for name in ("ids-stranger", "ids-victim"):
        prefix = _session(control, name)
        made = control.post(f"{prefix}/v1/kb/nodes", headers=auth(),
                            params={"workspace_id": WS}, json={"title": "t", "body": "b"})
        assert made.status_code == 201, made.text
        ids.append(made.json()["data"]["id"])
    assert ids[0] != ids[1]
    # A session deleted and created again under the same name is a new incarnation too.
    prefix = _session(control, "ids-victim")
    again = control.post(f"{prefix}/v1/kb/nodes", headers=auth(),
                         params={"workspace_id": WS}, json={"title": "t", "body": "b"})
    assert again.json()["data"]["id"] not in ids


def test_a_fork_holding_the_same_file_does_not_take_the_originals_url(
        control: httpx.Client) -> None:
    """A session forked from a snapshot holds the same storage ids: the signature, which covers
    the session, still opens only the session it was handed out in."""
    origin = _session(control, "fork-origin")
    _, storage_id = _upload(control, origin, b"original's")
    url = _file_url(control, origin, storage_id, 10)
    control.delete("/__mock__/snapshots/fork-snap")
    saved = control.post("/__mock__/snapshots", json={"name": "fork-snap",
                                                      "session": "fork-origin"})
    assert saved.status_code == 201, saved.text
    control.delete("/__mock__/sessions/fork-copy")
    forked = control.post("/__mock__/sessions", json={"name": "fork-copy",
                                                      "snapshot": "fork-snap"})
    assert forked.status_code == 201, forked.text
    # The fork holds the file (its owner's token reads it there) ...
    held = control.get(f"/sessions/fork-copy/__storage__/files/{storage_id}", headers=auth())
    assert held.status_code in (200, 404) and held.status_code != 403
    # ... but the origin's URL does not open it.
    moved = control.get(f"/sessions/fork-copy/__storage__/files/{storage_id}",
                        params={"signature": url.params["signature"]})
    assert moved.status_code == 403, moved.text
    assert control.get(url.raw_path.decode()).content == b"original's"


def test_a_signature_covers_session_workspace_and_id() -> None:
    from mockserver.engine.storage import StorageKeys

    keys = StorageKeys(b"pinned")
    one, two = keys.scope("one"), keys.scope("two")
    signed = keys.signature(one, WS, "st_1")
    assert keys.verify(one, WS, "st_1", signed)
    for scope, workspace, storage_id in ((two, WS, "st_1"), (one, "ws_desert", "st_1"),
                                         (one, WS, "st_2")):
        assert not keys.verify(scope, workspace, storage_id, signed)
    # Unpinned, every incarnation of a name is its own scope.
    fresh = StorageKeys()
    assert fresh.scope("one") != fresh.scope("one")
