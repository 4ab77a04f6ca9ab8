"""Storage like a real object store: upload URLs and storage ids nobody can predict without
the server's secret (reproducible only when it is pinned), and a file readable only by its
signed capability URL or a bearer token of its workspace (another workspace's token: 404)."""

from __future__ import annotations

from typing import Any

import httpx
from starlette.testclient import TestClient

from mockserver.engine.app import Config
from mockserver.standalone.server import create_app

from .conftest import OTHER, WRITE, WS, auth


def _upload(api: httpx.Client, data: bytes, token: str = WRITE,
            workspace: str = WS) -> tuple[str, str]:
    created = api.post("/v1/attachments/upload-url", json={"workspace_id": workspace},
                       headers=auth(token))
    assert created.status_code == 201, created.text
    url = created.json()["data"]["upload_url"]
    put = api.put(httpx.URL(url).raw_path.decode(), content=data,
                  headers={"Content-Type": "text/plain"})
    assert put.status_code == 200, put.text
    return url, str(put.json()["storageId"])


def _first_upload(secret: str | None) -> tuple[str, str]:
    """The first upload URL and storage id of a fresh in-process mock (seed 0)."""
    with TestClient(create_app(Config(storage_secret=secret, request_log=False)),
                    base_url="http://127.0.0.1:8080") as client:
        url, storage_id = _upload(client, b"x")  # type: ignore[arg-type]
        return url, storage_id


def test_upload_urls_and_ids_are_unpredictable_without_the_secret() -> None:
    first, second = _first_upload(None), _first_upload(None)
    assert first[0] != second[0] and first[1] != second[1]
    assert len(first[0].rsplit("/", 1)[1]) == 32 and len(first[1]) == 32


def test_a_pinned_secret_reproduces_them() -> None:
    assert _first_upload("pinned") == _first_upload("pinned")
    assert _first_upload("pinned") != _first_upload("other")


def test_a_guessed_upload_url_is_not_found(api: httpx.Client) -> None:
    own, _ = _upload(api, b"mine", token=OTHER, workspace="ws_desert")
    # The stranger's own URL tells nothing of the next one: a neighbour guess is unknown.
    token = httpx.URL(own).path.rsplit("/", 1)[1]
    guess = token[:-1] + ("0" if token[-1] != "0" else "1")
    put = api.put(f"/__storage__/upload/{guess}", content=b"first!")
    assert put.status_code == 404 and put.json()["error"]


def _ticket(api: httpx.Client) -> dict[str, Any]:
    listed = api.get("/v1/tickets", params={"workspace_id": WS}, headers=auth())
    return dict(listed.json()["data"][0])


def test_a_file_needs_its_signed_url_or_a_token_of_its_workspace(api: httpx.Client) -> None:
    _, storage_id = _upload(api, b"owner's secret")
    path = f"/__storage__/files/{storage_id}"
    assert api.get(path).status_code == 401
    foreign = api.get(path, headers=auth(OTHER))
    assert foreign.status_code == 404 and "not found" in foreign.json()["error"]
    assert api.get(path, headers=auth("not-a-token")).status_code == 401
    owner = api.get(path, headers=auth())
    assert owner.status_code == 200 and owner.content == b"owner's secret"
    assert api.get(path, params={"signature": "0" * 40}).status_code == 403


def test_the_url_the_api_hands_out_is_a_capability(api: httpx.Client) -> None:
    _, storage_id = _upload(api, b"attached")
    ticket = _ticket(api)
    sent = api.post(f"/v1/tickets/{ticket['id']}/messages", headers=auth(),
                    json={"body": "see attached", "attachments": [
                        {"attachment_id": storage_id, "filename": "a.txt",
                         "content_type": "text/plain", "size": 8}]})
    assert sent.status_code == 200, sent.text
    messages = api.get(f"/v1/tickets/{ticket['id']}/messages", headers=auth()).json()["data"]
    url = httpx.URL(messages[-1]["attachments"][0]["url"])
    assert url.params["signature"]
    fetched = api.get(url.raw_path.decode())  # no credential: the URL is the capability
    assert fetched.status_code == 200 and fetched.content == b"attached"
    # The signature is the file's: on another id it opens nothing.
    _, other_id = _upload(api, b"another")
    moved = api.get(f"/__storage__/files/{other_id}",
                    params={"signature": url.params["signature"]})
    assert moved.status_code == 403


def test_a_foreign_token_cannot_attach_the_owners_file(api: httpx.Client) -> None:
    _, storage_id = _upload(api, b"owner's")
    listed = api.get("/v1/tickets", params={"workspace_id": "ws_desert"}, headers=auth(OTHER))
    (ticket, *_) = listed.json()["data"]
    sent = api.post(f"/v1/tickets/{ticket['id']}/messages", headers=auth(OTHER),
                    json={"body": "x", "attachments": [
                        {"attachment_id": storage_id, "filename": "a.txt",
                         "content_type": "text/plain", "size": 7}]})
    assert sent.status_code == 400 and "attachment_id" in sent.json()["error"]
