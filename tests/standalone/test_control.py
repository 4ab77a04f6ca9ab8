"""The standalone features: control API, Prefer: code=N, docs and inspector pages, request log."""

from __future__ import annotations

import io
import json
import logging
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from conftest import OTHER, READ, WRITE, auth
from starlette.testclient import TestClient

from mockserver.data.fixtures import default_fixtures_dir
from mockserver.engine.app import Config, MockApp
from mockserver.engine.requestlog import configure_logging
from mockserver.standalone.server import create_app

WS = "ws_harborview"


@pytest.fixture
def api(mock: MockApp) -> Iterator[TestClient]:
    with TestClient(create_app(mock=mock), headers=auth()) as client:
        yield client


# -- reset and journal ------------------------------------------------------------------------

def test_reset_restores_the_fixtures(api: TestClient) -> None:
    ticket = "xd_aisha_khan_parking"
    assert api.post(f"/v1/tickets/{ticket}/resolve").status_code == 200
    assert api.post("/__mock__/reset").json() == {"reset": True}
    assert api.get(f"/v1/tickets/{ticket}").json()["data"]["status"] == "new"
    assert api.get("/__mock__/requests").json()["data"][-1]["path"] == f"/v1/tickets/{ticket}"


def test_journal_filters_redacts_and_clears(api: TestClient) -> None:
    api.get("/v1/tickets", params={"workspace_id": WS, "limit": 1})
    api.get("/v1/tickets", params={"workspace_id": WS, "limit": 0})
    api.post("/v1/tickets/xd_aisha_khan_parking/notes", json={"body": "hello"})
    api.get("/v1/models", headers=auth("no-such-token"))
    everything = api.get("/__mock__/requests").json()
    assert everything["total"] == 4
    [bad] = api.get("/__mock__/requests", params={"status": 400}).json()["data"]
    assert bad["query"] == {"workspace_id": WS, "limit": "0"}
    [post] = api.get("/__mock__/requests", params={"method": "post"}).json()["data"]
    assert post["body"] == {"body": "hello"} and post["status"] == 201
    assert post["operation_id"] == "createTicketNote"
    assert WRITE not in json.dumps(everything)
    assert post["headers"]["authorization"].startswith("Bearer mock")
    assert len(api.get("/__mock__/requests", params={"path": "/v1/tickets"}).json()["data"]) == 3
    assert api.get("/__mock__/requests", params={"limit": 1}).json()["data"][0]["path"] == "/v1/models"
    assert api.get("/__mock__/requests", params={"status": "x"}).status_code == 400
    assert api.delete("/__mock__/requests").json() == {"cleared": 4}
    assert api.get("/__mock__/requests").json()["total"] == 0


def test_journal_is_bounded() -> None:
    mock = MockApp(Config(journal_size=3))
    client = TestClient(create_app(mock=mock), headers=auth())
    for _ in range(5):
        client.get("/v1")
    assert [e["seq"] for e in client.get("/__mock__/requests").json()["data"]] == [3, 4, 5]


def test_journal_has_a_byte_budget_and_marks_what_it_did_not_keep() -> None:
    """A load test of large bodies cannot grow the mock without bound: bodies over 64 KiB are
    not kept (the entry says so and keeps the size) and the journal keeps at most
    `journal_bytes` in all, dropping the oldest entries first (counted)."""
    mock = MockApp(Config(journal_size=1000, journal_bytes=200_000))
    client = TestClient(create_app(mock=mock), headers=auth())
    big = b'{"first_name": "' + b"x" * 1_000_000 + b'"}'
    tracemalloc.start()
    try:
        client.post(f"/v1/skills?workspace_id={WS}", content=big)  # warm-up
        before, _ = tracemalloc.get_traced_memory()
        for _ in range(40):
            response = client.post(f"/v1/skills?workspace_id={WS}", content=big)
            assert response.status_code in (400, 413)
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert grown < 5_000_000  # 40 MB received; kept, it would be >= 40 MB
    listed = client.get("/__mock__/requests", params={"method": "POST"}).json()
    entry = listed["data"][-1]
    assert entry["truncated"] == ["body"] and entry["body"] == f"<{len(big)} bytes, not kept>"
    # The byte budget: medium bodies (kept whole) push the oldest entries out.
    for _ in range(100):
        client.post(f"/v1/skills?workspace_id={WS}", content=b'{"x": "' + b"y" * 10_000 + b'"}')
    assert mock.journal.kept_bytes <= 200_000
    listed = client.get("/__mock__/requests").json()
    assert 10 <= listed["total"] < 30 and listed["dropped"] >= 100
    assert all(e["truncated"] == [] for e in listed["data"])
    assert listed["data"][-2]["body"] == {"x": "y" * 10_000}


