"""A catalogue of hostile input: each one answered with a clear 4xx and an `{"error": ...}`
body naming the parameter or field, the server healthy afterwards and no state changed.

Raw requests that a well-behaved HTTP client refuses to send (bytes that are not UTF-8 in a
query string, `..` segments, control characters) go straight to the ASGI application; header
limits only exist in a real server, so those go to uvicorn in a thread on loopback.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import httpx
import orjson
import pytest
from conform.serve import serve
from conftest import OTHER, WRITE, auth
from starlette.testclient import TestClient

from mockserver.data.tables import TABLES
from mockserver.engine.app import MockApp
from mockserver.standalone.server import create_app

WS = "ws_harborview"
ACCEPTABLE = {400, 401, 403, 404, 405, 413, 431}
JSON = {"content-type": "application/json"}
GOOD_TOOL = {"workspace_id": WS, "name": "hostile-probe", "description": "Probe",
             "language": "python", "code": "def main(**params):\n    return {'message': 'ok'}\n"}


# -- helpers ----------------------------------------------------------------------------------


def snapshot(mock: MockApp) -> dict[str, dict[str, Any]]:
    """Every table's records (records are immutable: a write replaces the dict)."""
    with mock.store.lock:
        return {name: dict(mock.store.rows(name)) for name in TABLES}


def assert_error(status: int, body: bytes, *needles: str,
                 allowed: frozenset[int] | set[int] = frozenset(ACCEPTABLE)) -> str:
    assert status in allowed, (status, body[:500])
    parsed = orjson.loads(body)
    assert isinstance(parsed, dict) and list(parsed) == ["error"], body[:500]
    message = parsed["error"]
    assert isinstance(message, str) and message, body[:500]
    for needle in needles:
        assert needle in message, message
    return message


def check(response: httpx.Response, *needles: str,
          allowed: frozenset[int] | set[int] = frozenset(ACCEPTABLE)) -> str:
    return assert_error(response.status_code, response.content, *needles, allowed=allowed)


def assert_healthy(client: TestClient) -> None:
    response = client.get("/v1")
    assert response.status_code == 200, response.text


@pytest.fixture
def guarded(mock: MockApp, client: TestClient) -> Iterator[TestClient]:
    """The client; afterwards the server still answers and no table changed."""
    before = snapshot(mock)
    yield client
    assert_healthy(client)
    assert snapshot(mock) == before


