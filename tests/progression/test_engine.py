"""Progression on the mock's clock (mockserver/engine/progression.py): agent runs, workflow
executions, outbound messages and knowledge-base files move as the clock passes, hold while
it is frozen, follow their session's mode, and settle by a test's guarded transition."""

from __future__ import annotations

from typing import Any

import pytest
from conftest import FROZEN_AT
from starlette.testclient import TestClient

from mockserver.engine import context
from mockserver.engine.app import MockApp
from mockserver.engine.clock import parse_timestamp
from mockserver.engine.progress_control import get_progression
from mockserver.engine.progression import Refused, in_schedule, set_modes, transition

AGENT = "ag_harbor_concierge"
CRON = "tr_harbor_concierge_precheckin"  # "0 9 * * *", enabled, agent in autopilot
WS = "ws_harborview"


def dispatch(client: TestClient, agent: str = AGENT, trigger: str = CRON) -> str:
    answer = client.post(f"/v1/agents/{agent}/run", json={"trigger_id": trigger})
    assert answer.status_code == 200, answer.text
    run_id: str = answer.json()["data"]["run_id"]
    return run_id


def run_of(client: TestClient, run_id: str, agent: str = AGENT) -> dict[str, Any]:
    runs = client.get(f"/v1/agents/{agent}/runs", params={"limit": 100}).json()["data"]
    [listed] = [r for r in runs if r["run_id"] == run_id]
    detail = client.get(f"/v1/agents/{agent}/runs/{listed['id']}")
    assert detail.status_code == 200, detail.text
    shown: dict[str, Any] = detail.json()["data"]
    assert {k: v for k, v in shown.items() if k in listed} == listed  # list and detail agree
    return shown


def modes(mock: MockApp, **kinds: Any) -> None:
    mock.state.write(lambda store: set_modes(store, kinds))


def advance(mock: MockApp, seconds: float) -> None:
    mock.state.advance_clock(seconds)


def test_a_run_in_time_mode_is_accepted_then_running_then_completed(
        client: TestClient, mock: MockApp) -> None:
    modes(mock, agent_runs={"mode": "time", "running_after": 1, "done_after": 6})
    run_id = dispatch(client)
    first = run_of(client, run_id)
    assert first["status"] == "accepted" and first["completed_at"] is None
    assert first["duration_ms"] == 0 and first["token_usage"] == {"input": 0, "output": 0}
    advance(mock, 0.5)
    assert run_of(client, run_id)["status"] == "accepted"
    advance(mock, 0.5)
    running = run_of(client, run_id)
    assert running["status"] == "running" and running["completed_at"] is None
    advance(mock, 5)
    done = run_of(client, run_id)
    assert done["status"] == "completed" and done["error"] is None
    assert done["duration_ms"] == 6000 and done["completed_at"] == "2026-11-01T12:00:06.000Z"
    assert done["token_usage"]["input"] > 0 and done["total_cost"] > 0
    assert done["response"] and done["reflection"] and done["disposition"] == "answered"
    assert done["autopilot_sent"] is True  # the agent is in autopilot and replied


def test_a_frozen_clock_holds_a_run(client: TestClient, mock: MockApp) -> None:
    run_id = dispatch(client)
    assert [run_of(client, run_id)["status"] for _ in range(3)] == ["accepted"] * 3
    advance(mock, 3600)
    assert run_of(client, run_id)["status"] == "completed"


def test_immediate_mode_shows_the_outcome_at_once(client: TestClient, mock: MockApp) -> None:
    modes(mock, agent_runs={"mode": "immediate"})
    done = run_of(client, dispatch(client))
    assert done["status"] == "completed" and done["completed_at"] is not None


def test_manual_mode_waits_for_a_transition_and_an_ended_run_cannot_move(
        client: TestClient, mock: MockApp) -> None:
    modes(mock, agent_runs={"mode": "manual"})
    run_id = dispatch(client)
    advance(mock, 86400)
    run = run_of(client, run_id)
    assert run["status"] == "accepted"
    failed = mock.state.write(lambda store: transition(
        store, "agent_runs", run["id"], "failed", {"error": "Model provider timeout"}))
    assert failed["status"] == "failed"
    shown = run_of(client, run_id)
    assert shown["status"] == "failed" and shown["error"] == "Model provider timeout"
    assert shown["completed_at"] == "2026-11-02T12:00:00.000Z"
    with pytest.raises(Refused) as refused:
        mock.state.write(lambda store: transition(store, "agent_runs", run["id"],
                                                  "completed", {}))
    assert refused.value.status == 409 and "is failed" in str(refused.value)


