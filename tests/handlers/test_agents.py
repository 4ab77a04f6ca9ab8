"""V2 chat agents: create defaults and checks, patch semantics, soft delete, dispatch, tools,
runs and connections."""

from __future__ import annotations

from typing import Any

import pytest
from starlette.testclient import TestClient

from mockserver.engine.app import MockApp

from ._family_seed import (
    ALPINE,
    DESERT,
    HARBOR,
    READ,
    agent_run,
    auth,
    builtin_tool,
    connection,
    model,
)


def create(client: TestClient, **body: Any) -> dict[str, Any]:
    response = client.post("/v1/agents", json={"workspace_id": HARBOR, "name": "Concierge",
                                                **body})
    assert response.status_code == 201, response.text
    return response.json()["data"]


def skill(client: TestClient, name: str, ws: str = HARBOR) -> dict[str, Any]:
    response = client.post("/v1/skills", json={
        "workspace_id": ws, "name": name, "description": f"{name} rules", "body": "Be kind.",
        "auto_assign_to_existing_v2_agents": False})
    assert response.status_code == 201, response.text
    return response.json()["data"]


def message_trigger(name: str = "Guest messages", **over: Any) -> dict[str, Any]:
    return {"name": name, "type": "message",
            "config": {"inboxTypeId": "guest", "channels": ["email"]}, **over}


def test_create_fills_defaults(client: TestClient) -> None:
    agent = create(client)
    assert agent["model"] == "default"
    assert agent["operation_mode"] == "copilot"
    assert agent["autopilot_schedule"] is None
    assert agent["version"] == "v2" and agent["enabled"] is True
    assert agent["skills"] == [] and agent["triggers"] == [] and agent["guardrails"] == []
    assert agent["created_at"] == agent["updated_at"]
    fetched = client.get(f"/v1/agents/{agent['id']}").json()["data"]
    assert fetched == agent


def test_create_generates_guardrail_and_trigger_ids(client: TestClient) -> None:
    agent = create(client, guardrails=[{"title": "No refunds", "knowledge": "Never promise."},
                                       {"id": "gr_keep", "title": "Tone", "knowledge": "Warm."}],
                   triggers=[message_trigger(), message_trigger("Cron", type="cron",
                                                                enabled=False)])
    ids = [g["id"] for g in agent["guardrails"]]
    assert ids[0] and ids[1] == "gr_keep"
    first, second = agent["triggers"]
    assert first["id"] and first["id"] != second["id"]
    assert first["workspace_id"] == HARBOR and first["enabled"] is True
    assert first["description"] is None and second["enabled"] is False
    assert first["created_at"] == first["updated_at"]


def test_create_resolves_skills_and_connections(client: TestClient, mock: MockApp) -> None:
    model(mock, "openai:gpt-t-1")
    connection(mock, "t_cn1", HARBOR)
    s = skill(client, "t-booking-policy")
    agent = create(client, skill_ids=[s["id"], s["id"]], model="openai:gpt-t-1",
                   connection_ids=["t_cn1"])
    assert agent["skill_ids"] == [s["id"]]
    assert agent["skills"] == [{"id": s["id"], "name": s["name"],
                                "description": s["description"], "enabled": True}]
    assert agent["model"] == "openai:gpt-t-1"
    connections = client.get(f"/v1/agents/{agent['id']}/connections").json()
    assert [c["id"] for c in connections["data"]] == ["t_cn1"]
    assert set(connections) == {"data"}


@pytest.mark.parametrize(("field", "value", "named"), [
    ("skill_ids", ["ks_no_such_skill"], "ks_no_such_skill"),
    ("model", "nobody:no-model", "nobody:no-model"),
    ("connection_ids", ["cn_no_such"], "cn_no_such"),
])
def test_create_refuses_unknown_references(client: TestClient, field: str, value: Any,
                                           named: str) -> None:
    before = client.get("/v1/agents", params={"workspace_id": HARBOR, "limit": 100}).json()
    response = client.post("/v1/agents", json={"workspace_id": HARBOR, "name": "X",
                                                field: value})
    assert response.status_code == 400
    assert field in response.json()["error"] and named in response.json()["error"]
    after = client.get("/v1/agents", params={"workspace_id": HARBOR, "limit": 100}).json()
    assert after["data"] == before["data"]


def test_skill_of_another_workspace_is_unknown(client: TestClient) -> None:
    alpine_skill = skill(client, "t-alpine-only", ws=ALPINE)
    response = client.post("/v1/agents", json={"workspace_id": HARBOR, "name": "X",
                                                "skill_ids": [alpine_skill["id"]]})
    assert response.status_code == 400 and alpine_skill["id"] in response.json()["error"]


