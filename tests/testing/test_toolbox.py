"""The test author's toolbox (issue 44, decisions W1 to W10), shown the way users run it:
inner test files under pytester, in the test's process and over the control API.

- verification: `mock_api.calls(...)`, `assert_called(...)` and its near misses, the
  strict-requests mode failing a test on a 405;
- stubs: one whole answer for N requests, then the state's own; off-contract refused unless
  `validate=False`;
- without pytest: `MockApi.start(...)` in a plain script;
- HAR export of the journal.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from conftest import auth
from starlette.testclient import TestClient

from mockserver.standalone.server import create_app
from mockserver.testing.api import MockApi
from tests.testing.test_pytest_plugin import OVER_HTTP, add_conftest, run

pytest_plugins = ["pytester"]
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(params=["in_process", "http"])
def control(request: pytest.FixtureRequest, pytester: pytest.Pytester) -> str:
    if request.param == "http":
        add_conftest(pytester, OVER_HTTP)
    return str(request.param)


# -- W1: calls and assert_called -------------------------------------------------------------

def test_calls_count_by_operation_method_path_and_status(pytester: pytest.Pytester,
                                                         control: str) -> None:
    result = run(pytester, """
        def test_counts(mock_api):
            client = mock_api.client()
            ws = {"workspace_id": mock_api.workspaces.primary}
            client.get("/v1/tickets", params=ws)
            client.get("/v1/tickets", params=ws)
            client.get("/v1/tickets/xd_aisha_khan_parking")
            client.get("/v1/tickets/tk_nobody")
            client.post("/v1/tickets/xd_aisha_khan_parking/notes", json={"body": "hi"})
            assert len(mock_api.calls()) == 5
            assert len(mock_api.calls("listTickets")) == 2
            assert len(mock_api.calls(operation="getTicket")) == 2
            assert len(mock_api.calls(operation="getTicket", status=404)) == 1
            assert len(mock_api.calls(path="/v1/tickets")) == 2  # exact, not a prefix
            assert len(mock_api.calls(path="/v1/tickets/{id}")) == 2  # a template
            assert len(mock_api.calls(path="/v1/tickets/*")) == 3  # a prefix
            assert len(mock_api.calls(method="post")) == 1
            [note] = mock_api.calls(method="POST", path="/v1/tickets/{id}/notes", status=201)
            assert note.json == {"body": "hi"}
            mock_api.assert_called("listTickets", times=2)
            mock_api.assert_called("GET /v1/tickets/{id}", times=2)
            mock_api.assert_called("/v1/tickets/xd_aisha_khan_parking/notes", times=1)
            mock_api.assert_not_called("deleteTicket")
    """)
    result.assert_outcomes(passed=1)


def test_assert_called_lists_the_near_misses(pytester: pytest.Pytester, control: str) -> None:
    result = run(pytester, """
        def test_wrong_count(mock_api):
            client = mock_api.client()
            client.get("/v1/tickets/xd_aisha_khan_parking")
            client.post("/v1/tickets/xd_aisha_khan_parking/resolve")
            client.get("/v1/models")
            mock_api.assert_called("POST /v1/tickets/{id}/notes", times=1)

        def test_nothing_received(mock_api):
            mock_api.assert_called("listTickets")
    """)
    result.assert_outcomes(failed=2)
    text = result.stdout.str()
    assert ("expected POST /v1/tickets/{id}/notes to be called 1 time; "
            "it was called 0 times") in text
    assert "closest other requests (near misses):" in text
    near = text.split("closest other requests (near misses):", 1)[1]
    # closest first: the POST on a ticket, then the GET of the same ticket, then /v1/models
    first, second, third = [line.lstrip("E ") for line in near.splitlines()[1:4]]
    assert first.startswith("#2 POST /v1/tickets/xd_aisha_khan_parking/resolve -> 200")
    assert second.startswith("#1 GET /v1/tickets/xd_aisha_khan_parking -> 200 (getTicket)")
    assert third.startswith("#3 GET /v1/models -> 200")
    assert "the mock received no request in this test" in text


# -- W2, W3: the strict-requests mode -----------------------------------------------------------

STRICT_TESTS = """
    import pytest

    def test_a_405(mock_api):
        assert mock_api.client().delete("/v1/models").status_code == 405

    def test_an_unknown_route(mock_api):
        assert mock_api.client().get("/v1/nothing-here").status_code == 404

    def test_a_missing_record_is_not_unexpected(mock_api):
        assert mock_api.client().get("/v1/tickets/tk_nobody").status_code == 404

    def test_a_planted_fault_is_not_unexpected(mock_api):
        mock_api.fault(method="GET", path="/v1/models", status=503)
        assert mock_api.client().get("/v1/models").status_code == 503

    @pytest.mark.mock_api(strict_requests=False)
    def test_turned_off(mock_api):
        assert mock_api.client().delete("/v1/models").status_code == 405
