"""Issue 38 items 1 and 8 on shared state (DECISIONS H2, H12): without `--storage-secret`,
workers of one namespace sign file URLs with a key derived from the namespace's secret in
Redis, so a URL one worker hands out opens the file on every other; and the URL stays bound to
its session there too (re-pointed at another session: 403)."""

from __future__ import annotations

import httpx

from .conftest import Workers

HARBOR = "ws_harborview"


def _file_url(client: httpx.Client, prefix: str, data: bytes) -> tuple[httpx.URL, str]:
    url = client.post(f"{prefix}/v1/attachments/upload-url",
                      json={"workspace_id": HARBOR}).json()["data"]["upload_url"]
    put = client.put(httpx.URL(url).raw_path.decode(), content=data,
                     headers={"Content-Type": "text/plain"})
    assert put.status_code == 200, put.text
    storage_id = put.json()["storageId"]
    ticket = client.get(f"{prefix}/v1/tickets", params={"workspace_id": HARBOR}).json()["data"][0]
    sent = client.post(f"{prefix}/v1/tickets/{ticket['id']}/messages", json={
        "body": "x", "attachments": [{"attachment_id": storage_id, "filename": "a.txt",
                                      "content_type": "text/plain", "size": len(data)}]})
    assert sent.status_code == 200, sent.text
    messages = client.get(f"{prefix}/v1/tickets/{ticket['id']}/messages").json()["data"]
    return httpx.URL(messages[-1]["attachments"][0]["url"]), storage_id


def test_a_url_of_one_worker_opens_on_another_and_only_in_its_session(
        workers: Workers) -> None:
    a = workers.add(cursor_secret=None, storage_secret=None)
    b = workers.add(cursor_secret=None, storage_secret=None)
    for prefix in ("", "/sessions/shared-a"):
        if prefix:
            assert a.post("/__mock__/sessions", json={"name": "shared-a"}).status_code == 201
        url, _ = _file_url(a, prefix, b"from worker a")
        fetched = b.get(url.raw_path.decode(), headers={"Authorization": ""})
        assert fetched.status_code == 200, fetched.text
        assert fetched.content == b"from worker a"
    # Another session on either worker: the same id and signature open nothing.
    assert b.post("/__mock__/sessions", json={"name": "shared-b"}).status_code == 201
    url, storage_id = _file_url(a, "/sessions/shared-a", b"A's")
    _file_url(b, "/sessions/shared-b", b"B's")
    for client in (a, b):
        moved = client.get(f"/sessions/shared-b/__storage__/files/{storage_id}",
                           params={"signature": url.params["signature"]},
                           headers={"Authorization": ""})
        assert moved.status_code == 403, moved.text