def test_list_is_newest_first_and_workspace_scoped(client: TestClient) -> None:
    older = create(client, name="Older")
    newer = create(client, name="Newer")
    alpine = client.post("/v1/agents", json={"workspace_id": ALPINE, "name": "A"}).json()["data"]
    listed = client.get("/v1/agents", params={"workspace_id": HARBOR, "limit": 100}).json()
    ids = [a["id"] for a in listed["data"]]
    assert ids.index(newer["id"]) < ids.index(older["id"])
    assert alpine["id"] not in ids
    stamps = [a["created_at"] for a in listed["data"]]
    assert stamps == sorted(stamps, reverse=True)


def test_patch_changes_only_supplied_fields(client: TestClient) -> None:
    first = skill(client, "t-first")
    second = skill(client, "t-second")
    agent = create(client, description="Front desk", skill_ids=[first["id"]],
                   triggers=[message_trigger()])
    response = client.patch(f"/v1/agents/{agent['id']}", json={
        "name": "Renamed", "skill_ids": [second["id"]], "operation_mode": "autopilot"})
    assert response.status_code == 200
    patched = response.json()["data"]
    assert patched["name"] == "Renamed" and patched["operation_mode"] == "autopilot"
    assert patched["skill_ids"] == [second["id"]]  # replaced, not merged
    assert [s["id"] for s in patched["skills"]] == [second["id"]]
    assert patched["description"] == "Front desk"
    assert patched["triggers"] == agent["triggers"]  # not sent: unchanged
    assert patched["updated_at"] > agent["updated_at"]
    assert patched["created_at"] == agent["created_at"]
    assert client.get(f"/v1/agents/{agent['id']}").json()["data"] == patched


def test_patch_replaces_triggers_wholesale(client: TestClient) -> None:
    agent = create(client, triggers=[message_trigger("a"), message_trigger("b")])
    patched = client.patch(f"/v1/agents/{agent['id']}",
                           json={"triggers": [message_trigger("c")]}).json()["data"]
    assert [t["name"] for t in patched["triggers"]] == ["c"]
    assert patched["triggers"][0]["id"] not in {t["id"] for t in agent["triggers"]}


def test_patch_checks_references_and_changes_nothing(client: TestClient) -> None:
    agent = create(client)
    response = client.patch(f"/v1/agents/{agent['id']}",
                            json={"name": "New", "skill_ids": ["ks_missing"]})
    assert response.status_code == 400 and "skill_ids" in response.json()["error"]
    response = client.patch(f"/v1/agents/{agent['id']}", json={"model": "x:unknown"})
    assert response.status_code == 400 and "model" in response.json()["error"]
    assert client.get(f"/v1/agents/{agent['id']}").json()["data"] == agent


def test_patch_needs_write_access(client: TestClient) -> None:
    agent = create(client)
    response = client.patch(f"/v1/agents/{agent['id']}", json={"name": "x"}, headers=auth(READ))
    assert response.status_code == 403


def test_delete_is_soft_and_hides_the_agent(client: TestClient, mock: MockApp) -> None:
    agent = create(client, triggers=[message_trigger()])
    response = client.delete(f"/v1/agents/{agent['id']}")
    assert response.status_code == 200
    assert response.json() == {"data": {"id": agent["id"], "deleted": True}}
    assert client.get(f"/v1/agents/{agent['id']}").status_code == 404
    listed = client.get("/v1/agents", params={"workspace_id": HARBOR, "limit": 100}).json()
    assert agent["id"] not in [a["id"] for a in listed["data"]]
    kept = mock.store.get("deleted_agents", agent["id"])
    assert kept is not None and kept["triggers"] == []  # removed from its triggers
    assert client.delete(f"/v1/agents/{agent['id']}").status_code == 404
    assert client.post(f"/v1/agents/{agent['id']}/run", json={}).status_code == 404


def webhook_trigger(name: str = "Booking webhook", **over: Any) -> dict[str, Any]:
    return {"name": name, "type": "webhook", "config": {}, **over}