"""


@pytest.mark.parametrize("how", ["option", "ini", "marker"])
def test_strict_requests_fails_a_test_on_a_405(pytester: pytest.Pytester, control: str,
                                               how: str) -> None:
    source = STRICT_TESTS
    args: list[str] = []
    if how == "option":
        args = ["--mock-api-strict-requests"]
    elif how == "ini":
        pytester.makeini("[pytest]\nmock_api_strict_requests = true\n")
    else:
        source = "\n".join(line.replace("    def test_a_", "    @pytest.mark.mock_api("
                                        "strict_requests=True)\n    def test_a_").replace(
            "    def test_an_", "    @pytest.mark.mock_api(strict_requests=True)\n"
                               "    def test_an_") for line in source.splitlines())
    result = run(pytester, textwrap.dedent(source), *args)
    result.assert_outcomes(passed=5, errors=2)
    text = result.stdout.str()
    assert "#1 DELETE /v1/models -> 405" in text
    assert "#1 GET /v1/nothing-here -> 404 (no operation)" in text
    assert "tk_nobody" not in text.split("short test summary")[0].split("ERROR at teardown")[-1]


def test_strict_requests_is_off_by_default(pytester: pytest.Pytester) -> None:
    result = run(pytester, textwrap.dedent(STRICT_TESTS))
    result.assert_outcomes(passed=5)


# -- W4, W5: stubs ------------------------------------------------------------------------------

def test_a_stub_answers_once_then_the_state_resumes(pytester: pytest.Pytester,
                                                   control: str) -> None:
    result = run(pytester, """
        import pytest

        def test_once(mock_api):
            client = mock_api.client()
            odd = {"data": {"id": "xd_aisha_khan_parking", "status": "new"}}
            real = client.get("/v1/tickets/xd_aisha_khan_parking").json()
            rule = mock_api.stub("GET", "/v1/tickets/{id}", json=real | {"data": {
                **real["data"], "subject": "what production sent yesterday"}},
                headers={"X-Stubbed": "yes"})
            assert rule.stub and not rule.off_contract
            first = client.get("/v1/tickets/xd_aisha_khan_parking")
            assert first.status_code == 200 and first.headers["x-stubbed"] == "yes"
            assert first.json()["data"]["subject"] == "what production sent yesterday"
            second = client.get("/v1/tickets/xd_aisha_khan_parking")
            assert second.json() == real and "x-stubbed" not in second.headers
            _, stubbed, own = mock_api.calls("getTicket")
            assert stubbed.stub and not stubbed.off_contract and stubbed.fault.startswith("stub #")
            assert not own.stub and own.fault is None

        def test_n_times_and_a_documented_error(mock_api):
            client = mock_api.client()
            mock_api.stub("POST", "/v1/tickets/{id}/resolve", status=429,
                          json={"error": "slow down"}, headers={"Retry-After": "30"}, times=2)
            answers = [client.post("/v1/tickets/xd_aisha_khan_parking/resolve")
                       for _ in range(3)]
            assert [a.status_code for a in answers] == [429, 429, 200]
            assert answers[0].json() == {"error": "slow down"}
            assert answers[1].headers["retry-after"] == "30"
            assert mock_api.get("tickets", "xd_aisha_khan_parking")["status"] == "resolved"
    """)
    result.assert_outcomes(passed=2)


def test_an_off_contract_stub_is_refused_unless_validate_false(pytester: pytest.Pytester,
                                                              control: str) -> None:
    result = run(pytester, """
        import pytest

        def test_refused(mock_api):
            with pytest.raises(ValueError, match=r"field 'json': not an answer getTicket may "
                               r"give with 200: .*validate=false"):
                mock_api.stub("GET", "/v1/tickets/{id}", json={"data": {"id": 7}})
            with pytest.raises(ValueError, match=r"field 'status': 418 is not documented for "
                               r"listModels"):
                mock_api.stub("GET", "/v1/models", status=418, json={"error": "teapot"})
            with pytest.raises(ValueError, match=r"header Retry-After is missing"):
                mock_api.stub("GET", "/v1/models", status=429, json={"error": "slow"})
            with pytest.raises(ValueError, match=r"field 'path': .*/v1/ticket"):
                mock_api.stub("GET", "/v1/ticket/{id}", json={}, validate=False)
            with pytest.raises(ValueError, match=r"field 'path': a stub checked"):
                mock_api.stub("GET", "/v1/*", json={})
            # nothing was added: the state answers
            got = mock_api.client().get("/v1/tickets/xd_aisha_khan_parking")
            assert got.status_code == 200 and got.json()["data"]["id"] == "xd_aisha_khan_parking"

        def test_validate_false(mock_api):
            rule = mock_api.stub("GET", "/v1/tickets/{id}", json={"data": {"id": 7}},
                                 validate=False)
            assert rule.off_contract
            got = mock_api.client().get("/v1/tickets/xd_aisha_khan_parking")
            assert got.json() == {"data": {"id": 7}}  # sent as given, not self-checked
            [entry] = mock_api.calls("getTicket")
            assert entry.off_contract and entry.fault.endswith("(200, off-contract)")
    """, "--mock-api-strict-requests")
    result.assert_outcomes(passed=2)


def test_stub_over_the_control_api_by_hand(mock: Any, mock_control: Any) -> None:
    """The control operation itself (addStub), both transports (and, under
    MOCK_TEST_SHARED_STATE=1, on a state shared through Redis): listed with the faults,
    answering in its session only, then the state answers."""
    found = mock_control.call("addStub", body={"method": "GET", "path": "/v1/models",
                                               "json": {"data": []}, "count": 2})["data"]
    assert found["stub"] is True and found["json"] == {"data": []}
    assert found["count"] == 2 and found["status"] == 200
    [listed] = mock_control.call("listFaults")["data"]
    assert listed["id"] == found["id"] and listed["off_contract"] is False
    with TestClient(create_app(mock=mock), headers=auth()) as client:
        session = f"/sessions/{mock_control.session}"
        assert client.get("/v1/models").json()["data"] != []  # another session: its own
        answers = [client.get(f"{session}/v1/models").json()["data"] for _ in range(3)]
    assert answers[:2] == [[], []] and answers[2] != []
    assert mock_control.call("listFaults")["data"] == []


# -- W6: without pytest -------------------------------------------------------------------------

def _run_python(tmp_path: Path, source: str, *args: str) -> subprocess.CompletedProcess[str]:
    """`source` as a plain script in a fresh interpreter (no pytest running, no plugin)."""
    script = tmp_path / "script.py"
    script.write_text(textwrap.dedent(source))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])}
    return subprocess.run([sys.executable, *args, str(script)], capture_output=True, text=True,
                          timeout=120, env=env, cwd=tmp_path)


def test_the_context_manager_in_a_plain_script(tmp_path: Path) -> None:
    done = _run_python(tmp_path, """
        import json, sys, urllib.request
        from mockserver.testing.api import MockApi

        with MockApi.start(clock="2027-01-01T00:00:00Z", rate_limit=50) as api:
            assert api.clock.now() == "2027-01-01T00:00:00.000Z"
            # any HTTP client, over loopback
            request = urllib.request.Request(api.base_url + "/v1/models",
                                             headers=api.headers())
            models = json.load(urllib.request.urlopen(request))
            # the in-process httpx client, as the fixture gives it
            client = api.client()
            api.stub("GET", "/v1/tickets/{id}", status=404, json={"error": "gone"})
            assert client.get("/v1/tickets/xd_aisha_khan_parking").status_code == 404
            assert client.get("/v1/tickets/xd_aisha_khan_parking").status_code == 200
            api.assert_called("getTicket", times=2)
            api.assert_called("GET /v1/models", times=1)
            first = api.base_url
        with MockApi.start() as again:  # a fresh mock: nothing of the first
            assert again.requests() == [] and again.clock.now() == "2026-11-01T12:00:00.000Z"
        print("models", len(models["data"]), "first", first)
    """)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("models ") and "/sessions/" in done.stdout


def test_the_decorator_under_unittest(tmp_path: Path) -> None:
    done = _run_python(tmp_path, """
        import unittest
        from mockserver.testing.api import MockApi

        class Tickets(unittest.TestCase):
            @MockApi.start()
            def test_resolve(self, mock_api):
                client = mock_api.client()
                done = client.post("/v1/tickets/xd_aisha_khan_parking/resolve")
                self.assertEqual(done.status_code, 200)
                mock_api.assert_called("resolveTicket", times=1)

            @MockApi.start()
            def test_fresh_per_call(self, mock_api):
                got = mock_api.get("tickets", "xd_aisha_khan_parking")
                self.assertEqual(got["status"], "new")  # the other test's resolve is gone
                self.assertEqual(mock_api.requests(), [])

            @MockApi.start(strict_requests=True)
            def test_strict(self, mock_api):
                mock_api.client().delete("/v1/models")  # 405: fails when the mock closes

        if __name__ == "__main__":
            unittest.main()
    """)
    assert done.returncode == 1, done.stderr
    assert "Ran 3 tests" in done.stderr and "FAILED (failures=1)" in done.stderr
    assert "FAIL: test_strict" in done.stderr and "#1 DELETE /v1/models -> 405" in done.stderr


def test_start_refuses_what_it_does_not_know() -> None:
    with pytest.raises(TypeError, match=r"unknown \['base_url'\]; known: fixtures, "):
        MockApi.start(base_url="http://example.test")


def test_the_decorator_on_a_pytest_test(pytester: pytest.Pytester) -> None:
    """Its own mock, not the fixture's: pytest does not see `mock_api` as a fixture there."""
    result = run(pytester, """
        from mockserver.testing.api import MockApi

        @MockApi.start(clock="2030-01-01T00:00:00Z")
        def test_decorated(mock_api):
            assert mock_api.clock.now() == "2030-01-01T00:00:00.000Z"
    """, "--setup-show")
    result.assert_outcomes(passed=1)
    assert "mock_api" not in result.stdout.str().split("test_inner.py::test_decorated")[0]


