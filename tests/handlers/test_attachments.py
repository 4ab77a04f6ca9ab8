"""Upload URLs and the storage PUT they point at."""

from __future__ import annotations

from conftest import OTHER, READ, auth

from .conftest import DESERT, HARBOR


def _path(url: str) -> str:
    return "/" + url.split("://", 1)[1].split("/", 1)[1]


def test_upload_url_and_put(client, mock) -> None:
    r = client.post("/v1/attachments/upload-url", json={"workspace_id": HARBOR})
    assert r.status_code == 201, r.text
    data = r.json()["data"]
    assert data["upload_url"].startswith(mock.config.base_url + "/__storage__/upload/")
    assert data["expires_at"] == "2026-11-01T13:00:00.000Z"  # an hour after the frozen now
    put = client.put(_path(data["upload_url"]), content=b"hello",
                     headers={"Content-Type": "Text/Plain; charset=utf-8"})
    assert put.status_code == 200, put.text
    storage_id = put.json()["storageId"]
    stored = mock.store.get("uploads", storage_id)
    assert (stored["size"], stored["content_type"], stored["workspace_id"]) == (
        5, "text/plain", HARBOR)
    again = client.put(_path(data["upload_url"]), content=b"other")
    assert again.status_code == 409 and "error" in again.json()


def test_put_refusals(client, mock) -> None:
    assert client.put("/__storage__/upload/upnope", content=b"x").status_code == 404
    url = client.post("/v1/attachments/upload-url", json={"workspace_id": HARBOR}).json()["data"]
    mock.state.advance_clock(3601)  # the state moves it (on Redis: on every worker)
    r = client.put(_path(url["upload_url"]), content=b"x")
    assert r.status_code == 403 and "expired" in r.json()["error"]


def test_upload_url_access(client) -> None:
    r = client.post("/v1/attachments/upload-url", json={"workspace_id": DESERT})
    assert r.status_code == 403
    r = client.post("/v1/attachments/upload-url", json={"workspace_id": HARBOR}, headers=auth(READ))
    assert r.status_code == 403
    r = client.post("/v1/attachments/upload-url", json={"workspace_id": DESERT}, headers=auth(OTHER))
    assert r.status_code == 201
    r = client.post("/v1/attachments/upload-url", json={})
    assert r.status_code == 400 and "workspace_id" in r.json()["error"]


def _uploaded(client, content: bytes, content_type: str) -> str:
    url = client.post("/v1/attachments/upload-url", json={"workspace_id": HARBOR}).json()
    put = client.put(_path(url["data"]["upload_url"]), content=content,
                     headers={"Content-Type": content_type})
    assert put.status_code == 200, put.text
    return str(put.json()["storageId"])


def test_an_attachment_url_serves_the_uploaded_bytes(client, mock, make) -> None:
    content = bytes(range(256)) * 40
    storage_id = _uploaded(client, content, "application/pdf")
    ticket = make.ticket(make.contact())
    sent = client.post(f"/v1/tickets/{ticket['id']}/messages", json={
        "body": "Here is the house guide.",
        "attachments": [{"attachment_id": storage_id, "filename": "guide.pdf",
                         "content_type": "application/pdf", "size": len(content)}],
    })
    assert sent.status_code == 200, sent.text
    messages = client.get(f"/v1/tickets/{ticket['id']}/messages").json()["data"]
    url = messages[-1]["attachments"][0]["url"]
    # A storage address: no API token needed, like a signed URL.
    got = client.get(_path(url), headers={"Authorization": ""})
    assert got.status_code == 200
    assert got.content == content and got.headers["content-type"] == "application/pdf"
    missing = client.get("/__storage__/files/stnope")
    assert missing.status_code == 404 and "stnope" in missing.json()["error"]
    mock.reset()  # the upload record and its bytes go with the reset
    # A signed URL of a file no longer there: 403, as for any signature this session cannot
    # check (DECISIONS H3: whether a file exists is not told); by token, 404.
    assert client.get(_path(url)).status_code == 403 and mock.files.size == 0
    assert client.get(f"/__storage__/files/{storage_id}").status_code == 404


def test_kept_bytes_are_bounded_oldest_first(client, mock, second_worker, monkeypatch) -> None:
    for worker in (mock, second_worker):  # second_worker: in the shared-state run
        if worker is not None:
            monkeypatch.setattr(worker.files, "limit", 10)
    first = _uploaded(client, b"123456", "text/plain")
    second = _uploaded(client, b"abcdef", "text/plain")
    assert mock.files.size == 6
    gone = client.get(f"/__storage__/files/{first}")
    assert gone.status_code == 404 and "no longer kept" in gone.json()["error"]
    assert client.get(f"/__storage__/files/{second}").content == b"abcdef"