def test_run_with_a_single_trigger_needs_no_trigger_id(client: TestClient) -> None:
    agent = create(client, triggers=[webhook_trigger()])
    response = client.post(f"/v1/agents/{agent['id']}/run", json={})
    assert response.status_code == 200
    dispatch = response.json()["data"]
    trigger = agent["triggers"][0]
    assert dispatch["dispatched"] is True
    assert dispatch["trigger_id"] == trigger["id"] and dispatch["trigger_type"] == "webhook"
    runs = client.get(f"/v1/agents/{agent['id']}/runs").json()["data"]
    assert len(runs) == 1
    run = runs[0]
    assert run["run_id"] == dispatch["run_id"] and run["status"] == "accepted"
    assert run["completed_at"] is None and run["trigger_id"] == trigger["id"]
    assert run["trace_id"]


def test_run_with_several_triggers_needs_a_known_trigger_id(client: TestClient) -> None:
    agent = create(client, triggers=[webhook_trigger("a"),
                                     message_trigger("b", type="cron", config={})])
    missing = client.post(f"/v1/agents/{agent['id']}/run", json={})
    assert missing.status_code == 400 and "trigger_id" in missing.json()["error"]
    unknown = client.post(f"/v1/agents/{agent['id']}/run", json={"trigger_id": "tr_nope"})
    assert unknown.status_code == 400 and "tr_nope" in unknown.json()["error"]
    cron = agent["triggers"][1]
    chosen = client.post(f"/v1/agents/{agent['id']}/run", json={"trigger_id": cron["id"]})
    assert chosen.json()["data"]["trigger_type"] == "cron"
    assert client.get(f"/v1/agents/{agent['id']}/runs").json()["data"][0]["trigger_id"] == \
        cron["id"]


@pytest.mark.parametrize("patch", [{}, {"operation_mode": "inactive"}])
def test_a_message_trigger_is_not_dispatched_manually(client: TestClient,
                                                      patch: dict[str, Any]) -> None:
    """Reference (agents/run): channel/message triggers are not supported. 400 naming
    `trigger_id` (DECISIONS E22), whether the trigger is the only one or named, and whatever
    the agent's mode; no run is recorded."""
    agent = create(client, triggers=[message_trigger()])
    if patch:
        client.patch(f"/v1/agents/{agent['id']}", json=patch)
    only = client.post(f"/v1/agents/{agent['id']}/run", json={"payload": {"text": "hi"}})
    assert only.status_code == 400, only.text
    error = only.json()["error"]
    assert "trigger_id" in error and "message trigger" in error
    assert agent["triggers"][0]["id"] in error
    both = create(client, triggers=[message_trigger(), webhook_trigger()])
    named = client.post(f"/v1/agents/{both['id']}/run",
                        json={"trigger_id": both["triggers"][0]["id"]})
    assert named.status_code == 400 and "trigger_id" in named.json()["error"]
    for a in (agent, both):
        assert client.get(f"/v1/agents/{a['id']}/runs").json()["data"] == []
    webhook = client.post(f"/v1/agents/{both['id']}/run",
                          json={"trigger_id": both["triggers"][1]["id"]})
    assert webhook.status_code == 200 and webhook.json()["data"]["dispatched"] is True


def test_run_without_triggers_is_refused(client: TestClient) -> None:
    agent = create(client)
    response = client.post(f"/v1/agents/{agent['id']}/run", json={})
    assert response.status_code == 400 and "trigger_id" in response.json()["error"]


@pytest.mark.parametrize("patch", [{"operation_mode": "inactive"}, {"enabled": False}])
def test_inactive_agent_is_not_dispatched(client: TestClient, patch: dict[str, Any]) -> None:
    agent = create(client, triggers=[webhook_trigger()])
    client.patch(f"/v1/agents/{agent['id']}", json=patch)
    dispatch = client.post(f"/v1/agents/{agent['id']}/run", json={}).json()["data"]
    assert dispatch["dispatched"] is False and dispatch["run_id"] is None
    assert client.get(f"/v1/agents/{agent['id']}/runs").json()["data"] == []


def test_runs_are_newest_first_filtered_and_per_agent(client: TestClient,
                                                      mock: MockApp) -> None:
    agent = create(client)
    other = create(client, name="Other")
    agent_run(mock, "t_ar1", agent["id"], HARBOR, "completed", "2026-01-01T00:00:00.000Z")
    agent_run(mock, "t_ar2", agent["id"], HARBOR, "failed", "2026-01-03T00:00:00.000Z")
    agent_run(mock, "t_ar3", agent["id"], HARBOR, "completed", "2026-01-02T00:00:00.000Z")
    agent_run(mock, "t_ar4", other["id"], HARBOR, "completed", "2026-01-04T00:00:00.000Z")
    runs = client.get(f"/v1/agents/{agent['id']}/runs").json()["data"]
    assert [r["id"] for r in runs] == ["t_ar2", "t_ar3", "t_ar1"]
    completed = client.get(f"/v1/agents/{agent['id']}/runs",
                           params={"status": "completed", "limit": 1}).json()
    assert [r["id"] for r in completed["data"]] == ["t_ar3"] and completed["has_more"]
    rest = client.get(f"/v1/agents/{agent['id']}/runs", params={
        "status": "completed", "limit": 1, "cursor": completed["next_cursor"]}).json()
    assert [r["id"] for r in rest["data"]] == ["t_ar1"] and rest["next_cursor"] is None