# -- W7: HAR 1.2 export ---------------------------------------------------------------------------

def _record(extra: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"type": "object", "required": ["name", "value"],
            "properties": {"name": {"type": "string"}, "value": {"type": "string"},
                           "comment": {"type": "string"}, **(extra or {})}}


# The HAR 1.2 specification (http://www.softwareishard.com/blog/har-12-spec/) as a JSON schema:
# every object, its required fields and their types (after the npm package har-schema).
HAR_SCHEMA: dict[str, Any] = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "type": "object", "required": ["log"],
    "definitions": {
        "creator": {"type": "object", "required": ["name", "version"],
                    "properties": {"name": {"type": "string"}, "version": {"type": "string"},
                                   "comment": {"type": "string"}}},
        "record": _record(),
        "cookie": _record({"path": {"type": "string"}, "domain": {"type": "string"},
                           "expires": {"type": ["string", "null"], "format": "date-time"},
                           "httpOnly": {"type": "boolean"}, "secure": {"type": "boolean"}}),
        "postData": {"type": "object", "required": ["mimeType"],
                     "properties": {"mimeType": {"type": "string"}, "text": {"type": "string"},
                                    "params": {"type": "array"},
                                    "comment": {"type": "string"}}},
        "content": {"type": "object", "required": ["size", "mimeType"],
                    "properties": {"size": {"type": "integer"},
                                   "compression": {"type": "integer"},
                                   "mimeType": {"type": "string"}, "text": {"type": "string"},
                                   "encoding": {"type": "string"},
                                   "comment": {"type": "string"}}},
        "request": {
            "type": "object",
            "required": ["method", "url", "httpVersion", "cookies", "headers", "queryString",
                         "headersSize", "bodySize"],
            "properties": {
                "method": {"type": "string"}, "url": {"type": "string", "format": "uri"},
                "httpVersion": {"type": "string"},
                "cookies": {"type": "array", "items": {"$ref": "#/definitions/cookie"}},
                "headers": {"type": "array", "items": {"$ref": "#/definitions/record"}},
                "queryString": {"type": "array", "items": {"$ref": "#/definitions/record"}},
                "postData": {"$ref": "#/definitions/postData"},
                "headersSize": {"type": "integer"}, "bodySize": {"type": "integer"},
                "comment": {"type": "string"}}},
        "response": {
            "type": "object",
            "required": ["status", "statusText", "httpVersion", "cookies", "headers", "content",
                         "redirectURL", "headersSize", "bodySize"],
            "properties": {
                "status": {"type": "integer"}, "statusText": {"type": "string"},
                "httpVersion": {"type": "string"},
                "cookies": {"type": "array", "items": {"$ref": "#/definitions/cookie"}},
                "headers": {"type": "array", "items": {"$ref": "#/definitions/record"}},
                "content": {"$ref": "#/definitions/content"},
                "redirectURL": {"type": "string"},
                "headersSize": {"type": "integer"}, "bodySize": {"type": "integer"},
                "comment": {"type": "string"}}},
        "timings": {
            "type": "object", "required": ["send", "wait", "receive"],
            "properties": {k: {"type": "number", "minimum": -1} for k in (
                "dns", "connect", "blocked", "send", "wait", "receive", "ssl")}},
        "entry": {
            "type": "object",
            "required": ["startedDateTime", "time", "request", "response", "cache", "timings"],
            "properties": {
                "pageref": {"type": "string"},
                "startedDateTime": {"type": "string", "format": "date-time"},
                "time": {"type": "number", "minimum": 0},
                "request": {"$ref": "#/definitions/request"},
                "response": {"$ref": "#/definitions/response"},
                "cache": {"type": "object"}, "timings": {"$ref": "#/definitions/timings"},
                "serverIPAddress": {"type": "string"}, "connection": {"type": "string"},
                "comment": {"type": "string"}}},
    },
    "properties": {"log": {
        "type": "object", "required": ["version", "creator", "entries"],
        "properties": {
            "version": {"type": "string", "const": "1.2"},
            "creator": {"$ref": "#/definitions/creator"},
            "browser": {"$ref": "#/definitions/creator"},
            "pages": {"type": "array"},
            "entries": {"type": "array", "items": {"$ref": "#/definitions/entry"}},
            "comment": {"type": "string"}}}},
}