def test_a_fixture_run_in_progress_progresses_from_its_own_start(
        client: TestClient, mock: MockApp) -> None:
    # ar_aisha_khan_02 has been running since 2026-10-31T17:43:16Z: long done by noon.
    run = client.get(f"/v1/agents/{AGENT}/runs/ar_aisha_khan_02").json()["data"]
    assert run["status"] == "completed" and run["completed_at"] == "2026-10-31T17:43:28.000Z"
    modes(mock, agent_runs={"mode": "manual"})
    assert client.get(f"/v1/agents/{AGENT}/runs/ar_aisha_khan_02").json()["data"][
        "status"] == "running"


def test_the_status_filter_sees_runs_as_they_stand(client: TestClient, mock: MockApp) -> None:
    run_id = dispatch(client)
    def listed(status: str) -> list[str]:
        page = client.get(f"/v1/agents/{AGENT}/runs", params={"status": status, "limit": 100})
        return [r["run_id"] for r in page.json()["data"]]
    assert run_id in listed("accepted") and run_id not in listed("completed")
    advance(mock, 60)
    assert run_id in listed("completed") and run_id not in listed("accepted")


def test_a_workflow_execution_ends_with_its_events_in_order(
        client: TestClient, mock: MockApp) -> None:
    path = "/v1/workflows/wf_door_code_v2/executions/wx_door_code_aisha/events"
    before = client.get(path, params={"workspace_id": WS}).json()["data"]
    executions = client.get("/v1/workflows/wf_door_code_v2/executions",
                            params={"workspace_id": WS}).json()["data"]
    [execution] = [x for x in executions if x["execution_id"] == "wx_door_code_aisha"]
    # Started 30 s before noon: by now RUNNING (running_after 2 s), not done (60 s).
    assert execution["status"] == "RUNNING" and execution["ended_at"] is None
    advance(mock, 60)
    executions = client.get("/v1/workflows/wf_door_code_v2/executions",
                            params={"workspace_id": WS}).json()["data"]
    [execution] = [x for x in executions if x["execution_id"] == "wx_door_code_aisha"]
    assert execution["status"] == "SUCCESS"
    assert execution["ended_at"] == "2026-11-01T12:00:30.000Z"
    after = client.get(path, params={"workspace_id": WS}).json()["data"]
    assert len(after) > len(before) and after[: len(before)] == before
    assert [e["sequence"] for e in after] == list(range(1, len(after) + 1))
    assert after[-1]["type"] == "COMPLETED"
    stamps = [e["occurred_at"] for e in after]
    assert stamps == sorted(stamps)
    # Paged one by one, the same timeline.
    paged, cursor = [], None
    while True:
        params = {"workspace_id": WS, "limit": 1, **({"cursor": cursor} if cursor else {})}
        page = client.get(path, params=params).json()
        paged += page["data"]
        cursor = page["next_cursor"]
        if not cursor:
            break
    assert paged == after


def test_a_failed_execution_says_why(client: TestClient, mock: MockApp) -> None:
    modes(mock, workflow_executions={"mode": "manual"})
    done = mock.state.write(lambda store: transition(
        store, "workflow_executions", "wx_review_lucas", "FAILED",
        {"error": "Step 'send_review' failed: SMS provider down"}))
    assert done["status"] == "FAILED" and done["ended_at"] == FROZEN_AT
    path = "/v1/workflows/wf_review_request_v1/executions/wx_review_lucas/events"
    events = client.get(path, params={"workspace_id": WS}).json()["data"]
    # The stored timeline ends with a step started (send_review): it fails, then the run.
    assert [e["type"] for e in events[-2:]] == ["STEP_FAILED", "FAILED"]
    assert events[-2]["step_id"] == events[-3]["step_id"] == "send_review"
    assert events[-1]["message"] == "Step 'send_review' failed: SMS provider down"
    assert events[-1]["occurred_at"] == FROZEN_AT
    assert [e["sequence"] for e in events] == list(range(1, len(events) + 1))
    advance(mock, 3600)  # settled: the timeline is stored, and stays as it is
    assert client.get(path, params={"workspace_id": WS}).json()["data"] == events


def test_an_outbound_message_is_delivered(client: TestClient, mock: MockApp) -> None:
    sent = client.post("/v1/conversations/ph_emma_clarke/messages",
                       json={"body": "See you soon"})
    assert sent.status_code in (200, 201), sent.text
    message_id = sent.json()["data"]["id"]

    def status() -> str:
        page = client.get("/v1/conversations/ph_emma_clarke/messages",
                          params={"limit": 100}).json()["data"]
        [found] = [m for m in page if m["id"] == message_id]
        return str(found["status"])

    assert status() == "sent"
    advance(mock, 3)
    assert status() == "delivered"
    advance(mock, 3600)
    assert status() == "read"  # a WhatsApp thread: reads are reported
    with pytest.raises(Refused) as refused:
        mock.state.write(lambda store: transition(store, "messages", message_id, "failed", {}))
    assert refused.value.status == 409 and "is read" in str(refused.value)