def test_tools_merge_builtins_and_custom_with_agent_overrides(client: TestClient,
                                                             mock: MockApp) -> None:
    builtin_tool(mock, "t_bt_on", "t-search-kb", enabled=True)
    builtin_tool(mock, "t_bt_off", "t-send-sms", enabled=False, connection_required=True)
    for name, globally in [("t-quote", True), ("t-lookup", False)]:
        response = client.post("/v1/custom-tools", json={
            "workspace_id": HARBOR, "name": name, "description": "d", "language": "python",
            "code": "def main(**params):\n    return {'message': 'ok'}\n",
            "enable_globally": globally})
        assert response.status_code == 201
    agent = create(client)
    mock.store.update("agents", agent["id"], {"_tool_states": {"t_bt_on": False,
                                                               "t-lookup": True}})
    tools = client.get(f"/v1/agents/{agent['id']}/tools").json()["data"]
    by_name = {t["name"]: t for t in tools}
    assert by_name["t-search-kb"]["enabled"] is False  # agent override
    assert by_name["t-send-sms"]["enabled"] is False  # catalogue default
    assert by_name["t-quote"]["enabled"] is True  # enable_globally
    assert by_name["t-lookup"]["enabled"] is True  # agent override
    assert by_name["t-quote"]["source"] == "custom" and by_name["t-quote"]["language"] == "python"
    assert "connection_required" not in by_name["t-send-sms"]
    custom = client.get(f"/v1/agents/{agent['id']}/tools", params={"source": "custom"}).json()
    assert {t["source"] for t in custom["data"]} == {"custom"}
    assert {"t-quote", "t-lookup"} <= {t["name"] for t in custom["data"]}
    builtin = client.get(f"/v1/agents/{agent['id']}/tools", params={"source": "builtin"}).json()
    assert {t["source"] for t in builtin["data"]} == {"builtin"}
    bad = client.get(f"/v1/agents/{agent['id']}/tools", params={"source": "mcp"})
    assert bad.status_code == 400 and "source" in bad.json()["error"]


def test_catalogue_shows_defaults_and_connection_flag(client: TestClient,
                                                      mock: MockApp) -> None:
    builtin_tool(mock, "t_bt_off", "t-send-sms", enabled=False, connection_required=True)
    response = client.get("/v1/agents/tools", params={"workspace_id": ALPINE})
    assert response.status_code == 200
    tools = {t["id"]: t for t in response.json()["data"]}
    assert tools["t_bt_off"]["enabled"] is False
    assert tools["t_bt_off"]["connection_required"] is True
    assert len(tools) == mock.store.count("builtin_tools")
    assert client.get("/v1/agents/tools", params={"workspace_id": DESERT}).status_code == 403


def test_every_agent_of_the_dataset_reads_back(client: TestClient, mock: MockApp) -> None:
    # The self-check validates each answer against the document.
    for agent in list(mock.store.all("agents")):
        if agent["workspace_id"] not in (HARBOR, ALPINE):
            continue
        data = client.get(f"/v1/agents/{agent['id']}").json()["data"]
        assert [s["id"] for s in data["skills"]] == [
            k for k in agent["skill_ids"] if mock.store.get("skills", k) is not None]
        for sub in ("tools", "runs", "connections"):
            assert client.get(f"/v1/agents/{agent['id']}/{sub}").status_code == 200


