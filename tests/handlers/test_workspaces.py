"""Workspaces: the token's workspaces, roles, users (list and search), senders, WhatsApp
templates, verification rules and settings."""

from __future__ import annotations

from typing import Any

from starlette.testclient import TestClient

from mockserver.data.fixtures import insert_checked
from mockserver.engine.app import MockApp

from ._family_seed import ALPINE, DESERT, HARBOR, OTHER, READ, T0, auth, user


def _walk(client: TestClient, url: str, limit: int) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    cursor = None
    while True:
        params: dict[str, Any] = {"limit": limit}
        if cursor:
            params["cursor"] = cursor
        page = client.get(url, params=params).json()
        items += page["data"]
        cursor = page["next_cursor"]
        if not page["has_more"]:
            assert cursor is None
            return items


def test_workspaces_are_those_of_the_token(client: TestClient) -> None:
    mine = client.get("/v1/workspaces").json()
    assert {ws["id"] for ws in mine["data"]} == {HARBOR, ALPINE}
    assert set(mine) == {"data"}
    other = client.get("/v1/workspaces", headers=auth(OTHER)).json()
    assert [ws["id"] for ws in other["data"]] == [DESERT]


def test_roles_belong_to_their_workspace(client: TestClient, mock: MockApp) -> None:
    for key, ws, name in [("t_rl1", HARBOR, "Zz Auditor"), ("t_rl2", ALPINE, "Zz Alpine only")]:
        insert_checked(mock.store, mock.spec, "roles", {"role_id": key, "_workspace_id": ws, "name": name,
                                    "is_default": False, "permissions": ["View Contacts"]})
    roles = client.get(f"/v1/workspaces/{HARBOR}/roles").json()["data"]
    ids = [r["role_id"] for r in roles]
    assert "t_rl1" in ids and "t_rl2" not in ids
    assert all("_workspace_id" not in r for r in roles)


def test_users_are_members_ordered_by_email(client: TestClient, mock: MockApp) -> None:
    user(mock, "t_us_a", [HARBOR], "aaaa-t@example.com", "Anna", "Berg")
    user(mock, "t_us_b", [HARBOR, ALPINE], "zzzz-t@example.com", "Bruno", "Costa")
    user(mock, "t_us_c", [ALPINE], "mmmm-t@example.com", "Carla", "Diaz")
    users = _walk(client, f"/v1/workspaces/{HARBOR}/users", limit=1)
    ids = [u["id"] for u in users]
    assert "t_us_a" in ids and "t_us_b" in ids and "t_us_c" not in ids
    assert len(ids) == len(set(ids))
    emails = [u["email"] for u in users]
    assert emails == sorted(emails)
    assert all("_workspace_ids" not in u for u in users)
    alpine = [u["id"] for u in _walk(client, f"/v1/workspaces/{ALPINE}/users", limit=100)]
    assert "t_us_b" in alpine and "t_us_c" in alpine and "t_us_a" not in alpine


def test_user_search_is_a_case_insensitive_substring(client: TestClient, mock: MockApp) -> None:
    user(mock, "t_us_a", [HARBOR], "anna-t@example.com", "Qwertzuiop", "Berg")
    user(mock, "t_us_b", [HARBOR], "bruno-t@example.com", "Bruno", "QWERTZuiopson")
    user(mock, "t_us_c", [HARBOR], "qwertzuiop-t@example.com", "Carla", "Diaz")
    user(mock, "t_us_d", [ALPINE], "dora-t@example.com", "Qwertzuiop", "Alpine")
    url = f"/v1/workspaces/{HARBOR}/users/search"
    found = client.get(url, params={"query": "qwertzUIOP"}).json()["data"]
    assert sorted(u["id"] for u in found) == ["t_us_a", "t_us_b", "t_us_c"]
    assert client.get(url, params={"query": "no-such-user-xyz"}).json()["data"] == []
    missing = client.get(url)
    assert missing.status_code == 400 and "query" in missing.json()["error"]


def test_another_workspace_is_forbidden(client: TestClient) -> None:
    for path in ("users", "roles", "senders", "settings", "verification-rules"):
        response = client.get(f"/v1/workspaces/{DESERT}/{path}")
        assert response.status_code == 403, path


