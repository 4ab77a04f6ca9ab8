"""The request pipeline over HTTP: routing, authentication, authorisation, validation,
rate limits and self-check, each refusal with its documented status and `{error}` body."""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
import pytest
from conftest import COLLEAGUE, FROZEN_AT, OTHER, READ, WRITE, auth
from hypothesis import given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient

from mockserver.engine.app import Config, MockApp
from mockserver.engine.exchange import MAX_HEADER_BYTES, scan_headers
from mockserver.standalone.server import create_app

WS = "ws_harborview"


def assert_error(response, status: int, *needles: str) -> None:  # type: ignore[no-untyped-def]
    assert response.status_code == status, response.text
    body = response.json()
    assert list(body) == ["error"] and isinstance(body["error"], str) and body["error"]
    for needle in needles:
        assert needle in body["error"], body["error"]


def assert_healthy(client: TestClient) -> None:
    assert client.get("/v1").status_code == 200


def test_every_operation_is_routed(mock: MockApp) -> None:
    for op in mock.spec.operations:
        concrete = op.path.replace("{node_id}", "0" * 24)
        for name in ("id", "note_id", "rule_id", "execution_id"):
            concrete = concrete.replace("{" + name + "}", "x")
        found = mock.router.match(concrete)
        assert found is not None and op.method in found[0], op.operation_id


def test_literal_segments_win_over_templates(mock: MockApp) -> None:
    methods, params = mock.router.match("/v1/agents/tools") or ({}, {})
    assert methods["GET"].operation_id == "listToolCatalogue" and params == {}
    methods, params = mock.router.match("/v1/custom-tools/runtimes") or ({}, {})
    assert methods["GET"].operation_id == "listCustomToolRuntimes"


def test_unknown_path_and_other_method(client: TestClient) -> None:
    assert_error(client.get("/v1/nope"), 404, "/v1/nope")
    assert_error(client.get("/nothing/here"), 404)
    response = client.delete("/v1/tickets")
    assert_error(response, 405, "DELETE")
    assert response.headers["allow"] == "GET"
    assert_healthy(client)


@pytest.mark.parametrize(
    ("headers", "needle"),
    [
        ({}, "Missing"),
        ({"Authorization": "Basic abc"}, "Malformed"),
        ({"Authorization": "Bearer"}, "Malformed"),
        ({"Authorization": "Bearer a b"}, "Malformed"),
        ({"Authorization": "Bearer not-a-token"}, "Invalid"),
    ],
)
def test_missing_malformed_or_unknown_token_is_401(mock: MockApp, headers: dict[str, str],
                                                   needle: str) -> None:
    from mockserver.standalone.server import create_app

    with TestClient(create_app(mock=mock)) as anonymous:
        assert_error(anonymous.get(f"/v1/tickets?workspace_id={WS}", headers=headers), 401, needle)
        assert_error(anonymous.get("/v1", headers=headers), 401)


def test_workspace_without_access_is_403_and_never_leaks(client: TestClient) -> None:
    response = client.get("/v1/tickets?workspace_id=ws_desert")
    assert_error(response, 403, "ws_desert")
    assert_error(client.get("/v1/tickets?workspace_id=ws_unknown"), 403)
    # A record of another workspace addressed by id: its workspace is resolved and refused.
    other = client.get("/v1/tickets?workspace_id=ws_desert", headers=auth(OTHER)).json()["data"][0]
    response = client.get(f"/v1/tickets/{other['id']}")
    assert_error(response, 403)
    assert other["id"] not in response.text and other["subject"] not in response.text


def test_explicit_workspace_that_does_not_hold_the_resource_is_404(client: TestClient) -> None:
    ticket = client.get(f"/v1/tickets?workspace_id={WS}").json()["data"][0]
    assert client.get(f"/v1/tickets/{ticket['id']}?workspace_id={WS}").status_code == 200
    assert_error(client.get(f"/v1/tickets/{ticket['id']}?workspace_id=ws_alpine"), 404)
    assert_error(client.get(f"/v1/tickets/{ticket['id']}?workspace_id=ws_desert"), 403)


