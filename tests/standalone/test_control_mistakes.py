"""Where a person types control calls: bodies read as JSON whatever their Content-Type, and
fault rules that could never fire refused where they are made (decisions U1, U2)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from conftest import auth
from starlette.testclient import TestClient

from mockserver.engine.app import MockApp
from mockserver.engine.faults import fault_target_problem
from mockserver.standalone.server import create_app

FORM = "application/x-www-form-urlencoded"  # what `curl -d` sends


@pytest.fixture
def api(mock: MockApp) -> Iterator[TestClient]:
    with TestClient(create_app(mock=mock), headers=auth()) as client:
        yield client


@pytest.mark.parametrize("content_type", [FORM, "text/plain", None, "application/json"])
def test_a_control_body_is_json_whatever_its_content_type(api: TestClient,
                                                          content_type: str | None) -> None:
    headers = {"Content-Type": content_type} if content_type else {}
    response = api.post("/__mock__/clock", content=b'{"advance_seconds":60}', headers=headers)
    assert response.status_code == 200, response.text
    response = api.post("/__mock__/faults", headers=headers,
                        content=b'{"method":"GET","path":"/v1/agents","status":503,"count":1}')
    assert response.status_code == 201, response.text
    assert api.get("/v1/agents", params={"workspace_id": "ws_harborview"}).status_code == 503


@pytest.mark.parametrize("content_type", [FORM, "text/plain", None])
def test_a_control_body_that_is_not_json_is_named(api: TestClient,
                                                  content_type: str | None) -> None:
    headers = {"Content-Type": content_type} if content_type else {}
    response = api.post("/__mock__/clock", content=b"advance_seconds=60", headers=headers)
    assert response.status_code == 400
    error = response.json()["error"]
    assert "not valid JSON" in error and repr(content_type or "no Content-Type") in error


def test_the_api_keeps_the_vendors_content_type_rule(api: TestClient) -> None:
    response = api.post("/v1/tickets/xd_aisha_khan_parking/notes", content=b'{"body":"hi"}',
                        headers={"Content-Type": FORM})
    assert response.status_code == 400
    assert "Content-Type" in response.json()["error"]


# -- faults that could never fire --------------------------------------------------------------

@pytest.mark.parametrize(("body", "field", "named"), [
    ({"path": "/v1/contact/{id}", "status": 503}, "path", "'/v1/contacts/{id}'"),
    ({"path": "/v2/*", "status": 503}, "path", "nearest operation path"),
    ({"method": "GTE", "path": "/v1/agents", "status": 503}, "method", "one of DELETE, GET"),
    ({"method": "DELETE", "path": "/v1/models", "status": 503}, "method", "it answers GET"),
])
def test_a_fault_that_matches_no_operation_is_refused(api: TestClient, body: dict[str, object],
                                                      field: str, named: str) -> None:
    response = api.post("/__mock__/faults", json=body)
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert f"body field '{field}'" in error and named in error
    assert api.get("/__mock__/faults").json()["data"] == []  # nothing stored


@pytest.mark.parametrize("path", [
    "/v1/agents", "/v1/tickets/{id}/resolve", "/v1/tickets/xd_aisha_khan_parking/resolve",
    "/v1/*", "/v1/tick*", "/v1/tickets/*", "/v1/tickets/", "/v1",
])
def test_faults_that_can_fire_are_kept(path: str) -> None:
    routes = [("GET", "/v1"), ("GET", "/v1/agents"), ("POST", "/v1/tickets/{ticket_id}/resolve"),
              ("GET", "/v1/tickets")]
    assert fault_target_problem(routes, None, path) is None
    assert fault_target_problem(routes, "get", "/v1/agents") is None


def test_the_plugin_refuses_a_fault_that_can_never_fire(mock: MockApp) -> None:
    from mockserver.testing.plugin import MockApi, MockApiConfig, Tokens, Workspaces

    api = MockApi(MockApiConfig(), base_url="http://127.0.0.1:1", mock=mock,
                  tokens=Tokens(None, None, None, None), workspaces=Workspaces(None, None, None))
    with pytest.raises(ValueError, match=r"nearest operation path is '/v1/contacts/\{id\}'"):
        api.fault(path="/v1/contact/{id}", status=503)
    with pytest.raises(ValueError, match="'GTE' is not a method"):
        api.fault(method="GTE", path="/v1/agents", status=503)
    assert mock.state.faults.rules == []
    api.fault(method="GET", path="/v1/agents", status=503)
    assert len(mock.state.faults.rules) == 1


# -- the journal of an injected fault ------------------------------------------------------------

def test_a_faults_entry_names_its_operation_and_wall_time(api: TestClient) -> None:
    import time

    api.post("/__mock__/faults", json={"method": "GET", "path": "/v1/models", "status": 503})
    api.post("/__mock__/clock", json={"advance_seconds": 86400})
    before = time.time()
    assert api.get("/v1/models").status_code == 503
    [entry] = api.get("/__mock__/requests").json()["data"][-1:]
    assert entry["operation_id"] == "listModels" and entry["fault"].startswith("fault #")
    assert entry["time"] == "2026-11-02T12:00:00.000Z"  # the mock clock, a day on
    from mockserver.engine.clock import parse_timestamp
    assert abs(parse_timestamp(entry["wall_time"]) / 1000 - before) < 60
