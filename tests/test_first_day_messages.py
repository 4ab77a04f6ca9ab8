"""Refusals that say all of it (issue 43, the small ones; decision U19): an enum error lists
every allowed value, a body missing several required fields names each, and two fields
that exclude each other are named together."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from conftest import auth
from starlette.testclient import TestClient

from mockserver.engine.app import MockApp
from mockserver.standalone.server import create_app


@pytest.fixture
def api(mock: MockApp) -> Iterator[TestClient]:
    with TestClient(create_app(mock=mock), headers=auth()) as client:
        yield client


def test_an_enum_error_lists_every_value(api: TestClient) -> None:
    refused = api.get("/v1/tickets", params={"workspace_id": "ws_harborview", "status": "bogus"})
    assert refused.status_code == 400
    assert refused.json()["error"] == ("query parameter 'status': \"bogus\" is not one of "
                                       '"open", "new", "pending", "resolved", "closed"')


def test_a_body_missing_several_required_fields_names_each(api: TestClient) -> None:
    refused = api.post("/v1/custom-tools", json={"workspace_id": "ws_harborview"})
    assert refused.status_code == 400
    assert refused.json()["error"] == ('request body: "name", "language" and "code" are '
                                       "required properties")
    one = api.post("/v1/custom-tools", json={"workspace_id": "ws_harborview", "name": "t",
                                             "language": "python"})
    assert one.json()["error"] == 'request body: "code" is a required property'


def test_fields_that_exclude_each_other_are_named(api: TestClient) -> None:
    refused = api.post("/__mock__/clock", json={"now": "2026-11-01T12:00:00Z",
                                                "advance_seconds": 1})
    assert refused.status_code == 400
    assert refused.json()["error"] == ('request body: "advance_seconds" and "now" cannot be '
                                       "sent together (send one of them)")
