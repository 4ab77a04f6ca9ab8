"""Issue 14: never stricter than the real service.

Unknown query parameters are ignored by default (and reported), refused in strict mode;
no response carries an internal (`_`) field; an unexpected error answers 500 `{"error"}` and is
logged; probability faults repeat after reset; browser noise stays out of the journal.
"""

from __future__ import annotations

import io
import logging
from collections.abc import Iterator

import pytest
from conftest import FROZEN_AT, auth
from starlette.testclient import TestClient

from mockserver.data.fixtures import load_dataset
from mockserver.data.tables import TABLES
from mockserver.engine.app import Config, MockApp
from mockserver.engine.requestlog import configure_logging
from mockserver.openapi.spec import load_spec
from mockserver.standalone.server import create_app

WS = "ws_harborview"
EXTRAS = "contact_id=ph_aisha_khan&_=1732300000000&trace_id=abc"


@pytest.fixture
def strict(mock: MockApp) -> Iterator[MockApp]:
    mock.config.strict_params = True
    try:
        yield mock
    finally:
        mock.config.strict_params = False


# -- default mode: ignored, same answer -----------------------------------------------------------

@pytest.mark.parametrize("url", [
    f"/v1/tickets?workspace_id={WS}",
    f"/v1/contacts?workspace_id={WS}",
    f"/v1/conversations?workspace_id={WS}&limit=3",
    "/v1/conversations/ph_aisha_khan/messages",
    "/v1/models",
])
def test_unknown_parameters_change_nothing(client: TestClient, url: str) -> None:
    plain = client.get(url)
    sep = "&" if "?" in url else "?"
    extra = client.get(f"{url}{sep}{EXTRAS}")
    assert plain.status_code == extra.status_code == 200, extra.text
    # The same body, next_cursor included: ignored parameters are not part of the cursor.
    assert extra.json() == plain.json()


def test_following_a_cursor_with_extras(client: TestClient) -> None:
    first = client.get(f"/v1/tickets?workspace_id={WS}&limit=2&_=1").json()
    assert first["next_cursor"]
    # A cache buster that changes on every call does not break the cursor.
    second = client.get(f"/v1/tickets?workspace_id={WS}&limit=2&_=2"
                        f"&cursor={first['next_cursor']}")
    assert second.status_code == 200, second.text
    assert {t["id"] for t in second.json()["data"]}.isdisjoint(t["id"] for t in first["data"])


def test_documented_parameters_are_still_checked(client: TestClient) -> None:
    for query, name in [("limit=500", "limit"), ("limit=abc", "limit"),
                        ("status=opened", "status"), ("limit=1&limit=2", "more than once")]:
        response = client.get(f"/v1/tickets?workspace_id={WS}&{query}&_=1")
        assert response.status_code == 400 and name in response.json()["error"], query
    missing = client.get("/v1/tickets?_=1")
    assert missing.status_code == 400 and "workspace_id" in missing.json()["error"]


def test_a_repeated_unknown_parameter_is_ignored(client: TestClient, mock: MockApp) -> None:
    response = client.get(f"/v1/tickets?workspace_id={WS}&_=1&_=2&tag=a&tag=b")
    assert response.status_code == 200
    assert mock.journal.entries()[-1].ignored_params == ("_", "tag")


def test_ignored_parameters_are_journaled_and_logged(client: TestClient, mock: MockApp) -> None:
    stream = io.StringIO()
    handler = configure_logging("json", stream=stream)
    try:
        client.get(f"/v1/tickets?workspace_id={WS}&{EXTRAS}")
        client.get(f"/v1/tickets?workspace_id={WS}")
    finally:
        logging.getLogger("mockserver.requests").removeHandler(handler)
    with_extras, plain = mock.journal.entries()[-2:]
    assert with_extras.ignored_params == ("contact_id", "_", "trace_id")
    assert with_extras.to_dict()["ignored_params"] == ["contact_id", "_", "trace_id"]
    assert plain.ignored_params == ()
    lines = stream.getvalue().splitlines()
    assert '"ignored_params":["contact_id","_","trace_id"]' in lines[-2]
    assert "ignored_params" not in lines[-1]
    listed = client.get("/__mock__/requests?path=/v1/tickets").json()["data"]
    assert listed[-2]["ignored_params"] == ["contact_id", "_", "trace_id"]


def test_a_read_answered_from_the_cache_journals_what_it_ignored(client: TestClient,
                                                                mock: MockApp) -> None:
    # Repeated, each read is answered from the response cache the second time (when its
    # answer was kept): each journals the unknown parameters it carried, and only those.
    for _ in range(2):
        client.get(f"/v1/tickets?workspace_id={WS}&{EXTRAS}")
        client.get(f"/v1/tickets?workspace_id={WS}")
    assert len(mock.state.cache) >= 1  # the plain read was kept, so answered from it
    extras = ("contact_id", "_", "trace_id")
    assert [e.ignored_params for e in mock.journal.entries()[-4:]] == [extras, (), extras, ()]


def test_text_log_line_names_ignored_parameters(client: TestClient) -> None:
    stream = io.StringIO()
    handler = configure_logging("text", stream=stream)
    try:
        client.get(f"/v1/tickets?workspace_id={WS}&contact_id=x")
    finally:
        logging.getLogger("mockserver.requests").removeHandler(handler)
    assert "ignored_params=contact_id" in stream.getvalue()