def check_har(document: Any) -> None:
    """The document against the HAR 1.2 schema (formats checked), then read by haralyzer."""
    import jsonschema
    from haralyzer import HarParser

    validator = jsonschema.Draft7Validator(HAR_SCHEMA,
                                           format_checker=jsonschema.Draft7Validator.FORMAT_CHECKER)
    errors = sorted(validator.iter_errors(document), key=lambda e: list(e.absolute_path))
    assert not errors, [f"{list(e.absolute_path)}: {e.message}" for e in errors[:5]]
    parsed = HarParser(document)
    assert len(parsed.pages) == 1  # haralyzer's page of entries without a pageref
    assert len(parsed.pages[0].entries) == len(document["log"]["entries"])


def test_har_export_validates_and_opens(pytester: pytest.Pytester, control: str) -> None:
    out = pytester.path / "requests.har"
    result = run(pytester, f"""
        def test_traffic(mock_api):
            client = mock_api.client()
            client.get("/v1/tickets", params={{"workspace_id": mock_api.workspaces.primary,
                                              "limit": 2}})
            client.post("/v1/tickets/xd_aisha_khan_parking/notes", json={{"body": "héllo"}})
            mock_api.stub("GET", "/v1/models", json={{"odd": True}}, validate=False)
            client.get("/v1/models")
            client.delete("/v1/models")
            whole = mock_api.export_har({str(out)!r})
            posts = mock_api.export_har(method="POST")
            assert len(whole["log"]["entries"]) == 4 and len(posts["log"]["entries"]) == 1
    """)
    result.assert_outcomes(passed=1)
    text = out.read_text(encoding="utf-8")
    assert "mock-write-token" not in text  # redacted as the journal redacts it
    document = json.loads(text)
    check_har(document)
    get, post, stubbed, refused = document["log"]["entries"]
    assert get["request"]["url"].endswith("/v1/tickets?workspace_id=ws_harborview&limit=2")
    assert "/sessions/" in get["request"]["url"]  # where the test's session is served
    assert {"name": "limit", "value": "2"} in get["request"]["queryString"]
    assert get["response"]["status"] == 200 and get["response"]["statusText"] == "OK"
    assert json.loads(get["response"]["content"]["text"])["data"]
    auth_value = next(h["value"] for h in get["request"]["headers"]
                      if h["name"] == "authorization")
    assert auth_value.startswith("Bearer mock") and auth_value != "Bearer mock-write-token"
    assert json.loads(post["request"]["postData"]["text"]) == {"body": "héllo"}
    assert post["response"]["status"] == 201
    assert post["comment"] == "mock clock 2026-11-01T12:00:00.000Z; createTicketNote"
    assert json.loads(stubbed["response"]["content"]["text"]) == {"odd": True}
    assert stubbed["comment"].endswith("stub #1 (200, off-contract)")
    assert refused["response"]["status"] == 405 and "no operation" in refused["comment"]
    assert document["log"]["creator"]["name"] == "workspace-api-mock"


