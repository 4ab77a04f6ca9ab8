"""A JSON body sent with `Content-Encoding: gzip` is the whole body: every member of a gzip
stream (RFC 1952 2.2) and a list of codings undone last first (DECISIONS H30)."""

from __future__ import annotations

import gzip

import orjson
from starlette.testclient import TestClient

WS = "ws_harborview"
NODE = {"title": "zipped", "body": "hello " * 50, "metadata": {"k": "v"}}


def _post(client: TestClient, content: bytes, encoding: str) -> dict[str, object]:
    answer = client.post(f"/v1/kb/nodes?workspace_id={WS}", content=content,
                         headers={"Content-Type": "application/json",
                                  "Content-Encoding": encoding})
    assert answer.status_code == 201, answer.text
    node: dict[str, object] = answer.json()["data"]
    got = client.get(f"/v1/kb/nodes/{node['id']}").json()["data"]
    assert got == node
    return node


def test_a_gzip_body_is_stored_whole(client: TestClient) -> None:
    node = _post(client, gzip.compress(orjson.dumps(NODE)), "gzip")
    assert (node["title"], node["body"], node["metadata"]) == (NODE["title"], NODE["body"],
                                                               NODE["metadata"])


def test_every_member_of_a_gzip_stream_is_read(client: TestClient) -> None:
    raw = orjson.dumps(NODE)
    # A streaming compressor that flushes a member per write: an empty first member, then
    # the body in two.
    members = gzip.compress(b"") + gzip.compress(raw[:20]) + gzip.compress(raw[20:])
    node = _post(client, members, "gzip")
    assert node["body"] == NODE["body"] and node["metadata"] == NODE["metadata"]


def test_a_list_of_codings_is_undone_last_first(client: TestClient) -> None:
    node = _post(client, gzip.compress(orjson.dumps(NODE)), "identity, gzip")
    assert node["body"] == NODE["body"]


def test_a_gzip_bomb_in_members_is_still_413(client: TestClient) -> None:
    member = gzip.compress(b" " * (600 * 1024))
    answer = client.post(f"/v1/kb/nodes?workspace_id={WS}", content=member * 3,
                         headers={"Content-Type": "application/json",
                                  "Content-Encoding": "gzip"})
    assert answer.status_code == 413 and "decoded" in answer.json()["error"]