@pytest.mark.parametrize("where", ["schedule", "day", "range"])
def test_unknown_keys_in_an_autopilot_schedule_are_refused_and_nothing_is_kept(
        client: TestClient, where: str) -> None:
    """A schedule's nested objects are closed as every request body is (DECISIONS B11): an
    unknown key, `_`-prefixed included, is a 400 naming it, on create and patch, and nothing
    is stored (the mock once stored it, then its self-check refused its own answer: 500)."""
    rng: dict[str, Any] = {"start": "09:00 AM", "end": "05:00 PM"}
    day: dict[str, Any] = {"day": "monday", "enabled": True, "ranges": [rng]}
    schedule: dict[str, Any] = {"timezone": "UTC", "days": [day]}
    valid = client.post("/v1/agents", json={"workspace_id": HARBOR, "name": "Day desk",
                                            "autopilot_schedule": schedule})
    assert valid.status_code == 201, valid.text  # the same schedule without the extra key
    {"schedule": schedule, "day": day, "range": rng}[where]["_extra"] = 1
    before = client.get("/v1/agents", params={"workspace_id": HARBOR, "limit": 100}).json()
    response = client.post("/v1/agents", json={"workspace_id": HARBOR, "name": "Night desk",
                                                "autopilot_schedule": schedule})
    assert response.status_code == 400, response.text
    assert "autopilot_schedule" in response.json()["error"]
    agent = create(client)
    patched = client.patch(f"/v1/agents/{agent['id']}", json={"autopilot_schedule": schedule})
    assert patched.status_code == 400, patched.text
    assert client.get(f"/v1/agents/{agent['id']}").json()["data"] == agent
    after = client.get("/v1/agents", params={"workspace_id": HARBOR, "limit": 100}).json()
    assert len(after["data"]) == len(before["data"]) + 1


# -- vendor parity: toggle a tool, read a run (spec/DECISIONS.md E24, E25) ------------------


def tools_of(client: TestClient, agent_id: str) -> dict[tuple[str, str], dict[str, Any]]:
    data = client.get(f"/v1/agents/{agent_id}/tools").json()["data"]
    return {(t["source"], t["name"]): t for t in data}


def test_toggling_a_tool_changes_the_agents_tools(client: TestClient, mock: MockApp) -> None:
    """PATCH /v1/agents/{id}/tools (reference: agents/set-tool): the (tool_name, source) pair
    picks the tool; the answer is its access state after the change, and the agent's tool
    list shows it from then on, for that agent only."""
    builtin_tool(mock, "t_bt_kb", "t-search-kb", enabled=True)
    custom = client.post("/v1/custom-tools", json={
        "workspace_id": HARBOR, "name": "t-search-kb", "language": "python",
        "code": "def main(**params):\n    return {'message': 'ok'}\n"}).json()["data"]
    agent, other = create(client), create(client, name="Other")
    before = tools_of(client, agent["id"])
    assert before[("builtin", "t-search-kb")]["enabled"] is True
    assert before[("custom", "t-search-kb")]["enabled"] is False  # not enable_globally

    off = client.patch(f"/v1/agents/{agent['id']}/tools",
                       json={"tool_name": "t-search-kb", "source": "builtin", "enabled": False})
    assert off.status_code == 200, off.text
    assert off.json()["data"] == {**before[("builtin", "t-search-kb")], "enabled": False}
    on = client.patch(f"/v1/agents/{agent['id']}/tools",
                      json={"tool_name": "t-search-kb", "source": "custom", "enabled": True})
    assert on.json()["data"]["id"] == custom["id"] and on.json()["data"]["enabled"] is True
    after = tools_of(client, agent["id"])
    assert after[("builtin", "t-search-kb")]["enabled"] is False
    assert after[("custom", "t-search-kb")]["enabled"] is True  # same name, its own switch
    assert {k: v for k, v in after.items() if "t-search-kb" not in k} == \
        {k: v for k, v in before.items() if "t-search-kb" not in k}
    assert tools_of(client, other["id"]) == before  # another agent keeps its own
    builtin_only = client.get(f"/v1/agents/{agent['id']}/tools",
                              params={"source": "builtin"}).json()["data"]
    assert next(t for t in builtin_only if t["name"] == "t-search-kb")["enabled"] is False
    # Switched back: the tool reads as it did.
    client.patch(f"/v1/agents/{agent['id']}/tools",
                 json={"tool_name": "t-search-kb", "source": "builtin", "enabled": True})
    assert tools_of(client, agent["id"])[("builtin", "t-search-kb")]["enabled"] is True