def test_har_over_the_control_api(mock: Any, mock_control: Any) -> None:
    """`GET /__mock__/requests?format=har`, both transports: the session's journal only,
    filtered as the JSON journal is."""
    with TestClient(create_app(mock=mock), headers=auth()) as client:
        client.get("/v1/models")  # the default session: not in the control's session's HAR
        session = f"/sessions/{mock_control.session}"
        client.get(f"{session}/v1/models")
        client.get(f"{session}/v1/tickets/xd_aisha_khan_parking")
    whole = mock_control.call("listRecordedRequests", query={"format": "har"})
    check_har(whole)
    assert [e["request"]["url"].split("/v1/")[1] for e in whole["log"]["entries"]] == [
        "models", "tickets/xd_aisha_khan_parking"]
    assert mock_control.session in whole["log"]["entries"][0]["request"]["url"]
    tickets = mock_control.call("listRecordedRequests",
                                query={"format": "har", "path": "/v1/tickets"})
    assert len(tickets["log"]["entries"]) == 1
    plain = mock_control.call("listRecordedRequests")
    assert len(plain["data"]) == 2  # the default format is the journal's JSON


# -- W8 to W10: coverage of the API by a suite ----------------------------------------------------

DOWNSTREAM = ROOT / "examples" / "downstream"
# An independent count: every test's journal as the test saw it, written as JSON lines.
JOURNAL_DUMP = """
import json, pathlib, pytest

@pytest.fixture(autouse=True)
def _dump_journal(mock_api):
    yield
    with pathlib.Path("journal.jsonl").open("a") as out:
        for r in mock_api.requests():
            out.write(json.dumps({"operation_id": r.operation_id, "status": r.status,
                                  "fault": r.fault, "query": r.query}) + "\\n")
"""


