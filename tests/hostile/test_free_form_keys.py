"""Free-form objects (`metadata`, a trigger's `config`) keep any key, `_x` included: internal
fields live at a record's top level only and never share a namespace with user keys; and a
write the self-check refuses leaves the state as it was (DECISIONS H26, H27). Self-check is on
(tests/conftest.py)."""

from __future__ import annotations

from typing import Any

from starlette.testclient import TestClient

from mockserver.engine.app import MockApp

WS = "ws_harborview"


def test_a_metadata_key_starting_with_underscore_is_kept_and_read_back(
        client: TestClient) -> None:
    made = client.post(f"/v1/kb/nodes?workspace_id={WS}",
                       json={"title": "imported", "metadata": {"_source": "import"}})
    assert made.status_code == 201, made.text
    node = made.json()["data"]
    assert node["metadata"] == {"_source": "import"}
    listed = client.get("/v1/kb/nodes", params={"workspace_id": WS, "limit": 100})
    assert listed.status_code == 200, listed.text
    got = client.get(f"/v1/kb/nodes/{node['id']}")
    assert got.status_code == 200 and got.json()["data"]["metadata"] == {"_source": "import"}


def test_a_trigger_config_key_starting_with_underscore_is_kept(client: TestClient) -> None:
    made = client.post("/v1/agents", json={
        "workspace_id": WS, "name": "Concierge",
        "triggers": [{"name": "t", "type": "cron", "config": {"_tz": "UTC"}}]})
    assert made.status_code == 201, made.text
    agent = made.json()["data"]
    assert agent["triggers"][0]["config"] == {"_tz": "UTC"}
    assert client.get(f"/v1/agents/{agent['id']}").status_code == 200
    assert client.get("/v1/agents", params={"workspace_id": WS}).status_code == 200


def test_a_write_the_self_check_refuses_is_taken_back(client: TestClient,
                                                      mock: MockApp) -> None:
    before = client.get("/v1/kb/nodes", params={"workspace_id": WS, "limit": 100}).json()
    original = mock.handlers["createKnowledgeNode"]

    def leaky(ctx: Any) -> Any:
        answer = original(ctx)
        return {**answer, "data": {**answer["data"], "_leak": 1}}  # a bug of ours

    mock.handlers["createKnowledgeNode"] = leaky
    try:
        refused = client.post(f"/v1/kb/nodes?workspace_id={WS}", json={"title": "x"})
    finally:
        mock.handlers["createKnowledgeNode"] = original
    assert refused.status_code == 500 and "_leak" in refused.json()["error"]
    after = client.get("/v1/kb/nodes", params={"workspace_id": WS, "limit": 100})
    assert after.status_code == 200 and after.json() == before  # nothing kept