def test_control_is_not_under_v1(api: TestClient) -> None:
    assert api.post("/v1/__mock__/reset").status_code == 404
    assert api.get("/v1/__mock__/requests").status_code == 404


# -- faults -----------------------------------------------------------------------------------

def test_status_fault_for_the_next_n_requests(api: TestClient) -> None:
    created = api.post("/__mock__/faults", json={"method": "GET", "path": "/v1/agents",
                                                 "status": 503, "count": 2})
    assert created.status_code == 201
    assert created.json()["data"]["remaining"] == 2
    params = {"workspace_id": WS}
    assert api.get("/v1/agents", params=params).status_code == 503
    assert api.get("/__mock__/faults").json()["data"][0]["remaining"] == 1
    assert api.post("/v1/agents", json={}).status_code != 503  # other method
    second = api.get("/v1/agents", params=params)
    assert second.status_code == 503 and "error" in second.json()
    assert api.get("/v1/agents", params=params).status_code == 200
    assert api.get("/__mock__/faults").json()["data"] == []


def test_fault_templates_prefixes_429_probability_and_clear(api: TestClient) -> None:
    api.post("/__mock__/faults", json={"path": "/v1/tickets/{id}", "status": 429,
                                       "count": None})
    limited = api.get("/v1/tickets/xd_aisha_khan_parking")
    assert limited.status_code == 429 and limited.headers["Retry-After"] == "1"
    assert api.get("/v1/tickets/xd_aisha_khan_parking").status_code == 429  # count: null
    assert api.get("/v1/tickets", params={"workspace_id": WS}).status_code == 200
    assert api.delete("/__mock__/faults").json() == {"cleared": 1}
    api.post("/__mock__/faults", json={"path": "/v1/*", "status": 500, "probability": 0,
                                       "count": None})
    assert all(api.get("/v1").status_code == 200 for _ in range(5))
    api.delete("/__mock__/faults")
    api.post("/__mock__/faults", json={"path": "/v1", "delay_ms": 1})
    assert api.get("/v1").status_code == 200
    assert api.get("/__mock__/requests").json()["data"][-1]["fault"].endswith("(delay)")


def test_fault_body_is_validated(api: TestClient) -> None:
    response = api.post("/__mock__/faults", json={"path": "/v1", "status": 1000})
    assert response.status_code == 400 and "status" in response.json()["error"]
    response = api.post("/__mock__/faults", json={"path": "/v1"})
    assert response.status_code == 400
    assert "needs a status, a delay_ms or drop" in response.json()["error"]
    assert api.post("/__mock__/faults", json={"colour": "red"}).status_code == 400


def test_drop_fault_in_process(api: TestClient) -> None:
    from mockserver.engine.faults import ConnectionDropped

    api.post("/__mock__/faults", json={"path": "/v1", "drop": True})
    with pytest.raises(ConnectionDropped):
        api.get("/v1")
    assert api.get("/v1").status_code == 200


# -- clock and rate limits --------------------------------------------------------------------

def test_clock(api: TestClient) -> None:
    assert api.get("/__mock__/clock").json() == {"now": "2026-11-01T12:00:00.000Z", "frozen": True}
    assert api.post("/__mock__/clock", json={"advance_seconds": 90}).json()["now"] \
        == "2026-11-01T12:01:30.000Z"
    assert api.post("/__mock__/clock", json={"now": "2027-02-03T04:05:06Z"}).json()["now"] \
        == "2027-02-03T04:05:06.000Z"
    assert api.post("/__mock__/clock", json={"now": "yesterday"}).status_code == 400
    assert api.post("/__mock__/clock", json={}).status_code == 400