def test_read_only_token_is_refused_on_writes_and_nothing_changes(client: TestClient) -> None:
    skill = client.get(f"/v1/skills?workspace_id={WS}").json()["data"][0]
    response = client.patch(f"/v1/skills/{skill['id']}", json={"description": "changed"},
                            headers=auth(READ))
    assert_error(response, 403, "read-only")
    assert client.get(f"/v1/skills/{skill['id']}").json()["data"] == skill
    assert client.get(f"/v1/skills/{skill['id']}", headers=auth(READ)).status_code == 200


@pytest.mark.parametrize(
    ("url", "needles"),
    [
        (f"/v1/tickets?workspace_id={WS}&limit=0", ("limit", "minimum")),
        (f"/v1/tickets?workspace_id={WS}&limit=101", ("limit", "maximum")),
        (f"/v1/tickets?workspace_id={WS}&limit=abc", ("limit", "integer")),
        (f"/v1/tickets?workspace_id={WS}&limit=-5", ("limit",)),
        (f"/v1/tickets?workspace_id={WS}&limit=99999999999999999999999", ("limit",)),
        (f"/v1/tickets?workspace_id={WS}&status=sleeping", ("status",)),
        (f"/v1/tickets?workspace_id={WS}&order=sideways", ("order",)),
        ("/v1/tickets", ("workspace_id", "required")),
        (f"/v1/tickets?workspace_id={WS}&limit=1&limit=2", ("limit", "more than once")),
        (f"/v1/tickets?workspace_id={WS}&cursor=forged", ("cursor",)),
        ("/v1/kb/nodes/not-hex", ("node_id",)),
        (f"/v1/kb/nodes/{'g' * 24}", ("node_id", "does not match")),
        (f"/v1/conversations?workspace_id={WS}&updated_since=yesterday", ("updated_since",)),
    ],
)
def test_bad_parameters_are_400_naming_the_parameter(client: TestClient, url: str,
                                                     needles: tuple[str, ...]) -> None:
    assert_error(client.get(url), 400, *needles)
    assert_healthy(client)


def test_bad_bodies_are_400_naming_the_field(client: TestClient) -> None:
    url = "/v1/custom-tools"
    good = {"workspace_id": WS, "name": "late-checkout-fee", "description": "Quote the fee",
            "language": "python", "code": "def main(**params):\n    return {'message': 'ok'}\n"}
    assert_error(client.post(url, content=b'{"workspace_id": ', headers={"content-type": "application/json"}), 400, "JSON")
    assert_error(client.post(url, content=b"name=x", headers={"content-type": "application/x-www-form-urlencoded"}), 400, "Content-Type")
    assert_error(client.post(url, content=b""), 400, "required")
    assert_error(client.post(url, json={**good, "name": "Not Kebab"}), 400, "name")
    assert_error(client.post(url, json={**good, "name": "x" * 65}), 400, "name")
    assert_error(client.post(url, json={**good, "description": "d" * 1025}), 400, "description")
    assert_error(client.post(url, json={**good, "language": "ruby"}), 400, "language")
    assert_error(client.post(url, json={k: v for k, v in good.items() if k != "code"}), 400, "code")
    assert_error(client.post(url, json={**good, "colour": "red"}), 400, "colour")
    assert_error(client.post(url, json=[good]), 400)
    nested = b'{"workspace_id": ' + b"[" * 5000 + b"]" * 5000 + b"}"
    assert_error(client.post(url, content=nested, headers={"content-type": "application/json"}), 400)
    assert_error(client.post(url, content=b'{"name": "\xff\xfe"}', headers={"content-type": "application/json"}), 400)
    assert client.post(url, json=good).status_code == 201
    assert_healthy(client)


def test_body_over_the_limit_is_413(client: TestClient) -> None:
    big = b'{"workspace_id": "' + b"x" * 2_000_000 + b'"}'
    response = client.post("/v1/skills", content=big, headers={"content-type": "application/json"})
    assert_error(response, 413)
    assert_healthy(client)