def _downstream(pytester: pytest.Pytester) -> None:
    for name in ("ticketdesk.py", "test_ticketdesk.py"):
        (pytester.path / name).write_text((DOWNSTREAM / name).read_text())
    pytester.makeini("[pytest]\nmock_api_self_check = true\n")
    add_conftest(pytester, JOURNAL_DUMP)


def test_the_coverage_of_the_downstream_example(pytester: pytest.Pytester) -> None:
    from mockserver.openapi.spec import load_spec

    _downstream(pytester)
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider",
                                          "--mock-api-coverage=reports/api")
    result.assert_outcomes(passed=5)
    report = json.loads((pytester.path / "reports" / "api.json").read_text())
    markdown = (pytester.path / "reports" / "api.md").read_text()
    journal = [json.loads(line) for line in
               (pytester.path / "journal.jsonl").read_text().splitlines()]
    # the numbers, counted from the journal
    spec = load_spec()
    called: dict[str, list[int]] = {}
    for entry in journal:
        called.setdefault(entry["operation_id"], []).append(entry["status"])
    assert report["requests"] == len(journal)
    by_id = {o["operation_id"]: o for o in report["operations"]}
    assert {k for k, o in by_id.items() if o["calls"]} == set(called)
    for operation_id, statuses in called.items():
        op = by_id[operation_id]
        documented = sorted(spec.by_id[operation_id].responses)
        assert op["calls"] == len(statuses)
        assert op["statuses"]["seen"] == {str(s): statuses.count(s) for s in sorted(set(statuses))}
        assert op["statuses"]["never_seen"] == [s for s in documented if s not in statuses]
        row = next(line for line in markdown.splitlines() if f"| `{operation_id}` |" in line)
        assert f"| {len(statuses)} |" in row
        assert ", ".join(map(str, op["statuses"]["never_seen"])) in row
    totals = report["totals"]
    assert totals["operations"] == {"covered": len(called), "total": len(spec.operations),
                                    "percent": round(100 * len(called) / len(spec.operations), 1)}
    assert totals["statuses"]["covered"] == sum(
        len(set(s) & set(spec.by_id[o].responses)) for o, s in called.items())
    # the 503 only a fault gave, the filter sent, the enum value sent
    faulted = {e["status"] for e in journal if e["fault"]}
    assert faulted == {503}
    resolve = by_id["resolveTicket"]
    assert resolve["statuses"]["injected"] == {"503": 1}
    assert resolve["statuses"]["undocumented_seen"] == [503]
    assert "503 x1 (injected, undocumented)" in markdown
    tickets = by_id["listTickets"]
    assert "status" in tickets["parameters"]["sent"]
    assert tickets["enums"]["query.status"]["sent"] == ["open"]
    assert "## Operations never called" in markdown and "- `listModels` `GET /v1/models`" in markdown
    assert f"**{report['percent']}%**" in markdown
    result.stdout.fnmatch_lines([f"*mock_api coverage: {report['percent']}% of the API*"])