def test_clock_in_early_years_and_at_the_last_instant(api: TestClient) -> None:
    """Years below 1000 are written with four digits (writes included); the clock refuses to
    move past 9999-12-30T23:59:59.999Z (the last day is left to writes, which stamp instants
    a little past the clock) and stays where it was."""
    assert api.post("/__mock__/clock", json={"now": "0313-12-12T23:28:25.791Z"}).json()["now"] \
        == "0313-12-12T23:28:25.791Z"
    assert api.get("/v1/insights/conversation-automation-rate",
                   params={"workspace_id": WS}).json()["data"]["period_start"] \
        == "0313-11-12T23:28:25.791Z"
    assert api.post("/__mock__/clock", json={"now": "9999-12-30T23:59:00.000Z"}).status_code == 200
    refused = api.post("/__mock__/clock", json={"advance_seconds": 60})
    assert refused.status_code == 400 and "advance_seconds" in refused.json()["error"]
    assert api.get("/__mock__/clock").json()["now"] == "9999-12-30T23:59:00.000Z"
    assert api.post("/__mock__/clock", json={"advance_seconds": 59.999}).status_code == 200
    assert api.post("/__mock__/clock", json={"now": "9999-12-30T23:59:59.999-01:00"}
                    ).status_code == 400


def test_rate_limits(api: TestClient) -> None:
    settings = api.get("/__mock__/rate-limits").json()
    assert settings["per_minute"] == 120 and settings["enabled"] is True
    changed = api.post("/__mock__/rate-limits", json={"per_minute": 2, "workspaces": {WS: None}})
    assert changed.json()["per_minute"] == 2 and WS not in changed.json()["workspaces"]
    params = {"workspace_id": WS}
    assert [api.get("/v1/tickets", params=params).status_code for _ in range(3)] == [200, 200, 429]
    api.post("/__mock__/rate-limits", json={"enabled": False})
    assert api.get("/v1/tickets", params=params).status_code == 200
    api.post("/__mock__/rate-limits", json={"enabled": True, "reset_windows": True})
    assert api.get("/v1/tickets", params=params).status_code == 200
    api.post("/__mock__/clock", json={"advance_seconds": 60})
    api.post("/__mock__/reset")
    assert api.get("/__mock__/rate-limits").json()["per_minute"] == 120
    assert api.post("/__mock__/rate-limits", json={"per_minute": -1}).status_code == 400


# -- fixtures ---------------------------------------------------------------------------------

def test_load_fixtures_validates_before_replacing(api: TestClient, tmp_path: Path) -> None:
    tickets = yaml.safe_load((default_fixtures_dir() / "tickets.yaml").read_text())
    broken = [{**tickets[0], "status": "on fire"}]
    (tmp_path / "tickets.yaml").write_text(yaml.safe_dump(broken))
    response = api.post("/__mock__/fixtures", json={"paths": [str(default_fixtures_dir()),
                                                              str(tmp_path)]})
    assert response.status_code == 400
    message = response.json()["error"]
    assert "tickets.yaml" in message and tickets[0]["id"] in message and "'status'" in message
    assert api.get(f"/v1/tickets/{tickets[0]['id']}").status_code == 200  # still loaded

    (tmp_path / "tickets.yaml").write_text(yaml.safe_dump([{**tickets[0], "subject": "New"}]))
    loaded = api.post("/__mock__/fixtures", json={"paths": [str(default_fixtures_dir()),
                                                            str(tmp_path)]})
    assert loaded.status_code == 200 and loaded.json()["loaded"]["tickets"] == len(tickets)
    assert api.get(f"/v1/tickets/{tickets[0]['id']}").json()["data"]["subject"] == "New"
    api.post("/__mock__/reset")
    assert api.get(f"/v1/tickets/{tickets[0]['id']}").json()["data"]["subject"] == "New"
    assert api.post("/__mock__/fixtures", json={"default": True}).status_code == 200
    assert api.get(f"/v1/tickets/{tickets[0]['id']}").json()["data"]["subject"] != "New"
    missing = api.post("/__mock__/fixtures", json={"path": str(tmp_path / "nope")})
    assert missing.status_code == 400 and "not a directory" in missing.json()["error"]


# -- access off loopback ----------------------------------------------------------------------

