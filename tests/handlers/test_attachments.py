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
    mock.clock.advance(3601)
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