def _send_body(mock: MockApp, method: str, target: str, token: str | None,
               chunks: list[bytes], *, declared: bool) -> tuple[int, str]:
    """One request straight into the served ASGI app, its body in `chunks` (streamed, with or
    without a Content-Length): the status and the error message (or "")."""
    path, _, query = target.partition("?")
    headers = [(b"host", b"mock"), (b"content-type", b"application/json")]
    if token is not None:
        headers.append((b"authorization", f"Bearer {token}".encode()))
    if declared:
        headers.append((b"content-length", str(sum(map(len, chunks))).encode()))
    messages = [{"type": "http.request", "body": chunk, "more_body": i < len(chunks) - 1}
                for i, chunk in enumerate(chunks)]
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return messages.pop(0) if messages else {"type": "http.disconnect"}

    async def send(message: Any) -> None:
        sent.append(message)

    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1",
             "method": method, "scheme": "http", "path": path, "raw_path": path.encode(),
             "query_string": query.encode(), "root_path": "", "headers": headers,
             "client": ("127.0.0.1", 5000), "server": ("127.0.0.1", 8080)}
    asyncio.run(create_app(mock=mock)(scope, receive, send))
    body = orjson.loads(sent[1]["body"])
    return sent[0]["status"], body.get("error", "") if isinstance(body, dict) else ""