def test_coverage_fail_under(pytester: pytest.Pytester) -> None:
    _downstream(pytester)
    under = pytester.runpytest_inprocess("-p", "no:cacheprovider", "--mock-api-coverage",
                                         "--mock-api-coverage-fail-under=50")
    assert under.ret == 1
    under.assert_outcomes(passed=5)
    under.stdout.fnmatch_lines(["*FAIL: mock_api coverage *% is under "
                                "--mock-api-coverage-fail-under=50*"])
    assert (pytester.path / "mock-api-coverage.md").exists()
    over = pytester.runpytest_inprocess("-p", "no:cacheprovider", "--mock-api-coverage",
                                        "--mock-api-coverage-fail-under=0.5")
    assert over.ret == 0


def test_coverage_under_xdist_is_one_report(pytester: pytest.Pytester) -> None:
    _downstream(pytester)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-n", "2",
                                           "--mock-api-coverage=cov")
    result.assert_outcomes(passed=5)
    report = json.loads((pytester.path / "cov.json").read_text())
    journal = (pytester.path / "journal.jsonl").read_text().splitlines()
    assert report["requests"] == len(journal) > 0


def test_coverage_over_the_control_api(mock: Any, mock_control: Any) -> None:
    """`GET /__mock__/coverage` on a server: the session's journal; a status only a stub gave
    is listed as injected; Markdown on request."""
    mock_control.call("addStub", body={"method": "GET", "path": "/v1/models", "status": 401,
                                       "json": {"error": "token expired"}})
    with TestClient(create_app(mock=mock), headers=auth()) as client:
        session = f"/sessions/{mock_control.session}"
        assert client.get(f"{session}/v1/models").status_code == 401
        assert client.get(f"{session}/v1/models").status_code == 200
        client.get(f"{session}/v1/tickets", params={"workspace_id": "ws_harborview",
                                                    "status": "pending"})
        client.get(f"{session}/v1/nowhere")
    report = mock_control.call("getCoverage")
    by_id = {o["operation_id"]: o for o in report["operations"]}
    models = by_id["listModels"]["statuses"]
    assert models["seen"] == {"200": 1, "401": 1} and models["only_injected"] == [401]
    assert by_id["listTickets"]["enums"]["query.status"]["sent"] == ["pending"]
    assert by_id["listTickets"]["parameters"]["sent"] == ["workspace_id", "status"]
    received = by_id["listTickets"]["enums"]["response.data[].status"]["received"]
    assert received == ["pending"]  # the state's own answer, filtered
    assert report["unmatched"] == [{"method": "GET", "path": "/v1/nowhere", "status": 404,
                                    "count": 1}]
    assert report["requests"] == 4 and report["session"] == mock_control.session
    text = mock_control.call("getCoverage", query={"format": "markdown"})
    assert text["percent"] == report["percent"]
    assert "| `listModels` | `GET /v1/models` | 2 | 200 x1, 401 x1 (injected) |" in text["markdown"]


@pytest.mark.parametrize(("body", "named"), [
    ({"method": "GET", "path": "/v1/models", "status": 101, "validate": False},
     "status: 101 is not a final answer"),
    ({"method": "DELETE", "path": "/v1/agents/{id}", "status": 204, "json": {"a": 1},
      "validate": False}, "json: a 204 answer has no body"),
    ({"method": "GET", "path": "/v1/models", "headers": {"Bad Name": "x"}, "validate": False},
     "field 'headers': \"Bad Name\""),
    ({"method": "GET", "path": "/v1/models", "drop": True}, "drop"),
    ({"method": "FETCH", "path": "/v1/models"}, "field 'method'"),
    ({"path": "/v1/models"}, "method"),
])
def test_a_stub_that_cannot_be_sent_is_refused(mock: Any, mock_control: Any,
                                               body: dict[str, Any], named: str) -> None:
    """400 naming what is wrong, nothing added (an answer the server could not send would be
    a 500 or a broken connection later)."""
    from mockserver.standalone.operations import ControlError

    with pytest.raises(ControlError) as refused:
        mock_control.call("addStub", body=body)
    assert refused.value.status == 400 and named in refused.value.message
    assert mock_control.call("listFaults")["data"] == []