def test_a_message_fails_with_a_provider_error(client: TestClient, mock: MockApp) -> None:
    modes(mock, messages={"mode": "manual"})
    sent = client.post("/v1/conversations/ph_emma_clarke/messages", json={"body": "Hello"})
    message_id = sent.json()["data"]["id"]
    with pytest.raises(Refused) as refused:
        mock.state.write(lambda store: transition(store, "messages", message_id, "failed",
                                                  {"error_summary": "x"}))
    assert refused.value.status == 400 and "error_summary" in str(refused.value)
    failed = mock.state.write(lambda store: transition(
        store, "messages", message_id, "failed", {"error": "Twilio error 30006"}))
    assert failed["status"] == "failed" and failed["_error"] == "Twilio error 30006"


def test_a_completed_run_cannot_fail_afterwards(client: TestClient, mock: MockApp) -> None:
    run = run_of(client, dispatch(client))
    advance(mock, 60)
    assert run_of(client, run["run_id"])["status"] == "completed"
    with pytest.raises(Refused) as refused:
        mock.state.write(lambda store: transition(store, "agent_runs", run["id"], "failed",
                                                  {"error": "late"}))
    assert refused.value.status == 409 and "is completed" in str(refused.value)
    assert run_of(client, run["run_id"])["status"] == "completed"


def test_a_pending_file_is_not_searchable_until_indexed(
        client: TestClient, mock: MockApp) -> None:
    made = client.post("/v1/kb/nodes", params={"workspace_id": WS}, json={
        "title": "Quokka policy", "body": "Quokkas are welcome in the garden cottage."})
    assert made.status_code == 201
    node = made.json()["data"]
    assert node["embed_status"] == "pending" and node["chunk_count"] == 0

    def found() -> list[str]:
        hits = client.post("/v1/kb/search", params={"workspace_id": WS},
                           json={"query": "quokkas garden"})
        assert hits.status_code == 200, hits.text
        return [h["node_id"] for h in hits.json()["data"]]

    assert node["id"] not in found()
    advance(mock, 2)
    shown = client.get(f"/v1/kb/nodes/{node['id']}").json()["data"]
    assert shown["embed_status"] == "processing" and node["id"] not in found()
    advance(mock, 8)
    shown = client.get(f"/v1/kb/nodes/{node['id']}").json()["data"]
    assert shown["embed_status"] == "indexed" and shown["chunk_count"] == 1
    assert node["id"] in found()
    # A body edit goes back through pending.
    edited = client.patch(f"/v1/kb/nodes/{node['id']}", params={"workspace_id": WS},
                          json={"body": "Quokkas must stay outside."})
    assert edited.json()["data"]["embed_status"] == "pending"
    assert node["id"] not in found()


def test_the_automation_rate_counts_runs_as_they_complete(
        client: TestClient, mock: MockApp) -> None:
    url = "/v1/insights/conversation-automation-rate"
    # Only ar_aisha_khan_02 (running since 17:43:16, an autopilot agent) is in this period.
    params = {"workspace_id": WS, "start": "2026-10-31T17:43:00.000Z",
              "end": "2026-10-31T17:44:00.000Z"}
    modes(mock, agent_runs={"mode": "manual"})
    held = client.get(url, params=params).json()["data"]
    assert held["total_conversations"] == 1 and held["automated_conversations"] == 0
    modes(mock, agent_runs={"mode": "time"})
    done = client.get(url, params=params).json()["data"]
    assert done["automated_conversations"] == 1 and done["automation_rate"] == 1


def test_cron_triggers_dispatch_runs_as_the_clock_passes_them(
        client: TestClient, mock: MockApp) -> None:
    def cron_runs() -> list[dict[str, Any]]:
        runs = client.get(f"/v1/agents/{AGENT}/runs", params={"limit": 100}).json()["data"]
        return [r for r in runs if r["trigger_id"] == CRON]

    assert cron_runs() == []
    advance(mock, 20 * 3600)  # noon to 08:00 next day: no 09:00 passed
    assert cron_runs() == []
    advance(mock, 3700)  # past 09:00
    [run] = cron_runs()
    assert run["created_at"] == "2026-11-02T09:00:00.000Z" and run["status"] == "completed"
    advance(mock, 2 * 86400)
    assert len(cron_runs()) == 3
    caused = get_progression(mock.state)["caused"]
    assert [c["id"] for c in caused] == [r["id"] for r in reversed(cron_runs())]
    assert caused[0]["cause"] == f"clock: cron trigger {CRON} (0 9 * * *) at {run['created_at']}"


