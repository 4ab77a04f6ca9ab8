"""Every input validated before state moves, on a served mock: a refusal is a 4xx
`{"error"}` naming what is wrong, and the state (clock, faults, dataset) is as it was."""

from __future__ import annotations

import gzip
import zlib
from pathlib import Path

import httpx
import pytest

from .conftest import WS, Served, auth

UPLOAD_URL = "/v1/attachments/upload-url"


def _error(response: httpx.Response, status: int, *needles: str) -> str:
    assert response.status_code == status, (response.status_code, response.text[:300])
    assert response.headers["content-type"].startswith("application/json")
    message = response.json()["error"]
    for needle in needles:
        assert needle in message, message
    return str(message)


@pytest.mark.parametrize("code", ["²", "³", "¹", "٤٠٤", "4O4", "1" * 5000])
def test_prefer_code_takes_ascii_digits_only(api: httpx.Client, code: str) -> None:
    value = f"code={code}"
    # As a client sends it: Latin-1 where it can (a server reads header bytes as Latin-1).
    raw = value.encode("latin-1") if max(map(ord, value)) < 256 else value.encode()
    headers = [(k.encode(), v.encode()) for k, v in auth().items()] + [(b"Prefer", raw)]
    response = api.get("/v1/conversations", params={"workspace_id": WS}, headers=headers)
    _error(response, 400, "header 'Prefer'")


def test_prefer_code_still_answers_a_documented_status(api: httpx.Client) -> None:
    response = api.get("/v1/conversations", params={"workspace_id": WS},
                       headers={**auth(), "Prefer": "code=401"})
    assert response.status_code == 401


@pytest.mark.parametrize("body, field", [
    ({"advance_seconds": 1e15}, "advance_seconds"),
    ({"advance_seconds": 1e300}, "advance_seconds"),
    ({"now": "9999-12-31T23:59:59.999Z"}, "now"),
    ({"now": "9999-12-31T00:00:00.000Z"}, "now"),
])
def test_clock_out_of_range_is_refused_and_unmoved(api: httpx.Client, body: dict[str, object],
                                                   field: str) -> None:
    api.post("/__mock__/clock", json={"now": "2026-01-01T00:00:00.000Z"})
    before = api.get("/__mock__/clock").json()
    _error(api.post("/__mock__/clock", json=body), 400, f"body field '{field}'", "range")
    after = api.get("/__mock__/clock").json()
    # A real clock moves on by itself; it must not have jumped.
    assert after["now"][:4] == before["now"][:4] == "2026"
    created = api.post(UPLOAD_URL, json={"workspace_id": WS}, headers=auth())
    assert created.status_code == 201, created.text


@pytest.mark.parametrize("now", ["0001-01-01T00:00:00.000Z", "0999-06-30T12:00:00.000Z",
                                 "9999-12-30T23:59:59.999Z"])
def test_writes_answer_at_the_edges_of_the_clock(api: httpx.Client, now: str) -> None:
    assert api.post("/__mock__/clock", json={"now": now}).status_code == 200
    assert api.get("/__mock__/clock").json()["now"][:4] == now[:4]
    for _ in range(3):
        created = api.post(UPLOAD_URL, json={"workspace_id": WS}, headers=auth())
        assert created.status_code == 201, created.text
    session = api.post("/__mock__/sessions", json={"clock": "9999-12-31T00:00:00Z"})
    _error(session, 400, "body field 'clock'", "range")


@pytest.mark.parametrize("headers, needle", [
    ({"X-Evil": "a\r\nSet-Cookie: x=1"}, "headers/X-Evil"),
    ({"X-Evil": "trailing\n"}, "X-Evil"),
    ({"X-Evil": "snow \u2603"}, "headers/X-Evil"),
    ({"Bad Name": "x"}, "headers"),
    ({"X-Nul": "a\x00b"}, "X-Nul"),
    ({"Content-Length": "5"}, "Content-Length"),
])
def test_fault_headers_follow_rfc_9110(api: httpx.Client, headers: dict[str, str],
                                       needle: str) -> None:
    response = api.post("/__mock__/faults", json={"status": 503, "headers": headers})
    _error(response, 400, needle)
    assert api.get("/__mock__/faults").json()["data"] == []
    assert api.get("/v1/conversations", params={"workspace_id": WS},
                   headers=auth()).status_code == 200


def test_a_valid_fault_header_is_sent(api: httpx.Client) -> None:
    added = api.post("/__mock__/faults", json={"status": 503, "path": "/v1/conversations",
                                               "headers": {"X-Trace": "caf\u00e9 \tok"}})
    assert added.status_code == 201, added.text
    response = api.get("/v1/conversations", params={"workspace_id": WS}, headers=auth())
    assert response.status_code == 503
    assert response.headers["x-trace"].encode("latin-1") == "caf\u00e9 \tok".encode("latin-1")


def test_empty_fixtures_directory_is_refused(api: httpx.Client, tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    _error(api.post("/__mock__/fixtures", json={"path": str(empty)}), 400, str(empty))
    assert api.get("/v1/conversations", params={"workspace_id": WS},
                   headers=auth()).status_code == 200


def test_serve_refuses_an_empty_fixtures_directory(tmp_path: Path) -> None:
    import subprocess
    import sys
    empty = tmp_path / "empty"
    empty.mkdir()
    done = subprocess.run([sys.executable, "-m", "mockserver", "serve", "--port", "1",
                           "--fixtures", str(empty)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and str(empty) in done.stderr, done.stderr


@pytest.mark.parametrize("encoding", ["br", "zstd", "compress", "gzip, br"])
def test_unsupported_content_encoding_is_refused_with_415(api: httpx.Client,
                                                          encoding: str) -> None:
    response = api.post(UPLOAD_URL, content=b'{"workspace_id": "ws_harborview"}',
                        headers={**auth(), "Content-Type": "application/json",
                                 "Content-Encoding": encoding})
    _error(response, 415, "header 'Content-Encoding'", encoding)
    assert api.get("/__mock__/requests", params={"method": "POST"}).json()["data"][-1][
        "status"] == 415


@pytest.mark.parametrize("encode, name", [(gzip.compress, "gzip"), (zlib.compress, "deflate")])
def test_gzip_and_deflate_bodies_are_decoded(api: httpx.Client, encode: object,
                                             name: str) -> None:
    body = encode(b'{"workspace_id": "ws_harborview"}')  # type: ignore[operator]
    response = api.post(UPLOAD_URL, content=body,
                        headers={**auth(), "Content-Type": "application/json",
                                 "Content-Encoding": name})
    assert response.status_code == 201, response.text


def test_a_gzip_bomb_is_refused_without_being_held(api: httpx.Client) -> None:
    bomb = gzip.compress(b"[" + b"0," * 20_000_000 + b"0]")  # ~40 MB decoded, ~40 KB sent
    response = api.post(UPLOAD_URL, content=bomb,
                        headers={**auth(), "Content-Type": "application/json",
                                 "Content-Encoding": "gzip"})
    _error(response, 413, "decoded")


def test_control_characters_are_escaped_in_the_text_log(served: Served,
                                                        api: httpx.Client) -> None:
    api.get("/v1/tickets/x%0a2026-01-01 00:00:00,000 INFO GET /forged 200", headers=auth())
    text = served.log.read_text()
    assert "/forged" in text
    assert not any(line.startswith("2026-01-01 00:00:00,000 INFO GET /forged")
                   for line in text.splitlines())
    assert "x\\n2026-01-01" in text