def test_records_are_added_factory_style_and_read_back(api: TestClient) -> None:
    """POST /__mock__/records/{table} copies a fixture record of the workspace asked, with a new
    id, fresh timestamps and the body's fields; the API then serves it, and GET
    /__mock__/records/{table}/{id} reads it as stored."""
    now = api.get("/__mock__/clock").json()["now"]
    added = api.post("/__mock__/records/contacts", params={"workspace": "ws_alpine"},
                     json={"first_name": "Zed"})
    assert added.status_code == 201, added.text
    contact = added.json()["data"]
    assert contact["workspace_id"] == "ws_alpine" and contact["first_name"] == "Zed"
    assert contact["created_at"] == contact["updated_at"] == now
    assert not [k for k in contact if k.startswith("_")]
    got = api.get(f"/v1/contacts/{contact['id']}")
    assert got.status_code == 200 and got.json()["data"]["first_name"] == "Zed"
    assert api.get(f"/__mock__/records/contacts/{contact['id']}").json() == {"data": contact}
    again = api.post("/__mock__/records/contacts", json={}).json()["data"]
    assert again["id"] != contact["id"]  # a new id each time


def test_a_record_the_loader_would_refuse_is_refused_naming_the_field(api: TestClient) -> None:
    before = api.get("/v1/contacts", params={"workspace_id": WS, "limit": 100}).json()["data"]
    bad = api.post("/__mock__/records/contacts", json={"not_a_field": 1})
    assert bad.status_code == 400 and "not_a_field" in bad.json()["error"], bad.text
    dangling = api.post("/__mock__/records/tickets", json={"contact_id": "ph_nobody"})
    assert dangling.status_code == 400 and "contact_id" in dangling.json()["error"], dangling.text
    taken = api.post("/__mock__/records/contacts", json={"id": before[0]["id"]})
    assert taken.status_code == 409 and "'id'" in taken.json()["error"], taken.text
    unknown = api.post("/__mock__/records/nope", json={})
    assert unknown.status_code == 404 and "contacts" in unknown.json()["error"]
    missing = api.get("/__mock__/records/contacts/ph_nobody")
    assert missing.status_code == 404 and "ph_nobody" in missing.json()["error"]
    assert api.post("/__mock__/records/contacts", params={"bogus": 1}, json={}).status_code == 400
    nowhere = api.post("/__mock__/records/contacts", params={"workspace": "ws_nope"}, json={})
    assert nowhere.status_code == 400 and "'workspace'" in nowhere.json()["error"], nowhere.text
    # Values no schema rule stops before they are used as keys: 400 naming the field, not 500.
    for table, fields, named in (("contacts", {"id": []}, "'id'"),
                                 ("kb_nodes", {"is_directory": []}, "'is_directory'"),
                                 ("roles", {"_workspace_id": ["x"]}, "'_workspace_id'")):
        odd = api.post(f"/__mock__/records/{table}", json=fields)
        assert odd.status_code == 400 and named in odd.json()["error"], (table, odd.text)
    after = api.get("/v1/contacts", params={"workspace_id": WS, "limit": 100}).json()["data"]
    assert after == before  # nothing written by a refusal


def test_a_session_adds_records_within_the_sessions_memory_cap() -> None:
    mock = MockApp(Config(max_session_memory=1, frozen_clock="2026-11-01T12:00:00Z"))
    with TestClient(create_app(mock=mock), headers=auth()) as api:
        assert api.post("/__mock__/sessions", json={"name": "tight"}).status_code == 201
        full = api.post("/sessions/tight/__mock__/records/contacts", json={})
        assert full.status_code == 507 and "error" in full.json(), full.text
        assert api.post("/__mock__/records/contacts", json={}).status_code == 201  # default


def test_records_added_to_a_session_stay_in_it(api: TestClient) -> None:
    assert api.post("/__mock__/sessions", json={"name": "rec"}).status_code == 201
    added = api.post("/sessions/rec/__mock__/records/tickets", json={"subject": "Late check-in"})
    assert added.status_code == 201, added.text
    key = added.json()["data"]["id"]
    assert api.get(f"/sessions/rec/__mock__/records/tickets/{key}").status_code == 200
    assert api.get(f"/__mock__/records/tickets/{key}").status_code == 404
    assert api.get(f"/v1/tickets/{key}").status_code == 404


def test_control_needs_a_token_off_loopback() -> None:
    disabled = TestClient(create_app(Config(host="0.0.0.0")))
    response = disabled.post("/__mock__/reset")
    assert response.status_code == 403 and "--control-token" in response.json()["error"]
    assert disabled.get("/v1", headers=auth()).status_code == 200  # the API still works

    guarded = TestClient(create_app(Config(host="0.0.0.0", control_token="s3cret")))
    assert guarded.post("/__mock__/reset").status_code == 403
    assert guarded.post("/__mock__/reset", headers={"X-Mock-Control-Token": "wrong"}).status_code == 403
    ok = guarded.post("/__mock__/reset", headers={"X-Mock-Control-Token": "s3cret"})
    assert ok.status_code == 200
    assert TestClient(create_app(Config(host="::1"))).get("/__mock__/clock").status_code == 200