def test_settings_are_refused_naming_the_field(mock: MockApp) -> None:
    for bad, field in [({"agent_runs": {"mode": "slow"}}, "agent_runs.mode"),
                       ({"agent_runs": {"done_after": -1}}, "agent_runs.done_after"),
                       ({"agent_runs": {"running_after": 9, "done_after": 3}},
                        "agent_runs.running_after"),
                       ({"tickets": {"mode": "time"}}, "kind")]:
        with pytest.raises(Refused) as refused:
            mock.state.write(lambda store, bad=bad: set_modes(store, bad))
        assert refused.value.status == 400 and field in str(refused.value)


def test_an_unknown_timezone_is_refused_naming_the_field(client: TestClient) -> None:
    schedule = {"timezone": "Mars/Olympus", "days": []}
    refused = client.patch(f"/v1/agents/{AGENT}", json={"autopilot_schedule": schedule})
    assert refused.status_code == 400
    assert "autopilot_schedule.timezone" in refused.json()["error"]
    assert client.get(f"/v1/agents/{AGENT}").json()["data"]["autopilot_schedule"][
        "timezone"] == "America/Los_Angeles"  # nothing kept
    schedule["timezone"] = "Europe/Vienna"
    assert client.patch(f"/v1/agents/{AGENT}",
                        json={"autopilot_schedule": schedule}).status_code == 200


def test_the_autopilot_schedule_is_read_in_its_timezone() -> None:
    schedule = {"timezone": "America/Los_Angeles", "days": [
        {"day": "sunday", "enabled": True, "ranges": [{"start": "08:00 AM", "end": "11:00 PM"}]},
    ]}
    # 2026-11-01 is a Sunday; 15:00Z is 07:00 in Los Angeles (PST after the change that day),
    # 16:00Z is 08:00.
    assert not in_schedule(schedule, parse_timestamp("2026-11-01T15:00:00.000Z"))
    assert in_schedule(schedule, parse_timestamp("2026-11-01T16:00:00.000Z"))
    assert in_schedule(schedule, parse_timestamp("2026-11-02T06:59:00.000Z"))  # 22:59 Sunday
    assert not in_schedule(schedule, parse_timestamp("2026-11-02T07:00:00.000Z"))
    assert in_schedule(None, 0)


def test_a_page_evaluates_progression_for_its_records_only(
        client: TestClient, mock: MockApp, monkeypatch: pytest.MonkeyPatch) -> None:
    for _ in range(30):
        dispatch(client)
    calls: list[str] = []
    real = context._view

    def counting(store: Any, table: str, record: Any, *args: Any) -> Any:
        calls.append(record["id"])
        return real(store, table, record, *args)

    monkeypatch.setattr(context, "_view", counting)
    page = client.get(f"/v1/agents/{AGENT}/runs", params={"limit": 3}).json()
    assert len(page["data"]) == 3 and len(calls) == 3


def test_a_patch_keeps_an_indexing_file_s_start(client: TestClient, mock: MockApp) -> None:
    node = "65f1a2b30100000000000017"  # pending since its update on 2026-05-01
    day = 86400
    modes(mock, kb_nodes={"mode": "time", "running_after": day, "done_after": 200 * day})
    assert client.get(f"/v1/kb/nodes/{node}").json()["data"]["embed_status"] == "processing"
    patched = client.patch(f"/v1/kb/nodes/{node}", params={"workspace_id": WS},
                           json={"title": "Renamed while indexing"})
    assert patched.status_code == 200, patched.text
    assert patched.json()["data"]["embed_status"] == "processing"
    advance(mock, 20 * day)  # 204 days after 2026-05-01
    assert client.get(f"/v1/kb/nodes/{node}").json()["data"]["embed_status"] == "indexed"


def test_hostile_cron_schedules_are_bounded_and_never_fail(
        client: TestClient, mock: MockApp) -> None:
    def with_triggers(*schedules: str) -> None:
        triggers = [{"name": f"t{i}", "type": "cron", "enabled": True,
                     "config": {"schedule": s}} for i, s in enumerate(schedules)]
        answer = client.patch(f"/v1/agents/{AGENT}", json={"triggers": triggers})
        assert answer.status_code == 200, answer.text

    with_triggers("0 0 31 2 *", "not a cron", "* * * * * *", *["* * * * *"] * 15)
    advance(mock, 366 * 86400)  # a year: 31 Feb never comes, seconds and minutes capped
    runs = client.get(f"/v1/agents/{AGENT}/runs", params={"limit": 100})
    assert runs.status_code == 200
    caused = get_progression(mock.state)["caused"]
    assert len(caused) == 200  # the log keeps the last 200
    total = len(mock.state.store.find(
        "agent_runs", lambda r: (r.get("_progress") or {}).get("cause") is not None))
    assert total == 1000