@pytest.mark.parametrize("mode", ["journal", "no journal", "faults"])
@pytest.mark.parametrize("declared", [True, False], ids=["content-length", "streamed"])
def test_a_body_over_the_limit_is_refused_only_after_the_checks_before_it(
        mock: MockApp, mode: str, declared: bool) -> None:
    """The body is read before the pipeline runs (by method), but a read that failed (413) is
    answered only where the pipeline uses the body: after routing (404, 405), authentication
    (401), write access (403) and parameters (400); then before the body's own checks. Through
    each pipeline path: journal on (inline), off, and the observed path (a fault rule
    elsewhere)."""
    if mode == "no journal":
        mock = MockApp(Config(self_check=True, frozen_clock=FROZEN_AT, journal_size=0))
    elif mode == "faults":
        mock.state.add_fault(method="GET", path="/v1/models", status=503)
    limit = mock.config.max_body_bytes
    big = [b'{"title": "', b"x" * (limit // 2), b"y" * (limit // 2), b'"}']
    url = f"/v1/kb/nodes?workspace_id={WS}"
    version = mock.store.version

    def refused(method: str, target: str, token: str | None) -> tuple[int, str]:
        return _send_body(mock, method, target, token, big, declared=declared)

    assert refused("POST", "/v1/nope", WRITE)[0] == 404
    assert refused("DELETE", "/v1/tickets", WRITE)[0] == 405
    assert refused("POST", url, None) == (401, "Missing API token: send 'Authorization: "
                                               "Bearer <token>'")
    status, message = refused("POST", url, READ)
    assert status == 403 and "read-only" in message
    status, message = refused("POST", "/v1/kb/nodes?workspace_id=", WRITE)
    assert status == 400 and "workspace_id" in message
    status, message = refused("POST", url, WRITE)
    assert status == 413 and str(limit) in message
    # Under the limit, the same path reaches the body's own checks (it is read, not lost).
    assert _send_body(mock, "POST", url, WRITE, [b'{"title": 1}'], declared=declared)[0] == 400
    assert mock.store.version == version  # nothing written


def test_a_request_refused_before_its_body_is_used_journals_that_body(mock: MockApp) -> None:
    mock.state.clear_journal()
    body = b'{"title": "kept"}'
    assert _send_body(mock, "POST", f"/v1/kb/nodes?workspace_id={WS}", None, [body[:5], body[5:]],
                      declared=False)[0] == 401
    (entry,) = mock.journal.entries(path="/v1/kb/nodes")
    assert (entry.status, entry.body, entry.truncated) == (401, body, ())


@pytest.mark.parametrize("prefix", ["", "/sessions/default"], ids=["served", "session path"])
def test_headers_past_the_limit_are_431_to_the_byte(client: TestClient, mock: MockApp,
                                                    prefix: str) -> None:
    """Names, values and 4 bytes a line, at most MAX_HEADER_BYTES: measured in the served
    application's one pass over the headers (which also finds the session header), or by the
    pipeline itself when a session path prefix named the session."""
    mock.state.clear_journal()
    assert client.get(f"{prefix}/v1", headers={"x-pad": "a"}).status_code == 200
    (entry,) = mock.journal.entries()
    used = sum(len(name) + len(value) + 4 for name, value in entry.raw_headers)
    pad = "a" * (1 + MAX_HEADER_BYTES - used)
    assert client.get(f"{prefix}/v1", headers={"x-pad": pad}).status_code == 200
    assert_error(client.get(f"{prefix}/v1", headers={"x-pad": pad + "a"}), 431,
                 str(MAX_HEADER_BYTES))
    # Authorization and the session header are still read from the same pass.
    assert_error(client.get(f"{prefix}/v1", headers={"x-pad": pad, "authorization": "Bearer x"}),
                 401, "Invalid")
    if not prefix:
        assert_error(client.get("/v1", headers={"x-mock-session": "nope"}), 404, "nope")


def test_rate_limit_is_429_with_retry_after_and_resets_with_the_clock(client: TestClient,
                                                                      mock: MockApp) -> None:
    url = f"/v1/skills?workspace_id={WS}"
    for _ in range(120):
        assert client.get(url).status_code == 200
    response = client.get(url)
    assert_error(response, 429, "Rate limit")
    assert response.headers["retry-after"].isdigit() and int(response.headers["retry-after"]) >= 1
    # The budget is the workspace's, whoever calls; another workspace is unaffected.
    assert client.get(url, headers=auth(COLLEAGUE)).status_code == 429
    assert client.get("/v1/skills?workspace_id=ws_alpine").status_code == 200
    mock.clock.advance(int(response.headers["retry-after"]))
    assert client.get(url).status_code == 200


def test_requests_without_a_workspace_are_counted_per_token(client: TestClient,
                                                            mock: MockApp) -> None:
    mock.limiter.configure(per_minute=3)
    try:
        for _ in range(3):
            assert client.get("/v1/models").status_code == 200
        assert_error(client.get("/v1/workspaces"), 429)
        assert client.get("/v1/models", headers=auth(READ)).status_code == 200
    finally:
        mock.limiter.configure(per_minute=120)


def test_rate_limits_switch_off_and_per_workspace(client: TestClient, mock: MockApp) -> None:
    mock.limiter.set_workspace_limit(WS, 2)
    try:
        url = f"/v1/skills?workspace_id={WS}"
        assert [client.get(url).status_code for _ in range(3)] == [200, 200, 429]
        mock.limiter.configure(enabled=False)
        assert client.get(url).status_code == 200
    finally:
        mock.limiter.configure(enabled=True)
        mock.limiter.set_workspace_limit(WS, None)


def test_pagination_walks_every_item_once(client: TestClient) -> None:
    everything = client.get(f"/v1/conversations?workspace_id={WS}&limit=100").json()
    assert everything["has_more"] is False and everything["next_cursor"] is None
    assert len(everything["data"]) > 20
    seen: list[str] = []
    cursor = None
    while True:
        params = {"workspace_id": WS, "limit": 3, **({"cursor": cursor} if cursor else {})}
        page = client.get("/v1/conversations", params=params).json()
        seen += [c["id"] for c in page["data"]]
        assert (page["next_cursor"] is None) == (page["has_more"] is False)
        if not page["has_more"]:
            break
        cursor = page["next_cursor"]
    assert seen == [c["id"] for c in everything["data"]]
    default = client.get(f"/v1/conversations?workspace_id={WS}").json()
    assert len(default["data"]) == 20 and default["has_more"] is True


def test_cursor_reused_with_other_filters_or_another_list_is_400(client: TestClient) -> None:
    page = client.get(f"/v1/conversations?workspace_id={WS}&limit=2").json()
    cursor = page["next_cursor"]
    ok = client.get("/v1/conversations", params={"workspace_id": WS, "limit": 5, "cursor": cursor})
    assert ok.status_code == 200
    for params in ({"order": "asc"}, {"sort_by": "follow_up_at"}, {"archived": "true"}):
        response = client.get("/v1/conversations",
                              params={"workspace_id": WS, "cursor": cursor, **params})
        assert_error(response, 400, "cursor")
    assert_error(client.get("/v1/tickets", params={"workspace_id": WS, "cursor": cursor}), 400,
                 "cursor")


def test_self_check_fails_loudly_on_an_undocumented_field(mock: MockApp,
                                                          client: TestClient) -> None:
    original = mock.handlers["listModels"]
    assert client.get("/v1/models").status_code == 200  # kept by the response cache
    mock.handlers["listModels"] = lambda ctx: {"data": [], "surprise": True}
    try:
        # The swapped handler runs: the cache is keyed by the handler, not its name (a planted
        # defect never meets the answers of the one it replaced).
        # Answered as any unexpected error is: 500 {"error": ...} naming the violation.
        assert_error(client.get("/v1/models"), 500, "self-check", "surprise")
    finally:
        mock.handlers["listModels"] = original


def test_every_error_status_is_documented_for_its_operation(mock: MockApp) -> None:
    # The self-check refuses undocumented statuses; this pins, per operation, each status the
    # engine itself can emit before a handler runs.
    for op in mock.spec.operations:
        emitted = {401, 429, 431}
        if op.parameters or op.body_schema is not None:
            emitted.add(400)
        if op.body_schema is not None:
            emitted.add(413)
        if op.requires_write or op.workspace_source:
            emitted.add(403)
        if op.workspace_source == "resource":
            emitted.add(404)
        missing = emitted - set(op.responses)
        assert not missing, (op.operation_id, sorted(missing))


def test_a_timestamp_that_names_no_instant_is_400(client: TestClient) -> None:
    url = f"/v1/insights/conversation-automation-rate?workspace_id={WS}"
    assert_error(client.get(url + "&start=0000-01-01T00:00:00.000Z"), 400, "start")
    assert_error(client.get(url + "&end=2026-13-01T00:00:00.000Z"), 400, "end")
    assert client.get(url).status_code == 200


def test_integral_floats_count_as_integers_in_bodies(client: TestClient) -> None:
    # Found by the conformance gate: 28.0 passed validation and crashed a slice.
    response = client.post(f"/v1/kb/search?workspace_id={WS}",
                           json={"query": "check-in", "max_results": 2.0, "entity_ids": []})
    assert response.status_code == 200 and len(response.json()["data"]) <= 2
    response = client.post(f"/v1/kb/nodes/search?workspace_id={WS}",
                           json={"pagination": {"page_size": 2.0}})
    assert response.status_code == 200 and len(response.json()["data"]) == 2


def test_remembered_parameter_values_keep_every_check(mock: MockApp) -> None:
    """Accepted query values are remembered per operation; refusals still happen in full."""
    from mockserver.engine.errors import BadRequest
    from mockserver.engine.validation import ACCEPTED_VALUES

    validator = mock.validators["listConversations"]
    validator._accepted.clear()
    accepted = [("workspace_id", "ws_harborview"), ("limit", "20")]
    assert validator.query(accepted)["limit"] == 20
    assert validator.query(accepted)["limit"] == 20  # from memory, the same coerced value
    refusals = {
        "more than once": [*accepted, ("limit", "20")],
        "limit": [("workspace_id", "ws_harborview"), ("limit", "500")],
        "unknown query parameter 'limt'": [("workspace_id", "ws_harborview"), ("limt", "20")],
        "'workspace_id' is required": [("limit", "20")],
    }
    for message, items in refusals.items():
        for _ in range(2):  # refusals are never remembered
            with pytest.raises(BadRequest, match=message):
                validator.query(items, strict=True)
    assert ("limit", "500") not in validator._accepted
    for n in range(ACCEPTED_VALUES + 10):
        validator.query([("workspace_id", "ws_harborview"), ("limit", str(n % 100 + 1)),
                         ("updated_since", f"2026-10-01T{n // 60 % 24:02d}:{n % 60:02d}:00.000Z")])
    assert 0 < len(validator._accepted) <= ACCEPTED_VALUES  # 1,100+ distinct values went in


_NAMES = ["workspace_id", "limit", "cursor", "status", "updated_since", "bogus", ""]
_VALUES = ["ws_harborview", "ws_alpine", "20", "0", "500", "x", "", "open", "a%20b", "1+2",
           "2026-10-01T00:00:00.000Z", "2026-13-01T00:00:00.000Z"]


@given(st.lists(st.tuples(st.sampled_from(_NAMES), st.sampled_from(_VALUES),
                          st.booleans()), max_size=5),
       st.booleans())
@settings(max_examples=300, deadline=None)
def test_a_raw_query_string_is_validated_as_its_parsed_items(
        session_mock: MockApp, parts: list[tuple[str, str, bool]], strict: bool) -> None:
    """`query_string` (the pipeline's: parts remembered whole) accepts and refuses exactly as
    `query` over `parse_query`'s items, the same values or the same message, however often
    the same parts come back (run twice: the second from memory)."""
    from mockserver.engine.errors import BadRequest
    from mockserver.engine.exchange import parse_query

    raw = "&".join(f"{n}={v}" if with_sign else n for n, v, with_sign in parts).encode()
    validator = session_mock.validators["listConversations"]

    def outcome(run: Any) -> tuple[str, Any]:
        unknown: list[str] = []
        try:
            return "ok", (run(unknown), unknown)
        except BadRequest as error:
            return "refused", (error.message, unknown)

    expected = outcome(lambda u: validator.query(parse_query(raw), strict=strict, unknown=u))
    for _ in range(2):
        assert outcome(lambda u: validator.query_string(raw, strict=strict, unknown=u)) == expected


def test_remembered_authorization_values_follow_the_tokens() -> None:
    """Accepted `Authorization` values are remembered; a refused one never is, a token added
    again (another principal) is seen at once, and the memory stays bounded."""
    from mockserver.engine.auth import _ACCEPTED_HEADERS, Principal, TokenRegistry
    from mockserver.engine.errors import Unauthorized

    registry = TokenRegistry([{"token": "tok-12345", "user_id": "u1", "access": "read",
                               "workspace_ids": ["ws_a"]}])
    for header in ("Bearer tok-12345", "bearer tok-12345 ", "Bearer tok-12345"):
        assert registry.authenticate(header).access == "read"
    for header in (None, "", "Bearer", "Basic tok-12345", "Bearer tok-1234", "Bearer a b"):
        for _ in range(2):
            with pytest.raises(Unauthorized):
                registry.authenticate(header)
    registry.add(Principal("tok-12345", "u1", "write", frozenset({"ws_a", "ws_b"})))
    assert registry.authenticate("Bearer tok-12345").access == "write"
    for n in range(_ACCEPTED_HEADERS + 10):
        assert registry.authenticate("Bearer tok-12345" + " " * n).user_id == "u1"
    assert 0 < len(registry._accepted) <= _ACCEPTED_HEADERS


def test_the_header_pass_reads_each_headers_first_value_and_counts_them_all() -> None:
    # Authorization, Prefer and X-Mock-Session as first sent (a repeat ignored), whatever
    # comes between; the size counts every name and value (and 4 bytes a line for the limit).
    headers = [(b"host", b"h"), (b"authorization", b"Bearer first"), (b"prefer", b"code=404"),
               (b"x-mock-session", b"one"), (b"authorization", b"Bearer second"),
               (b"prefer", b"code=500"), (b"x-mock-session", b"two"), (b"accept", b"*/*")]
    size = sum(len(name) + len(value) for name, value in headers)
    assert scan_headers({"headers": headers}) == (
        "Bearer first", "code=404", size + 4 * len(headers), "one", size)
    assert scan_headers({"headers": [(b"host", b"h")]}) == (None, None, 9, None, 5)