def raw_asgi(mock: MockApp, method: str, path: str, query: bytes = b"", body: bytes = b"",
             headers: list[tuple[bytes, bytes]] | None = None) -> tuple[int, bytes]:
    """One request straight into the ASGI app, scope built by hand (bytes as they are)."""
    app = create_app(mock=mock)
    hdrs = [(b"authorization", f"Bearer {WRITE}".encode()), (b"host", b"testserver")]
    hdrs += headers or []
    if body:
        hdrs.append((b"content-length", str(len(body)).encode()))
    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1",
             "method": method, "scheme": "http", "path": path,
             "raw_path": path.encode("utf-8", "surrogateescape"), "query_string": query,
             "root_path": "", "headers": hdrs, "client": ("127.0.0.1", 1),
             "server": ("testserver", 80)}
    sent: list[dict[str, Any]] = []
    messages = [{"type": "http.request", "body": body, "more_body": False}]

    async def receive() -> dict[str, Any]:
        return messages.pop(0) if messages else {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    asyncio.run(app(scope, receive, send))
    status = sent[0]["status"]
    return status, b"".join(m.get("body", b"") for m in sent[1:])


def a_record(mock: MockApp, table: str) -> dict[str, Any]:
    field = TABLES[table].workspace_field or "workspace_id"
    return dict(next(r for r in mock.store.all(table) if r.get(field) == WS))


# -- malformed and truncated JSON -------------------------------------------------------------


@pytest.mark.parametrize("raw", [
    b"{", b'{"workspace_id": "ws_harborview"', b'{"workspace_id": "ws_harb', b'{"a": 1,}',
    b"{'workspace_id': 'ws_harborview'}", b'{"a" 1}', b"nul", b"tru", b'{"a": NaN}',
    b'{"a": Infinity}', b"\x00", b'{"a": 1}}', b'{"a": 1} {"b": 2}', b'{"a": "\\x41"}',
    b'{"a": 01}', b"\xef\xbb\xbf{}",
], ids=lambda raw: repr(raw)[:40])
def test_malformed_or_truncated_json_is_400(guarded: TestClient, raw: bytes) -> None:
    check(guarded.post("/v1/custom-tools", content=raw, headers=JSON), "JSON", allowed={400})


@pytest.mark.parametrize("url", [
    f"/v1/kb/nodes?workspace_id={WS}", f"/v1/kb/search?workspace_id={WS}", "/v1/skills",
    "/v1/attachments/upload-url",
])
def test_truncated_json_is_400_on_other_operations(guarded: TestClient, url: str) -> None:
    check(guarded.post(url, content=b'{"title": "half', headers=JSON), "JSON", allowed={400})


# -- Content-Type -----------------------------------------------------------------------------


@pytest.mark.parametrize("content_type", [
    None, "text/plain", "application/xml", "multipart/form-data; boundary=x", "application/jsonx",
    "json", "application/json-patch+json", "*/*", "",
])
def test_wrong_or_missing_content_type_is_400(guarded: TestClient,
                                              content_type: str | None) -> None:
    headers = {} if content_type is None else {"content-type": content_type}
    response = guarded.post("/v1/custom-tools", content=orjson.dumps(GOOD_TOOL), headers=headers)
    check(response, "Content-Type", allowed={400})


def test_content_type_with_parameters_and_capitals_is_accepted(client: TestClient) -> None:
    # The control: the media type is what counts, so the refusals above are about the type.
    response = client.post("/v1/custom-tools", content=orjson.dumps(GOOD_TOOL),
                           headers={"content-type": "Application/JSON; charset=utf-8"})
    assert response.status_code == 201, response.text


# -- size -------------------------------------------------------------------------------------


def test_body_streamed_without_length_over_the_limit_is_413(mock: MockApp) -> None:
    # Chunked, no Content-Length: the limit is enforced while reading. Through the real server
    # (the test client's transport does not stream a generator body).
    def chunks() -> Iterator[bytes]:
        yield b'{"workspace_id": "'
        for _ in range(20):
            yield b"x" * 65536
        yield b'"}'

    before = snapshot(mock)
    with serve(create_app(mock=mock)) as base, \
            httpx.Client(base_url=base, headers=auth(), timeout=10) as http:
        check(http.post("/v1/skills", content=chunks(), headers=JSON), "larger", allowed={413})
        assert http.get("/v1").status_code == 200
    assert snapshot(mock) == before


def test_body_one_byte_over_the_limit_is_413(guarded: TestClient, mock: MockApp) -> None:
    limit = mock.config.max_body_bytes
    head = b'{"workspace_id": "ws_harborview", "name": "'
    body = head + b"x" * (limit + 1 - len(head) - 2) + b'"}'
    assert len(body) == limit + 1
    check(guarded.post("/v1/skills", content=body, headers=JSON), str(limit), allowed={413})


def test_declared_length_that_is_not_a_number_is_400(guarded: TestClient, mock: MockApp) -> None:
    status, body = raw_asgi(mock, "POST", "/v1/skills", body=b"{}",
                            headers=[(b"content-type", b"application/json"),
                                     (b"content-length", b"12abc")])
    # The scope carries two Content-Length headers; the first (ours, numeric) or the second
    # may be read: either a 400 for the header or for the body, never a crash.
    assert_error(status, body, allowed={400})


# -- deep nesting -----------------------------------------------------------------------------


@pytest.mark.parametrize(("opening", "closing"), [(b"[", b"]"), (b'{"a":', b"}")])
def test_json_nested_100k_levels_is_400(guarded: TestClient, opening: bytes,
                                        closing: bytes) -> None:
    depth = 100_000
    raw = b'{"workspace_id": ' + opening * depth + b"1" + closing * depth + b"}"
    assert len(raw) < 1_048_576
    check(guarded.post("/v1/custom-tools", content=raw, headers=JSON), "JSON", allowed={400})


@pytest.mark.parametrize("depth", [300, 1000])
@pytest.mark.parametrize(("url", "head"), ids=["tool-parameters", "node-metadata",
                                               "search-entity_ids"], argvalues=[
    ("/v1/custom-tools", b'{"workspace_id": "ws_harborview", "name": "deep", "description": "d", '
                         b'"language": "python", "code": "def main(): return 1", "parameters": '),
    (f"/v1/kb/nodes?workspace_id={WS}", b'{"title": "deep", "metadata": '),
    (f"/v1/kb/search?workspace_id={WS}", b'{"query": "x", "entity_ids": '),
])
def test_json_nested_deeper_than_the_validator_but_parseable_is_400(
        mock: MockApp, url: str, head: bytes, depth: int) -> None:
    # orjson parses up to 1024 levels; whatever the schema validator cannot walk must still be
    # a 400, never a crash. (A client that does not re-raise: the status is what is checked.)
    before = snapshot(mock)
    nested = (b'{"a":' * depth + b"1" + b"}" * depth) if b"entity_ids" not in head \
        else (b"[" * depth + b"]" * depth)
    with TestClient(create_app(mock=mock), headers=auth(),
                    raise_server_exceptions=False) as lenient:
        response = lenient.post(url, content=head + nested + b"}", headers=JSON)
        check(response, allowed={400})
        assert lenient.get("/v1").status_code == 200
    assert snapshot(mock) == before


@pytest.mark.parametrize("depth", [250, 252, 253])
def test_deep_but_accepted_metadata_never_breaks_later_reads(mock: MockApp, depth: int) -> None:
    # Whatever the create answers (201 or a 4xx), the workspace's knowledge base must still
    # list and search afterwards, and a refused create must store nothing.
    count = mock.store.count("kb_nodes")
    raw = b'{"title": "deep", "metadata": ' + b'{"a":' * depth + b"1" + b"}" * depth + b"}"
    with TestClient(create_app(mock=mock), headers=auth(),
                    raise_server_exceptions=False) as lenient:
        created = lenient.post(f"/v1/kb/nodes?workspace_id={WS}", content=raw, headers=JSON)
        assert created.status_code in (201, 400, 413), (created.status_code, created.text[:200])
        if created.status_code != 201:
            check(created)
            assert mock.store.count("kb_nodes") == count, "a refused create stored a node"
        listing = lenient.get(f"/v1/kb/nodes?workspace_id={WS}&limit=100")
        assert listing.status_code == 200, (listing.status_code, listing.text[:200])
        search = lenient.post(f"/v1/kb/nodes/search?workspace_id={WS}", json={})
        assert search.status_code == 200, (search.status_code, search.text[:200])


# -- invalid UTF-8 ----------------------------------------------------------------------------


@pytest.mark.parametrize("raw", [
    b'{"workspace_id": "\xff\xfe"}', b'{"workspace_id": "ws_harborview\xc0\xaf"}',
    b'{"\xff": 1}', b'{"title": "\xed\xa0\x80"}', b'{"title": "\\ud800"}',
    b'{"title": "\\udfff\\ud800"}',
], ids=lambda raw: repr(raw)[:40])
def test_invalid_utf8_in_a_body_is_400(guarded: TestClient, raw: bytes) -> None:
    check(guarded.post(f"/v1/kb/nodes?workspace_id={WS}", content=raw, headers=JSON),
          allowed={400})


@pytest.mark.parametrize("query", [
    b"workspace_id=ws_harborview&status=%ff", b"workspace_id=ws_harborview&status=\xff\xfe",
    b"workspace_id=ws_harborview%c0%af", b"workspace_id=ws_harborview\xc0\xaf",
    b"workspace_id=ws_harborview&limit=%ff",
    b"workspace_id=ws_harborview&cursor=%ed%a0%80",
], ids=lambda q: repr(q)[15:60])
def test_invalid_utf8_in_a_query_value_is_4xx(mock: MockApp, query: bytes) -> None:
    before = snapshot(mock)
    status, body = raw_asgi(mock, "GET", "/v1/tickets", query)
    assert_error(status, body, allowed={400, 403})
    assert raw_asgi(mock, "GET", "/v1")[0] == 200
    assert snapshot(mock) == before


# -- numbers ----------------------------------------------------------------------------------


@pytest.mark.parametrize("value", [
    "1.5", "10.0", "1e2", "1E2", "0x10", "+5", " 5", "5 ", "", "NaN", "Infinity", "-Infinity",
    "-0", "-9223372036854775809", "9" * 400, "1_0", "\u0665", "true", "null", "[5]",
])
def test_bad_limit_is_400_naming_limit(guarded: TestClient, value: str) -> None:
    response = guarded.get("/v1/tickets", params={"workspace_id": WS, "limit": value})
    check(response, "limit", allowed={400})


@pytest.mark.parametrize("value", [
    b"-1", b"0", b"1.5", b"1e30", b"100000000000000000000000000000000", b'"5"', b"true",
    b"null", b"[5]", b"{}", b"-9223372036854775809", b"18446744073709551616", b"1e400",
])
def test_bad_integer_body_field_is_400_naming_it(guarded: TestClient, value: bytes) -> None:
    raw = b'{"query": "check-in", "max_results": ' + value + b"}"
    response = guarded.post(f"/v1/kb/search?workspace_id={WS}", content=raw, headers=JSON)
    if value == b"1e400":
        check(response, allowed={400})  # not JSON for orjson (infinite): named as JSON
    else:
        check(response, "max_results", allowed={400})


@pytest.mark.parametrize("value", [b"-1", b"0", b"2.5", b"1e30", b"99999999999999999999999",
                                   b'"2"', b"false"])
def test_bad_nested_integer_body_field_is_400_naming_it(guarded: TestClient,
                                                        value: bytes) -> None:
    raw = b'{"pagination": {"page_size": ' + value + b"}}"
    response = guarded.post(f"/v1/kb/nodes/search?workspace_id={WS}", content=raw, headers=JSON)
    check(response, "page_size", allowed={400})


# -- query parameters -------------------------------------------------------------------------


@pytest.mark.parametrize("query", [
    f"workspace_id={WS}&workspace_id=ws_desert", f"workspace_id=ws_desert&workspace_id={WS}",
    f"workspace_id={WS}&workspace_id={WS}", f"workspace_id={WS}&status=new&status=pending",
    f"workspace_id={WS}&order=asc&order=desc",
])
def test_repeated_query_parameter_is_400(guarded: TestClient, query: str) -> None:
    name = query.split("&")[-1].split("=")[0]
    check(guarded.get(f"/v1/tickets?{query}"), name, "more than once", allowed={400})


UNKNOWN_NAMES = [
    (f"workspace_id={WS}&Workspace_id={WS}", "Workspace_id"),
    (f"workspace_id={WS}&workspace_id[]=ws_desert", "workspace_id[]"),
    (f"workspace_id={WS}&__proto__=1", "__proto__"),
    (f"workspace_id={WS}&%00=1", "\x00"),
    (f"workspace_id={WS}&limit%00=5", "limit"),
    (f"workspace_id={WS}&=x", "''"),
    (f"workspace_id={WS}&" + "p" * 5000 + "=1", "p" * 100),
]


@pytest.fixture
def strict(mock: MockApp, second_worker: MockApp | None) -> Iterator[MockApp]:
    # second_worker: the other worker of the shared-state run (a setting of each worker).
    workers = [w for w in (mock, second_worker) if w is not None]
    for worker in workers:
        worker.config.strict_params = True
    try:
        yield mock
    finally:
        for worker in workers:
            worker.config.strict_params = False


@pytest.mark.parametrize(("query", "name"), UNKNOWN_NAMES)
def test_unknown_query_parameter_is_ignored(guarded: TestClient, query: str, name: str) -> None:
    # Default mode (B10): the answer is the one without it; nothing leaks from the odd name.
    response = guarded.get(f"/v1/tickets?{query}")
    assert response.status_code == 200, response.text
    assert response.json() == guarded.get(f"/v1/tickets?workspace_id={WS}").json()


@pytest.mark.parametrize(("query", "name"), UNKNOWN_NAMES)
def test_unknown_query_parameter_is_400_naming_it_in_strict_mode(
    guarded: TestClient, strict: MockApp, query: str, name: str,
) -> None:
    message = check(guarded.get(f"/v1/tickets?{query}"), "unknown", allowed={400})
    assert name in message or repr(name) in message, message


def test_invalid_utf8_in_an_unknown_name(mock: MockApp) -> None:
    status, body = raw_asgi(mock, "GET", "/v1/tickets", b"workspace_id=ws_harborview&\xff=1")
    assert status == 200, body
    mock.config.strict_params = True
    try:
        status, body = raw_asgi(mock, "GET", "/v1/tickets", b"workspace_id=ws_harborview&\xff=1")
    finally:
        mock.config.strict_params = False
    assert_error(status, body, "unknown", allowed={400})


def test_unknown_query_parameter_on_a_write_changes_nothing_in_strict_mode(
    guarded: TestClient, strict: MockApp,
) -> None:
    response = guarded.post("/v1/custom-tools?dry_run=true", json=GOOD_TOOL)
    check(response, "dry_run", allowed={400})


def test_unknown_query_parameter_on_a_write_is_ignored(client: TestClient, mock: MockApp) -> None:
    # The real service ignores it: a `dry_run` it does not know is a real write.
    response = client.post("/v1/custom-tools?dry_run=true", json=GOOD_TOOL)
    assert response.status_code == 201, response.text
    assert mock.journal.entries()[-1].ignored_params == ("dry_run",)


# -- path ids ---------------------------------------------------------------------------------


@pytest.mark.parametrize("path", [
    "/v1/tickets/..", "/v1/tickets/../workspaces", "/v1/tickets/../../v1/workspaces",
    "/v1/skills/./", "/v1/tickets/%2e%2e", "/v1/tickets/%2e%2e/%2e%2e/v1/workspaces",
    "/v1/tickets/..%2f..%2fworkspaces", "/v1/tickets/..%2F..%2Fv1%2Fworkspaces",
    "/v1/skills/%2e%2e%2fworkspaces", "/v1/tickets/%252e%252e", "/v1/tickets/..\\..\\workspaces",
    "/v1/kb/nodes/..%2f..%2fworkspaces", "/v1/custom-tools/%2e%2e%2f%2e%2e%2fv1",
])
def test_path_traversal_in_an_id_is_4xx(mock: MockApp, client: TestClient, path: str) -> None:
    before = snapshot(mock)
    for method in ("GET", "PATCH", "DELETE"):
        # Through the test client (which resolves dot segments itself) and raw (which does not).
        if "%" in path:  # the test client resolves literal dot segments itself
            check(client.request(method, path, json={"description": "x"}))
        status, body = raw_asgi(mock, method, path.replace("%2f", "/").replace("%2F", "/"),
                                body=b'{"description": "x"}',
                                headers=[(b"content-type", b"application/json")])
        assert_error(status, body)
    assert_healthy(client)
    assert snapshot(mock) == before


@pytest.mark.parametrize("suffix", ["%00", "%0a", "%0d%0aX-Injected:%201", "%09", "%7f", "%1b[31m",
                                    "%c0%80", "%ff"])
@pytest.mark.parametrize("prefix", ["/v1/tickets/", "/v1/skills/", "/v1/kb/nodes/",
                                    "/v1/workspaces/"])
def test_control_characters_in_a_path_id_are_4xx(mock: MockApp, guarded: TestClient,
                                                 prefix: str, suffix: str) -> None:
    table = {"/v1/tickets/": "tickets", "/v1/skills/": "skills", "/v1/kb/nodes/": "kb_nodes",
             "/v1/workspaces/": "workspaces"}[prefix]
    real = a_record(mock, table)["id"]
    tail = "/settings" if table == "workspaces" else ""
    for ident in (suffix, real + suffix, suffix + real):
        response = guarded.get(prefix + ident + tail)
        message = check(response)
        assert "\r\n" not in response.headers.get("content-type", "")
        assert "x-injected" not in response.headers, message


@pytest.mark.parametrize("path", [
    "/v1/tickets/{}", "/v1/skills/{}", "/v1/kb/nodes/{}", "/v1/workspaces/{}/settings",
    "/v1/tickets/{}/notes", "/v1/custom-tools/{}/run", "/v1/workflows/{}/executions/{}/events",
])
def test_overlong_path_id_is_4xx(guarded: TestClient, path: str) -> None:
    long_id = "a" * 10_000
    url = path.replace("{}", long_id)
    method = "POST" if url.endswith("/run") else "GET"
    response = guarded.request(method, url, json={} if method == "POST" else None)
    check(response)
    assert len(response.content) < 50_000  # an echo of the id is fine, an amplification is not


def test_overlong_hex_node_id_is_400_naming_node_id(guarded: TestClient) -> None:
    check(guarded.get("/v1/kb/nodes/" + "a" * 10_000), "node_id", allowed={400})
    check(guarded.delete("/v1/kb/nodes/" + "0" * 25), "node_id", allowed={400})


# -- bodies that are not objects --------------------------------------------------------------


def _body_targets(mock: MockApp) -> list[tuple[str, str, str]]:
    targets = []
    for op in mock.spec.operations:
        if op.body_schema is None:
            continue
        path = op.path
        if op.resource_table:
            record = a_record(mock, op.resource_table)
            key = TABLES[op.resource_table].key
            path = path.replace("{" + (op.resource_param or "id") + "}", str(record[key]))
        path = path.replace("{note_id}", "nt_missing")
        if any(p.name == "workspace_id" and p.location == "query" and p.required
               for p in op.parameters):
            path += f"?workspace_id={WS}"
        targets.append((op.operation_id, op.method, path))
    return targets


@pytest.mark.parametrize("raw", [b"[]", b'[{"workspace_id": "ws_harborview"}]', b'"text"',
                                 b"42", b"-1.5", b"null", b"true", b"[[[]]]"])
def test_json_body_that_is_not_an_object_is_400_everywhere(mock: MockApp, guarded: TestClient,
                                                           raw: bytes) -> None:
    for operation_id, method, path in _body_targets(mock):
        response = guarded.request(method, path, content=raw, headers=JSON)
        assert response.status_code == 400, (operation_id, raw, response.status_code,
                                             response.text)
        check(response, allowed={400})


# -- headers, through the real server ----------------------------------------------------------


def _raw_http(base: str, request: bytes) -> bytes:
    """Send raw bytes and half-close; the answer, or b"" when the server closed without one.

    The write side is shut after the request, so a server that waits for more input sees the
    end of it at once: "no answer" is a prompt close, never a socket timeout waited out. A
    server that neither answers nor closes within 5 s fails the test (socket.timeout).
    """
    parts = urlsplit(base)
    with socket.create_connection((parts.hostname, parts.port), timeout=5) as sock:
        try:
            sock.sendall(request)
            sock.shutdown(socket.SHUT_WR)
        except (BrokenPipeError, ConnectionResetError):
            return b""  # refused while still sending (the server closed on an oversized head)
        chunks = []
        try:
            while True:
                chunk = sock.recv(65536)
                if not chunk:
                    break
                chunks.append(chunk)
        except ConnectionResetError:
            pass
        return b"".join(chunks)


def _status_of(answer: bytes) -> int | None:
    if not answer.startswith(b"HTTP/1."):
        return None
    return int(answer.split(b" ", 2)[1])


@pytest.mark.parametrize(("name", "size"), [
    ("Authorization", 64 * 1024), ("Authorization", 1024 * 1024), ("X-Padding", 64 * 1024),
    ("Cookie", 256 * 1024),
])
def test_very_long_header_is_refused_and_the_server_survives(mock: MockApp, name: str,
                                                             size: int) -> None:
    with serve(create_app(mock=mock)) as base:
        value = ("Bearer " + "t" * size) if name == "Authorization" else "v" * size
        request = (f"GET /v1/tickets?workspace_id={WS} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                   f"{name}: {value}\r\n").encode()
        if name != "Authorization":
            request += f"Authorization: Bearer {WRITE}\r\n".encode()
        request += b"Connection: close\r\n\r\n"
        status = _status_of(_raw_http(base, request))
        assert status is None or 400 <= status < 500, status
        with httpx.Client(base_url=base, headers=auth(), timeout=10) as http:
            assert http.get("/v1").status_code == 200
            assert http.get(f"/v1/tickets?workspace_id={WS}&limit=1").status_code == 200


def test_many_headers_are_refused_or_ignored_and_the_server_survives(mock: MockApp) -> None:
    with serve(create_app(mock=mock)) as base:
        request = f"GET /v1 HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {WRITE}\r\n"
        request += "".join(f"X-H{i}: {i}\r\n" for i in range(5000))
        request += "Connection: close\r\n\r\n"
        status = _status_of(_raw_http(base, request.encode()))
        assert status is None or status == 200 or 400 <= status < 500, status
        with httpx.Client(base_url=base, headers=auth(), timeout=10) as http:
            assert http.get("/v1").status_code == 200


def test_long_authorization_header_is_401_without_echo(mock: MockApp) -> None:
    # Within the server's header limit the pipeline itself answers: 401, the token not echoed.
    with serve(create_app(mock=mock)) as base, httpx.Client(base_url=base, timeout=10) as http:
        token = "k" * 8000
        response = http.get("/v1", headers={"Authorization": f"Bearer {token}"})
        check(response, allowed={401})
        assert token[:100] not in response.text
        response = http.get("/v1", headers={"Authorization": f"Bearer {OTHER} {OTHER}"})
        check(response, "Malformed", allowed={401})
        assert http.get("/v1", headers=auth()).status_code == 200


def test_garbage_request_line_is_refused_and_the_server_survives(mock: MockApp) -> None:
    with serve(create_app(mock=mock)) as base:
        for request in (b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + b"\x00" * 64,
                        b"GET /v1/" + b"a" * 100_000 + b" HTTP/1.1\r\nHost: x\r\n\r\n",
                        b"GET /v1 HTTP/9.9\r\n\r\n", b"\r\n\r\n\r\n"):
            status = _status_of(_raw_http(base, request))
            assert status is None or 400 <= status < 500, (request[:20], status)
        with httpx.Client(base_url=base, headers=auth(), timeout=10) as http:
            assert http.get("/v1").status_code == 200