@pytest.mark.parametrize(("body", "field"), [
    ({"tool_name": "t-nope", "source": "builtin", "enabled": False}, "tool_name"),
    ({"tool_name": "t-search-kb", "source": "custom", "enabled": False}, "tool_name"),
    ({"tool_name": "", "source": "builtin", "enabled": False}, "tool_name"),
    ({"tool_name": "t-search-kb", "source": "mcp", "enabled": False}, "source"),
    ({"tool_name": "t-search-kb", "source": "builtin"}, "enabled"),
    ({"tool_name": "t-search-kb", "source": "builtin", "enabled": "no"}, "enabled"),
    ({"source": "builtin", "enabled": False}, "tool_name"),
    ({"tool_name": "t-search-kb", "source": "builtin", "enabled": False, "x": 1}, "'x'"),
])
def test_a_bad_tool_toggle_is_refused_naming_the_field(client: TestClient, mock: MockApp,
                                                       body: dict[str, Any],
                                                       field: str) -> None:
    builtin_tool(mock, "t_bt_kb", "t-search-kb", enabled=True)
    agent = create(client)
    before = client.get(f"/v1/agents/{agent['id']}/tools").json()
    response = client.patch(f"/v1/agents/{agent['id']}/tools", json=body)
    assert response.status_code == 400, response.text
    assert field in response.json()["error"]
    assert client.get(f"/v1/agents/{agent['id']}/tools").json() == before


def test_toggling_needs_write_access_and_the_agents_workspace(client: TestClient,
                                                              mock: MockApp) -> None:
    builtin_tool(mock, "t_bt_kb", "t-search-kb", enabled=True)
    agent = create(client)
    body = {"tool_name": "t-search-kb", "source": "builtin", "enabled": False}
    url = f"/v1/agents/{agent['id']}/tools"
    assert client.patch(url, json=body, headers=auth(READ)).status_code == 403
    assert client.patch(url, json=body, params={"workspace_id": ALPINE}).status_code == 404
    assert client.patch("/v1/agents/t_ag_nope/tools", json=body).status_code == 404
    assert tools_of(client, agent["id"])[("builtin", "t-search-kb")]["enabled"] is True


def test_a_fixture_run_reads_back_with_its_trace(client: TestClient, mock: MockApp) -> None:
    """GET /v1/agents/{id}/runs/{run_id} (reference: agents/get-run): the list's fields plus
    session, trigger event, reply, reasoning and the ordered tool calls."""
    listed = client.get("/v1/agents/ag_harbor_concierge/runs", params={"limit": 100}).json()
    item = next(r for r in listed["data"] if r["id"] == "ar_emma_clarke_01")
    response = client.get("/v1/agents/ag_harbor_concierge/runs/ar_emma_clarke_01",
                          headers=auth(READ))
    assert response.status_code == 200, response.text
    run = response.json()["data"]
    assert {k: run[k] for k in item} == item
    assert set(run) - set(item) == {"session_id", "trigger_event_id", "response", "reflection",
                                    "tool_trace"}
    assert run["session_id"] == "sess_emma_clarke_01" and run["response"].startswith("Thanks")
    assert [c["name"] for c in run["tool_trace"]] == ["lookup_reservation", "send_door_code"]
    assert run["tool_trace"][0]["input"] == {"contact_id": "ph_emma_clarke"}


def test_a_run_is_read_through_its_own_agent_only(client: TestClient) -> None:
    url = "/v1/agents/ag_harbor_night_owl/runs/ar_emma_clarke_01"  # another agent's run
    response = client.get(url)
    assert response.status_code == 404 and "ar_emma_clarke_01" in response.json()["error"]
    missing = client.get("/v1/agents/ag_harbor_concierge/runs/ar_t_nope")
    assert missing.status_code == 404 and "ar_t_nope" in missing.json()["error"]
    assert client.get("/v1/agents/ag_harbor_concierge/runs/ar_emma_clarke_01",
                      headers=auth("mock-other-token")).status_code == 403
    bad = client.get("/v1/agents/ag_harbor_concierge/runs/a%20b")
    assert bad.status_code == 400 and "run_id" in bad.json()["error"]


def test_a_dispatched_run_reads_back_by_id(client: TestClient) -> None:
    agent = create(client, triggers=[webhook_trigger()])
    dispatch = client.post(f"/v1/agents/{agent['id']}/run",
                           json={"payload": {"booking": "HM1"}}).json()["data"]
    [listed] = client.get(f"/v1/agents/{agent['id']}/runs").json()["data"]
    assert listed["run_id"] == dispatch["run_id"]
    run = client.get(f"/v1/agents/{agent['id']}/runs/{listed['id']}").json()["data"]
    assert {k: run[k] for k in listed} == listed
    assert run["status"] == "accepted" and run["tool_trace"] == []
    assert run["response"] is None and run["reflection"] is None and run["session_id"] is None
    assert run["trigger_event_id"]
