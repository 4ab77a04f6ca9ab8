"""Every limit enforced before the bytes are held, on every route of a served mock: the
request head (uvicorn's parser, protocol.py), bodies declared or streamed (API, control API,
storage), and the depth check in time and memory linear in the body."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import httpx
import orjson
import pytest

from .conftest import WRITE, WS, Served, error_of, raw

ROUTES = ["/v1/conversations?workspace_id=ws_harborview", "/__mock__/requests", "/docs",
          "/openapi.json", "/__storage__/files/st_nope"]
MIB = 1024 * 1024


def _huge_header(path: str, mib: int) -> Iterator[bytes]:
    yield (f"GET {path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {WRITE}\r\n"
           "X-Big: ").encode()
    block = b"a" * MIB
    for _ in range(mib):
        yield block


@pytest.mark.parametrize("path", ROUTES)
def test_an_oversized_header_is_refused_431_on_every_route(served: Served, path: str) -> None:
    started = time.monotonic()
    status, headers, body = raw(served.port, _huge_header(path, 100))
    assert "larger than 16384 bytes" in error_of(status, headers, body, 431)
    assert time.monotonic() - started < 5


@pytest.mark.parametrize("path", ROUTES)
def test_too_many_headers_are_refused_431(served: Served, path: str) -> None:
    lines = "".join(f"X-H{i}: v\r\n" for i in range(150))
    status, headers, body = raw(served.port, f"GET {path} HTTP/1.1\r\nHost: x\r\n{lines}\r\n"
                                .encode())
    assert "more than 100 request headers" in error_of(status, headers, body, 431)


def test_four_connections_of_100_mb_headers_hold_no_memory(served: Served) -> None:
    before = served.rss_kib()
    answers: list[int] = []

    def attack() -> None:
        answers.append(raw(served.port, _huge_header("/v1/conversations", 100))[0])

    threads = [threading.Thread(target=attack) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert answers == [431] * 4
    assert served.rss_kib() - before < 32 * 1024  # KiB: well under one header's 100 MB


@pytest.mark.parametrize("size", [70 * 1024, 10 * MIB])
def test_a_long_query_string_is_refused_414(served: Served, size: int) -> None:
    def request() -> Iterator[bytes]:
        yield b"GET /v1/conversations?workspace_id=ws_harborview&q="
        for _ in range(size // 65536):
            yield b"a" * 65536
        yield b" HTTP/1.1\r\nHost: x\r\n\r\n"

    status, headers, body = raw(served.port, request())
    assert "longer than 16384 bytes" in error_of(status, headers, body, 414)


@pytest.mark.parametrize("request_line", [
    b"GET /v1/\xff HTTP/1.1\r\nHost: x\r\n\r\n",
    b"G\xffT / HTTP/1.1\r\nHost: x\r\n\r\n",
    b"GET / HTTP/1.1\r\nBad Header\r\n\r\n",
    b"GET / HTTP/9.9\r\nHost: x\r\n\r\n",
])
def test_what_the_parser_refuses_is_answered_json(served: Served, request_line: bytes) -> None:
    status, headers, body = raw(served.port, request_line)
    assert "invalid HTTP request" in error_of(status, headers, body, 400)


@pytest.mark.parametrize("path", ["/__mock__/faults", "/__mock__/clock", "/__mock__/reset"])
def test_a_declared_50_mb_control_body_is_refused_at_once(served: Served, path: str) -> None:
    head = (f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            f"Content-Length: {50 * MIB}\r\n\r\n").encode()
    status, headers, body = raw(served.port, [head, *[b" " * MIB] * 50])
    assert "larger than 1048576 bytes" in error_of(status, headers, body, 413)


def test_a_streamed_control_body_past_the_limit_is_refused(api: httpx.Client) -> None:
    def chunks() -> Iterator[bytes]:
        yield b'{"status": 503, "error": "'
        for _ in range(3):
            yield b"x" * MIB
        yield b'"}'

    response = api.post("/__mock__/faults", content=chunks(),
                        headers={"Content-Type": "application/json"})
    assert response.status_code == 413, response.text
    assert api.get("/__mock__/faults").json()["data"] == []


def test_an_upload_declaring_100_mib_is_refused_before_its_body(served: Served,
                                                                api: httpx.Client) -> None:
    created = api.post("/v1/attachments/upload-url", json={"workspace_id": WS},
                       headers={"Authorization": f"Bearer {WRITE}"})
    url = httpx.URL(created.json()["data"]["upload_url"])
    head = (f"PUT {url.raw_path.decode()} HTTP/1.1\r\nHost: x\r\n"
            f"Content-Length: {100 * MIB}\r\n\r\n").encode()
    started = time.monotonic()
    status, headers, body = raw(served.port, head)  # no byte of the body sent
    assert "larger than" in error_of(status, headers, body, 413)
    assert time.monotonic() - started < 2


def _deep_body() -> bytes:
    """~1 MiB: 50 levels of 2 KB keys over 10,000 leaves (what the path strings blew up)."""
    value: dict[str, object] = {f"l{i}": i for i in range(10_000)}
    for level in range(50):
        value = {f"{level:02d}" + "k" * 1998: value}
    return orjson.dumps({"workspace_id": WS, "name": value})


def test_a_deep_wide_body_costs_time_and_memory_linear_in_it(served: Served,
                                                             api: httpx.Client) -> None:
    body = _deep_body()
    assert 100_000 < len(body) < MIB
    before = served.rss_kib()
    started = time.monotonic()
    response = api.post("/v1/attachments/upload-url", content=body,
                        headers={"Authorization": f"Bearer {WRITE}",
                                 "Content-Type": "application/json"})
    elapsed = time.monotonic() - started
    assert response.status_code == 400, response.text
    assert elapsed < 2
    assert served.rss_kib() - before < 64 * 1024
