"""Skills: create (with explicit auto-assignment), read, list, patch."""

from __future__ import annotations

from typing import Any

from starlette.testclient import TestClient

from mockserver.engine.app import MockApp

from ._family_seed import ALPINE, DESERT, HARBOR, OTHER, READ, auth


def new_skill(**over: Any) -> dict[str, Any]:
    return {"workspace_id": HARBOR, "name": "t-late-checkout", "description": "Late checkout",
            "body": "Offer until 1 pm.", "auto_assign_to_existing_v2_agents": False, **over}


def agents_of(client: TestClient, ws: str) -> dict[str, dict[str, Any]]:
    page = client.get("/v1/agents", params={"workspace_id": ws, "limit": 100}).json()
    return {a["id"]: a for a in page["data"]}


def test_create_and_read(client: TestClient) -> None:
    response = client.post("/v1/skills", json=new_skill(tags=["policy"]))
    assert response.status_code == 201
    skill = response.json()["data"]
    assert skill["workspace_id"] == HARBOR and skill["enabled"] is True
    assert skill["display_name"] is None and skill["allowed_tools"] is None
    assert skill["tags"] == ["policy"]
    assert client.get(f"/v1/skills/{skill['id']}", headers=auth(READ)).json()["data"] == skill
    assert client.get(f"/v1/skills/{skill['id']}", headers=auth(OTHER)).status_code == 403


def test_omitted_auto_assignment_assigns_nothing(client: TestClient) -> None:
    """Reference (skills/create): the field is optional and callers opt in explicitly, so a
    body without it is created (201) and attached to no agent (DECISIONS E4)."""
    client.post("/v1/agents", json={"workspace_id": HARBOR, "name": "One"})
    before = agents_of(client, HARBOR)
    body = new_skill()
    del body["auto_assign_to_existing_v2_agents"]
    response = client.post("/v1/skills", json=body)
    assert response.status_code == 201, response.text
    skill = response.json()["data"]
    assert agents_of(client, HARBOR) == before
    assert client.get(f"/v1/skills/{skill['id']}").json()["data"] == skill
    wrong = client.post("/v1/skills", json=new_skill(name="t-other",
                                                     auto_assign_to_existing_v2_agents="yes"))
    assert wrong.status_code == 400
    assert "auto_assign_to_existing_v2_agents" in wrong.json()["error"]


def test_auto_assign_true_attaches_to_every_agent_of_the_workspace(client: TestClient) -> None:
    for ws, name in [(HARBOR, "One"), (HARBOR, "Two"), (ALPINE, "Elsewhere")]:
        assert client.post("/v1/agents", json={"workspace_id": ws, "name": name}).status_code == 201
    before = agents_of(client, HARBOR)
    skill = client.post("/v1/skills", json=new_skill(
        auto_assign_to_existing_v2_agents=True)).json()["data"]
    after = agents_of(client, HARBOR)
    assert after.keys() == before.keys() and after
    for agent_id, agent in after.items():
        assert agent["skill_ids"] == [*before[agent_id]["skill_ids"], skill["id"]]
        assert skill["id"] in [s["id"] for s in agent["skills"]]
        assert agent["updated_at"] > before[agent_id]["updated_at"]
    assert all(skill["id"] not in a["skill_ids"] for a in agents_of(client, ALPINE).values())


def test_auto_assign_false_attaches_to_none(client: TestClient) -> None:
    client.post("/v1/agents", json={"workspace_id": HARBOR, "name": "One"})
    before = agents_of(client, HARBOR)
    skill = client.post("/v1/skills", json=new_skill()).json()["data"]
    after = agents_of(client, HARBOR)
    assert after == before
    assert all(skill["id"] not in a["skill_ids"] for a in after.values())


def test_deleted_agents_do_not_get_auto_assigned_skills(client: TestClient,
                                                       mock: MockApp) -> None:
    agent = client.post("/v1/agents", json={"workspace_id": HARBOR, "name": "Gone"}).json()["data"]
    client.delete(f"/v1/agents/{agent['id']}")
    skill = client.post("/v1/skills", json=new_skill(
        auto_assign_to_existing_v2_agents=True)).json()["data"]
    assert skill["id"] not in mock.store.get("deleted_agents", agent["id"])["skill_ids"]


def test_names_are_unique_in_a_workspace(client: TestClient) -> None:
    first = client.post("/v1/skills", json=new_skill()).json()["data"]
    again = client.post("/v1/skills", json=new_skill())
    assert again.status_code == 400 and "name" in again.json()["error"]
    assert client.post("/v1/skills", json=new_skill(workspace_id=ALPINE)).status_code == 201
    other = client.post("/v1/skills", json=new_skill(name="t-other")).json()["data"]
    rename = client.patch(f"/v1/skills/{other['id']}", json={"name": first["name"]})
    assert rename.status_code == 400 and "name" in rename.json()["error"]
    same = client.patch(f"/v1/skills/{first['id']}", json={"name": first["name"]})
    assert same.status_code == 200


def test_create_in_a_foreign_workspace_is_forbidden(client: TestClient) -> None:
    assert client.post("/v1/skills", json=new_skill(workspace_id=DESERT)).status_code == 403


def test_patch_changes_supplied_fields_and_null_clears(client: TestClient) -> None:
    skill = client.post("/v1/skills", json=new_skill(
        display_name="Late checkout", allowed_tools=["t-quote"], tags=["a"])).json()["data"]
    response = client.patch(f"/v1/skills/{skill['id']}", json={
        "display_name": None, "allowed_tools": None, "tags": None, "enabled": False})
    assert response.status_code == 200
    patched = response.json()["data"]
    assert patched["display_name"] is None and patched["allowed_tools"] is None
    assert patched["tags"] is None and patched["enabled"] is False
    for field in ("name", "description", "body", "created_at"):
        assert patched[field] == skill[field]
    assert patched["updated_at"] > skill["updated_at"]
    assert client.get(f"/v1/skills/{skill['id']}").json()["data"] == patched


def test_patch_refuses_an_empty_body_and_read_tokens(client: TestClient) -> None:
    skill = client.post("/v1/skills", json=new_skill()).json()["data"]
    assert client.patch(f"/v1/skills/{skill['id']}", json={}).status_code == 400
    assert client.patch(f"/v1/skills/{skill['id']}", json={"enabled": False},
                        headers=auth(READ)).status_code == 403


def test_list_is_newest_first(client: TestClient) -> None:
    older = client.post("/v1/skills", json=new_skill(name="t-older")).json()["data"]
    newer = client.post("/v1/skills", json=new_skill(name="t-newer")).json()["data"]
    page = client.get("/v1/skills", params={"workspace_id": HARBOR, "limit": 100}).json()
    ids = [s["id"] for s in page["data"]]
    assert ids.index(newer["id"]) < ids.index(older["id"])
    first = client.get("/v1/skills", params={"workspace_id": HARBOR, "limit": 1}).json()
    assert first["data"][0]["id"] == newer["id"] and first["has_more"] is True
