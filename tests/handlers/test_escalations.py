"""Chat escalations: list and filter, assignment, and the pending-only review transition."""

from __future__ import annotations

import pytest
from starlette.testclient import TestClient

from mockserver.engine.app import MockApp

from ._family_seed import (
    ALPINE,
    COLLEAGUE,
    DESERT,
    HARBOR,
    READ,
    WRITE,
    auth,
    escalation,
    token_user_id,
    user,
)


def test_list_is_newest_first_with_a_status_filter(client: TestClient, mock: MockApp) -> None:
    escalation(mock, "t_es_old", HARBOR, "pending", "2026-01-01T00:00:00.000Z")
    escalation(mock, "t_es_new", HARBOR, "pending", "2026-01-03T00:00:00.000Z")
    escalation(mock, "t_es_done", HARBOR, "dismissed", "2026-01-02T00:00:00.000Z")
    escalation(mock, "t_es_alpine", ALPINE, "pending", "2026-01-04T00:00:00.000Z")
    page = client.get("/v1/escalations", params={"workspace_id": HARBOR, "limit": 100}).json()
    ids = [e["id"] for e in page["data"]]
    assert ids.index("t_es_new") < ids.index("t_es_done") < ids.index("t_es_old")
    assert "t_es_alpine" not in ids
    stamps = [e["created_at"] for e in page["data"]]
    assert stamps == sorted(stamps, reverse=True)
    pending = client.get("/v1/escalations", params={"workspace_id": HARBOR, "status": "pending",
                                                     "limit": 100}).json()["data"]
    assert {e["status"] for e in pending} == {"pending"}
    assert "t_es_new" in [e["id"] for e in pending] and "t_es_done" not in \
        [e["id"] for e in pending]
    assert client.get("/v1/escalations", params={"workspace_id": DESERT}).status_code == 403


def test_get_resolves_the_workspace_of_the_escalation(client: TestClient, mock: MockApp) -> None:
    escalation(mock, "t_es_1", ALPINE)
    assert client.get("/v1/escalations/t_es_1").json()["data"]["workspace_id"] == ALPINE
    wrong = client.get("/v1/escalations/t_es_1", params={"workspace_id": HARBOR})
    assert wrong.status_code == 404
    assert client.get("/v1/escalations/t_es_nope").status_code == 404


def test_assign_to_a_member(client: TestClient, mock: MockApp) -> None:
    escalation(mock, "t_es_1", HARBOR)
    member = user(mock, "t_us_ana", [HARBOR], "ana-t@example.com", "Ana", "Lima")
    response = client.post("/v1/escalations/t_es_1/assign", json={"assignee_id": member["id"]})
    assert response.status_code == 200
    assignee = response.json()["data"]["assignee"]
    assert assignee == {"id": "t_us_ana", "name": "Ana Lima", "email": "ana-t@example.com",
                        "picture_url": None}
    assert client.get("/v1/escalations/t_es_1").json()["data"]["assignee"] == assignee
    assert client.get("/v1/escalations/t_es_1").json()["data"]["status"] == "pending"


@pytest.mark.parametrize("assignee_id", ["t_us_alpine_only", "us_does_not_exist"])
def test_assign_refuses_non_members(client: TestClient, mock: MockApp, assignee_id: str) -> None:
    escalation(mock, "t_es_1", HARBOR)
    user(mock, "t_us_alpine_only", [ALPINE], "alp-t@example.com")
    response = client.post("/v1/escalations/t_es_1/assign", json={"assignee_id": assignee_id})
    assert response.status_code == 400
    assert "assignee_id" in response.json()["error"] and assignee_id in response.json()["error"]
    assert client.get("/v1/escalations/t_es_1").json()["data"]["assignee"] is None


def test_assign_needs_write_access(client: TestClient, mock: MockApp) -> None:
    escalation(mock, "t_es_1", HARBOR)
    response = client.post("/v1/escalations/t_es_1/assign", json={"assignee_id": "x"},
                           headers=auth(READ))
    assert response.status_code == 403


def test_resolve_defaults_to_resolved_and_records_the_reviewer(client: TestClient,
                                                               mock: MockApp) -> None:
    escalation(mock, "t_es_1", HARBOR)
    response = client.post("/v1/escalations/t_es_1/resolve")  # the body is optional
    assert response.status_code == 200
    data = response.json()["data"]
    assert data["status"] == "resolved" and data["reviewed_at"] is not None
    reviewer = mock.store.get("users", token_user_id(mock, WRITE))
    assert data["reviewed_by"]["user_id"] == token_user_id(mock, WRITE)
    if reviewer is not None:
        assert data["reviewed_by"]["email"] == reviewer["email"]
        assert data["reviewed_by"]["name"] == f"{reviewer['first_name']} {reviewer['last_name']}"
    assert client.get("/v1/escalations/t_es_1").json()["data"] == data


@pytest.mark.parametrize("status", ["reviewed", "resolved", "dismissed"])
def test_resolve_moves_to_the_requested_status(client: TestClient, mock: MockApp,
                                               status: str) -> None:
    escalation(mock, "t_es_1", HARBOR)
    response = client.post("/v1/escalations/t_es_1/resolve", json={"status": status},
                           headers=auth(COLLEAGUE))
    assert response.json()["data"]["status"] == status
    assert response.json()["data"]["reviewed_by"]["user_id"] == token_user_id(mock, COLLEAGUE)


@pytest.mark.parametrize("status", ["reviewed", "resolved", "dismissed"])
def test_only_pending_escalations_move(client: TestClient, mock: MockApp, status: str) -> None:
    before = escalation(mock, "t_es_1", HARBOR, status)
    response = client.post("/v1/escalations/t_es_1/resolve", json={"status": "dismissed"})
    assert response.status_code == 400
    assert f"already {status}" in response.json()["error"]
    assert "status" in response.json()["error"]
    after = client.get("/v1/escalations/t_es_1").json()["data"]
    assert after["status"] == status and after["reviewed_at"] == before["reviewed_at"]


def test_resolve_refuses_an_unknown_status(client: TestClient, mock: MockApp) -> None:
    escalation(mock, "t_es_1", HARBOR)
    response = client.post("/v1/escalations/t_es_1/resolve", json={"status": "pending"})
    assert response.status_code == 400 and "status" in response.json()["error"]