# -- strict mode ------------------------------------------------------------------------------------

def test_strict_mode_refuses_naming_the_parameter(client: TestClient, strict: MockApp) -> None:
    for name in ("contact_id", "_", "trace_id"):
        response = client.get(f"/v1/tickets?workspace_id={WS}&{name}=1")
        assert response.status_code == 400
        assert response.json() == {"error": f"unknown query parameter '{name}'"}
    assert client.get(f"/v1/tickets?workspace_id={WS}&limit=2").status_code == 200
    assert strict.journal.entries()[-2].ignored_params == ()  # refused, not ignored


def test_strict_mode_from_the_command_line() -> None:
    from mockserver.cli import build_parser

    assert build_parser().parse_args(["serve", "--strict-params"]).strict_params is True
    assert build_parser().parse_args(["serve"]).strict_params is False


# -- no internal field in any response -------------------------------------------------------------

@pytest.fixture(scope="module")
def probed() -> MockApp:
    """A mock whose every record carries an internal field, as the fixture format allows."""
    spec = load_spec()
    dataset = load_dataset(spec=spec)
    for rows in dataset.tables.values():
        for record in rows.values():
            record["_note"] = "internal"
    return MockApp(Config(self_check=True, frozen_clock=FROZEN_AT, rate_limit=0),
                   dataset=dataset)


def _concrete(mock: MockApp, path: str, table: str | None) -> str | None:
    if "{" not in path:
        return path
    if path.startswith("/v1/workspaces/{id}"):
        return path.replace("{id}", WS)
    if table is None or path.count("{") > 1:
        return None
    rows = [r for r in mock.store.all(table) if r.get("workspace_id", WS) == WS]
    if not rows:
        return None
    key = rows[0][TABLES[table].key]
    return path.split("{")[0] + str(key) + path.split("}", 1)[1]


def test_no_response_carries_an_internal_field(probed: MockApp) -> None:
    answered = set()
    with TestClient(create_app(mock=probed), headers=auth()) as client:
        for op in probed.spec.operations:
            if op.method != "GET":
                continue
            url = _concrete(probed, op.path, op.resource_table)
            if url is None:
                continue
            query = {p.name: (WS if p.name == "workspace_id" else "a")
                     for p in op.parameters if p.location == "query" and p.required}
            response = client.get(url, params=query)
            # Self-check is on: a leaked `_note` would answer 500 naming it.
            assert response.status_code != 500, (op.operation_id, response.text)
            assert "\"_note\"" not in response.text, op.operation_id
            if response.status_code == 200:
                answered.add(op.operation_id)
    assert {"listConversations", "searchConversations", "getConversation",
            "listTickets", "listContacts"} <= answered


def test_the_self_check_refuses_an_internal_field(client: TestClient, mock: MockApp) -> None:
    original = mock.handlers["listModels"]
    mock.handlers["listModels"] = lambda ctx: {"data": [{**m, "_x": 1} for m in
                                                        original(ctx)["data"]]}
    try:
        response = client.get("/v1/models")
    finally:
        mock.handlers["listModels"] = original
    assert response.status_code == 500
    assert "internal field '/data/0/_x'" in response.json()["error"]


# -- unexpected errors ----------------------------------------------------------------------------

def test_an_unexpected_error_answers_500_json_and_is_logged(
    client: TestClient, mock: MockApp, caplog: pytest.LogCaptureFixture,
) -> None:
    def broken(ctx: object) -> object:
        raise KeyError("boom")

    original = mock.handlers["listModels"]
    mock.handlers["listModels"] = broken
    try:
        with caplog.at_level(logging.ERROR, logger="mockserver.errors"):
            response = client.get("/v1/models")
    finally:
        mock.handlers["listModels"] = original
    assert response.status_code == 500
    assert response.headers["content-type"] == "application/json"
    assert response.json() == {"error": "internal error: KeyError: 'boom'"}
    record = next(r for r in caplog.records if r.name == "mockserver.errors")
    assert "GET /v1/models" in record.getMessage() and record.exc_info is not None
    assert mock.journal.entries()[-1].status == 500


# -- faults repeat after reset ---------------------------------------------------------------------

def test_probability_faults_repeat_after_reset(client: TestClient, mock: MockApp) -> None:
    def run() -> list[int]:
        mock.faults.add(path="/v1/models", status=503, probability=0.5, count=None)
        return [client.get("/v1/models").status_code for _ in range(24)]

    first = run()
    assert 200 in first and 503 in first
    mock.reset()
    mock.faults._random.random()  # whatever drew before, reset starts the sequence over
    mock.reset()
    assert run() == first


# -- browser noise ---------------------------------------------------------------------------------

def test_browser_noise_is_not_journaled(client: TestClient, mock: MockApp) -> None:
    assert client.get("/favicon.ico").status_code == 200
    for path in ("/robots.txt", "/apple-touch-icon.png", "/.well-known/appspecific/x.json"):
        assert client.get(path).status_code == 404
    client.get("/no-such-path")
    assert [e.path for e in mock.journal.entries()] == ["/no-such-path"]