def test_senders_are_the_vendors_data_only_list(client: TestClient, mock: MockApp) -> None:
    """Reference (workspaces/senders): `{data}` only, every sender of the workspace (a client
    written for the real service reads `data` once), with the vendor's field names."""
    for n in range(25):  # more than one default page
        for ws in (HARBOR, ALPINE):
            value = f"desk{n:02d}-{ws}@example.com"
            insert_checked(mock.store, mock.spec, "senders", {
                "id": f"gmail_account:{value}", "workspace_id": ws,
                "provider_type": "gmail_account", "value": value, "display_name": "Front desk",
                "channel": "email", "is_default": False})
    body = client.get(f"/v1/workspaces/{HARBOR}/senders").json()
    assert set(body) == {"data"}
    ids = [s["id"] for s in body["data"]]
    mine = [i for i in ids if i.endswith(f"-{HARBOR}@example.com")]
    assert len(mine) == 25 and not any(i.endswith(f"-{ALPINE}@example.com") for i in ids)
    assert ids == sorted(ids)
    sms = next(s for s in body["data"] if s["channel"] == "sms")
    assert sms == {"id": "phone_number_config:+12065550100", "workspace_id": HARBOR,
                   "channel": "sms", "provider_type": "phone_number_config",
                   "value": "+12065550100", "display_name": "Harbor View Rentals",
                   "is_default": True}
    # `limit` is no parameter of this list any more: ignored like any unknown one (B10).
    assert client.get(f"/v1/workspaces/{HARBOR}/senders", params={"limit": 1}).json() == body


def test_templates_are_the_vendors_data_only_list(client: TestClient, mock: MockApp) -> None:
    """Reference (workspaces/whatsapp-templates): `{data}` only, newest first, each with
    `id` = content SID, `status`, `category`, `content_type`, `rejection_reason`,
    `variables` (key -> label) and `updated_at`."""
    for n in range(1, 23):
        insert_checked(mock.store, mock.spec, "whatsapp_templates", {
            "id": f"HX{n:032x}", "content_sid": f"HX{n:032x}", "workspace_id": HARBOR,
            "friendly_name": f"t{n}", "language": "en", "status": "approved",
            "category": "UTILITY", "content_type": "twilio/text", "rejection_reason": "",
            "body": "Hi {{1}}", "variables": {"1": "Guest name"},
            "created_at": f"2026-01-{n:02d}T00:00:00.000Z",
            "updated_at": f"2026-01-{n:02d}T00:00:01.000Z"})
    body = client.get(f"/v1/workspaces/{HARBOR}/whatsapp-templates").json()
    assert set(body) == {"data"}
    sids = [t["content_sid"] for t in body["data"]]
    assert all(f"HX{n:032x}" in sids for n in range(1, 23))
    assert sids.index(f"HX{2:032x}") < sids.index(f"HX{1:032x}")  # newest first
    created = [t["created_at"] for t in body["data"]]
    assert created == sorted(created, reverse=True)
    assert all(t["id"] == t["content_sid"] for t in body["data"])
    rejected = next(t for t in body["data"] if t["status"] == "rejected")
    assert rejected["rejection_reason"] and rejected["variables"]["1"] == "Guest name"
    assert "approval_status" not in rejected
    alpine = client.get(f"/v1/workspaces/{ALPINE}/whatsapp-templates").json()["data"]
    assert alpine and {t["workspace_id"] for t in alpine} == {ALPINE}


def _rule(mock: MockApp, key: str, ws: str) -> None:
    insert_checked(mock.store, mock.spec, "verification_rules", {
        "id": key, "workspace_id": ws, "name": "Door code", "description": None,
        "enabled": True, "applies_to": ["door_code"],
        "checks": [{"field": "last_name", "method": "case_insensitive"}],
        "created_at": T0, "updated_at": T0})


def test_verification_rules(client: TestClient, mock: MockApp) -> None:
    _rule(mock, "t_vr_harbor", HARBOR)
    _rule(mock, "t_vr_alpine", ALPINE)
    listed = client.get(f"/v1/workspaces/{HARBOR}/verification-rules",
                        params={"limit": 100}).json()["data"]
    assert "t_vr_harbor" in [r["id"] for r in listed]
    assert "t_vr_alpine" not in [r["id"] for r in listed]
    one = client.get(f"/v1/workspaces/{HARBOR}/verification-rules/t_vr_harbor",
                     headers=auth(READ))
    assert one.status_code == 200 and one.json()["data"]["applies_to"] == ["door_code"]
    # A rule of another workspace is not found through this one.
    elsewhere = client.get(f"/v1/workspaces/{HARBOR}/verification-rules/t_vr_alpine")
    assert elsewhere.status_code == 404 and "t_vr_alpine" in elsewhere.json()["error"]


def test_settings(client: TestClient, mock: MockApp) -> None:
    insert_checked(mock.store, mock.spec, "workspace_settings", {
        "_workspace_id": ALPINE, "company_name": "Alpine Test Lodges", "company_website": None,
        "company_size": None, "about": None, "timezone": "Europe/Zurich",
        "default_phone_country_code": "CH", "date_format": "DD/MM/YYYY",
        "business_hours": {"timezone": "Europe/Zurich", "days": [
            {"day": "monday", "enabled": True, "ranges": [{"start": "09:00", "end": "17:00"}]}]}})
    response = client.get(f"/v1/workspaces/{ALPINE}/settings")
    assert response.status_code == 200
    data = response.json()["data"]
    assert data["company_name"] == "Alpine Test Lodges" and "_workspace_id" not in data
    mock.store.delete("workspace_settings", ALPINE)
    assert client.get(f"/v1/workspaces/{ALPINE}/settings").status_code == 404