# -- Prefer: code=N ---------------------------------------------------------------------------

def test_prefer_a_documented_error(api: TestClient) -> None:
    response = api.get("/v1/tickets/xd_aisha_khan_parking", headers={"Prefer": "code=404"})
    assert response.status_code == 404
    assert response.json() == {"error": "Ticket 'xd00000000000000000000000000000' not found"}
    limited = api.get("/v1", headers={"Prefer": "code=429"})
    assert limited.status_code == 429 and limited.headers["Retry-After"] == "1"
    assert api.get("/v1", headers={"Prefer": "code=200"}).status_code == 200


def test_prefer_never_bypasses_a_check(api: TestClient, mock: MockApp) -> None:
    """Prefer is answered only after authentication, write access, workspace access and the
    rate limit have passed, and it is counted against the limit (issue 14)."""
    prefer = {"Prefer": "code=404"}
    response = api.get("/v1", headers={**auth("bad-token"), "Prefer": "code=429"})
    assert response.status_code == 401
    # A read-only token asking a write operation for 404 is refused as without Prefer.
    response = api.post("/v1/tickets/xd_aisha_khan_parking/resolve",
                        headers={**auth(READ), **prefer})
    assert response.status_code == 403 and "read-only" in response.json()["error"]
    # A workspace the token cannot reach stays 403.
    response = api.get("/v1/tickets?workspace_id=ws_desert", headers=prefer)
    assert response.status_code == 403 and "ws_desert" in response.json()["error"]
    response = api.get("/v1/tickets/xd_aisha_khan_parking", headers={**auth(OTHER), **prefer})
    assert response.status_code == 403
    # Prefer requests count, and past the limit the answer is 429, not the preferred one.
    mock.limiter.set_workspace_limit(WS, 3)
    for _ in range(3):
        assert api.get("/v1/tickets/xd_aisha_khan_parking", headers=prefer).status_code == 404
    limited = api.get("/v1/tickets/xd_aisha_khan_parking", headers=prefer)
    assert limited.status_code == 429, limited.text


def test_prefer_an_undocumented_code(api: TestClient) -> None:
    response = api.get("/v1", headers={"Prefer": "code=404"})
    assert response.status_code == 400
    assert response.json()["error"].endswith("documented: 200, 401, 429, 431")
    assert api.get("/v1", headers={"Prefer": "code=abc"}).status_code == 400


# -- pages ------------------------------------------------------------------------------------

def test_docs_openapi_and_inspector_pages(api: TestClient) -> None:
    docs = api.get("/docs")
    assert docs.status_code == 200 and "swagger-ui-bundle.js" in docs.text
    assert "http" not in docs.text.split("<body>")[1].replace("http://", "").split("SwaggerUIBundle")[0]
    document = api.get("/openapi.json").json()
    assert "/v1/tickets" in document["paths"]
    assert "/__mock__/faults" in api.get("/__mock__/openapi.json").json()["paths"]
    bundle = api.get("/__mock__/static/swagger-ui/swagger-ui-bundle.js")
    assert bundle.status_code == 200 and len(bundle.content) > 100_000
    assert "/__mock__/requests" in api.get("/__mock__/inspector").text
    assert not api.get("/__mock__/requests").json()["data"]  # pages are not journaled


# -- request log ------------------------------------------------------------------------------

@pytest.mark.parametrize("fmt", ["text", "json"])
def test_request_log_line(api: TestClient, fmt: str) -> None:
    stream = io.StringIO()
    handler = configure_logging(fmt, stream=stream)
    try:
        api.get("/v1/tickets", params={"workspace_id": WS})
    finally:
        logger = logging.getLogger("mockserver.requests")
        logger.removeHandler(handler)
        logger.setLevel(logging.NOTSET)
        logger.propagate = True
    line = stream.getvalue().strip()
    assert WRITE not in line
    if fmt == "json":
        record = json.loads(line)
        assert record["method"] == "GET" and record["path"] == "/v1/tickets"
        assert record["status"] == 200 and record["latency_ms"] >= 0
        assert record["token"].startswith("mock")
    else:
        assert "GET /v1/tickets 200" in line and "token=mock" in line
