"""Simulated inbound events over the control API (`POST /__mock__/simulate/...`, HTTP
transport): a guest message through the product's rules (thread, ticket, message trigger,
autopilot schedule, escalation), and a reservation synced (workflows started)."""

from __future__ import annotations

from typing import Any

from starlette.testclient import TestClient

FELIX = "ph_felix_huber"  # ws_alpine, email, open ticket xd_felix_huber_ski_passes
ALPINE = {"workspace_id": "ws_alpine"}
NOON_VIENNA = "2026-11-01T12:00:00.000Z"  # 13:00 in Vienna (CET), a Sunday
NIGHT_VIENNA = "2026-11-01T22:00:00.000Z"  # 23:00 in Vienna: outside 07:00-21:00


def guest(api: TestClient, status: int = 200, **body: Any) -> dict[str, Any]:
    answer = api.post("/__mock__/simulate/guest-message", json=body)
    assert answer.status_code == status, answer.text
    found: dict[str, Any] = answer.json()
    return found.get("data", found)


def at(api: TestClient, instant: str) -> None:
    assert api.post("/__mock__/clock", json={"now": instant}).status_code == 200


def get(api: TestClient, path: str, **params: Any) -> Any:
    answer = api.get(path, params=params)
    assert answer.status_code == 200, answer.text
    return answer.json()["data"]


def transcript(api: TestClient, conversation: str = FELIX) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = get(api, f"/v1/conversations/{conversation}/messages",
                                      limit=100, **ALPINE)
    return found


def test_a_guest_message_is_returned_by_the_documented_poll(api: TestClient) -> None:
    page = get(api, "/v1/conversations", sort_by="last_message_at", order="desc", limit=100,
               **ALPINE)
    bound = max(c["updated_at"] for c in page)
    api.post(f"/v1/contacts/{FELIX}/pause-ai", params=ALPINE)  # no run: only the thread
    done = guest(api, conversation_id=FELIX, body="Is the sauna open tonight?")
    polled = get(api, "/v1/conversations", sort_by="last_message_at", order="desc",
                 updated_since=bound, limit=100, **ALPINE)
    assert [c["id"] for c in polled][:1] == [FELIX]
    assert polled[0]["last_message_preview"] == "Is the sauna open tonight?"
    assert polled[0]["last_message_at"] == polled[0]["updated_at"] > bound
    [message] = [m for m in transcript(api) if m["id"] == done["message_id"]]
    assert message["direction"] == "inbound" and message["status"] == "received"
    assert message["channel"] == "email"
    assert message["sender"] == {"user_id": None, "external_id": "felix.huber@gmx.at",
                                 "name": "Felix Huber"}
    assert message["ticket_id"] == done["ticket_id"] == "xd_felix_huber_ski_passes"
    contact = get(api, f"/v1/contacts/{FELIX}", **ALPINE)
    assert contact["last_message_at"] == polled[0]["last_message_at"]
    # the message is this guest's only: no other conversation lists it
    other = transcript(api, "ph_anna_gruber") if any(
        c["id"] == "ph_anna_gruber" for c in page) else []
    assert done["message_id"] not in {m["id"] for m in other}


def test_the_open_ticket_waits_on_the_team(api: TestClient) -> None:
    api.post("/v1/tickets/xd_felix_huber_ski_passes/resolve", params=ALPINE)
    ticket = get(api, "/v1/tickets/xd_felix_huber_ski_passes", **ALPINE)
    assert ticket["status"] == "resolved" and ticket["reopen_count"] == 0
    done = guest(api, conversation_id=FELIX, body="One more question.")
    ticket = get(api, "/v1/tickets/xd_felix_huber_ski_passes", **ALPINE)
    assert done["ticket_id"] == ticket["id"]
    assert ticket["status"] == "pending" and ticket["reopen_count"] == 1
    assert ticket["waiting_on"] == "team" and ticket["resolved_at"] is None


def test_a_closed_ticket_gives_way_to_a_new_one(api: TestClient) -> None:
    api.post("/v1/tickets/xd_felix_huber_ski_passes/resolve", params=ALPINE)
    api.post("/v1/tickets/xd_felix_huber_ski_passes/close", params=ALPINE)
    done = guest(api, conversation_id=FELIX, body="New topic: parking?")
    assert done["ticket_id"] != "xd_felix_huber_ski_passes"
    ticket = get(api, f"/v1/tickets/{done['ticket_id']}", **ALPINE)
    assert ticket["status"] == "new" and ticket["waiting_on"] == "team"
    assert ticket["contact_id"] == FELIX and ticket["conversation_id"] == FELIX


def test_autopilot_inside_its_vienna_window_replies_after_its_delay(api: TestClient) -> None:
    at(api, NOON_VIENNA)
    done = guest(api, conversation_id=FELIX, body="Can we check in early?")
    assert done["mode"] == "autopilot" and done["agent_id"] == "ag_alpine_host"
    assert done["reply_due_at"] == "2026-11-01T12:00:15.000Z"  # custom_response_delay_ms 15000
    ids = {m["id"] for m in transcript(api)}
    assert done["sent_message_id"] not in ids  # not before the delay
    api.post("/__mock__/clock", json={"advance_seconds": 14})
    assert done["sent_message_id"] not in {m["id"] for m in transcript(api)}
    api.post("/__mock__/clock", json={"advance_seconds": 1})
    [reply] = [m for m in transcript(api) if m["id"] == done["sent_message_id"]]
    assert reply["direction"] == "outbound" and reply["channel"] == "email"
    assert reply["sent_at"] == "2026-11-01T12:00:15.000Z"
    run = get(api, f"/v1/agents/ag_alpine_host/runs/{done['run_id']}", **ALPINE)
    assert run["autopilot_sent"] is True and run["status"] == "completed"
    assert run["conversation_id"] == FELIX
    ticket = get(api, f"/v1/tickets/{done['ticket_id']}", **ALPINE)
    assert ticket["status"] == "resolved"  # auto_mark_as_done
    conversation = get(api, f"/v1/conversations/{FELIX}", **ALPINE)
    assert conversation["updated_at"] == "2026-11-01T12:00:15.000Z"


def test_autopilot_outside_its_window_proposes_and_sends_nothing(api: TestClient) -> None:
    at(api, NIGHT_VIENNA)
    done = guest(api, conversation_id=FELIX, body="Can we check in early?")
    assert done["mode"] == "proposal" and done["sent_message_id"] is None
    before = transcript(api)
    api.post("/__mock__/clock", json={"advance_seconds": 3600})
    assert [m for m in transcript(api) if m["direction"] == "outbound"
            and m["created_at"] > NIGHT_VIENNA] == []
    assert len(transcript(api)) == len(before)
    run = get(api, f"/v1/agents/ag_alpine_host/runs/{done['run_id']}", **ALPINE)
    assert run["autopilot_sent"] is False and run["proposal_outcome"] == "pending"


def test_ai_paused_runs_nothing(api: TestClient) -> None:
    at(api, NOON_VIENNA)
    assert api.post(f"/v1/contacts/{FELIX}/pause-ai", params=ALPINE).status_code == 200
    runs_before = get(api, "/v1/agents/ag_alpine_host/runs", limit=100, **ALPINE)
    done = guest(api, conversation_id=FELIX, body="Hello?")
    assert done["mode"] == "ai_paused" and done["run_id"] is None
    assert get(api, "/v1/agents/ag_alpine_host/runs", limit=100, **ALPINE) == runs_before


def test_an_escalating_outcome_opens_a_pending_escalation_assign_and_resolve_handle(
        api: TestClient) -> None:
    at(api, NOON_VIENNA)
    script = {"outcomes": [{"disposition": "escalated",
                            "disposition_reason": "Needs a manager.",
                            "response": "Let me check with the team.",
                            "reflection": "May we waive the cleaning fee?"}]}
    assert api.put("/__mock__/scripts/agents/ag_alpine_host", json=script).status_code == 200
    done = guest(api, conversation_id=FELIX, body="Can you waive the cleaning fee?")
    assert done["mode"] == "escalated" and done["sent_message_id"] is None
    escalation = get(api, f"/v1/escalations/{done['escalation_id']}", **ALPINE)
    assert escalation["status"] == "pending"
    assert escalation["agent_run_id"] == done["run_id"]
    pending = get(api, "/v1/escalations", status="pending", limit=100, **ALPINE)
    assert done["escalation_id"] in {e["id"] for e in pending}
    assigned = api.post(f"/v1/escalations/{done['escalation_id']}/assign", params=ALPINE,
                        json={"assignee_id": "us_lena"})
    assert assigned.status_code == 200, assigned.text
    resolved = api.post(f"/v1/escalations/{done['escalation_id']}/resolve", params=ALPINE,
                        json={"status": "resolved"})
    assert resolved.status_code == 200 and resolved.json()["data"]["status"] == "resolved"
    stored = api.get(f"/__mock__/records/escalations/{done['escalation_id']}").json()["data"]
    assert stored["guest_message"] == "Can you waive the cleaning fee?"
    assert stored["proposed_response"] == "Let me check with the team."
    assert stored["questions_for_operator"] == "May we waive the cleaning fee?"


def test_an_unknown_conversation_is_404_and_nothing_is_written(api: TestClient) -> None:
    def written() -> Any:
        return (api.get("/__mock__/sessions/default").json()["changes"], transcript(api),
                get(api, "/v1/conversations", limit=100, **ALPINE),
                get(api, "/v1/tickets", limit=100, **ALPINE))

    before = written()
    refused = guest(api, 404, conversation_id="ph_nobody", body="Hi")
    assert "conversation_id" in refused["error"]
    refused = guest(api, 404, contact_id="ph_nobody", channel="sms", body="Hi")
    assert "contact_id" in refused["error"]
    refused = guest(api, 400, conversation_id=FELIX, body="")
    assert "body" in refused["error"]
    refused = guest(api, 400, contact_id=FELIX, channel="fax", body="Hi")
    assert "channel" in refused["error"]
    assert written() == before


def test_a_new_reservation_starts_the_reservation_new_workflow(api: TestClient) -> None:
    answer = api.post("/__mock__/simulate/reservation", json={
        "workspace_id": "ws_alpine", "contact_id": FELIX, "status": "confirmed",
        "listing_id": "lst_edelweiss_chalet",
        "arrival_date": "2027-01-09", "departure_date": "2027-01-16"})
    assert answer.status_code == 200, answer.text
    done = answer.json()["data"]
    assert done["created"] and done["trigger"] == "RESERVATION_NEW"
    reservation = get(api, f"/v1/reservations/{done['reservation']['id']}", **ALPINE)
    assert reservation["contact_id"] == FELIX and reservation["num_nights"] == 7
    assert reservation["key_code"] is None  # not another guest's
    [execution_id] = done["execution_ids"]
    executions = get(api, "/v1/workflows/wf_ski_pass_v2/executions", limit=100, **ALPINE)
    [execution] = [x for x in executions if x["execution_id"] == execution_id]
    assert execution["trigger_source"] == "RESERVATION_NEW" and execution["status"] == "STARTED"


def test_a_reservation_is_changed_and_cancelled_and_unknown_ids_are_refused(
        api: TestClient) -> None:
    key = "rs_felix_huber_edelweiss_chalet"
    changed = api.post("/__mock__/simulate/reservation", json={"id": key, "door_code": "4821"})
    assert changed.status_code == 200, changed.text
    assert changed.json()["data"]["execution_ids"] == []
    assert get(api, f"/v1/reservations/{key}", **ALPINE)["door_code"] == "4821"
    cancelled = api.post("/__mock__/simulate/reservation", json={"id": key,
                                                                  "status": "cancelled"})
    assert cancelled.json()["data"]["trigger"] == "RESERVATION_CANCELLED"
    assert get(api, f"/v1/reservations/{key}", **ALPINE)["status"] == "cancelled"
    missing = api.post("/__mock__/simulate/reservation", json={"id": "rs_nope", "status": "x"})
    assert missing.status_code == 404 and "'id'" in missing.json()["error"]
    bad = api.post("/__mock__/simulate/reservation", json={
        "workspace_id": "ws_alpine", "contact_id": "ph_nobody", "status": "confirmed",
        "arrival_date": "2027-01-09", "departure_date": "2027-01-16"})
    assert bad.status_code == 404 and "contact_id" in bad.json()["error"]
    before = get(api, f"/v1/reservations/{key}", **ALPINE)
    odd = api.post("/__mock__/simulate/reservation", json={"id": key, "num_nights": "seven"})
    assert odd.status_code == 400 and "num_nights" in odd.json()["error"]
    assert get(api, f"/v1/reservations/{key}", **ALPINE) == before


def test_resolving_reopening_and_closing_a_ticket_move_its_conversation(api: TestClient
                                                                        ) -> None:
    ticket = "xd_felix_huber_ski_passes"
    for action in ("resolve", "reopen", "resolve", "close"):
        before = get(api, f"/v1/conversations/{FELIX}", **ALPINE)["updated_at"]
        api.post("/__mock__/clock", json={"advance_seconds": 60})
        moved = api.post(f"/v1/tickets/{ticket}/{action}", params=ALPINE)
        assert moved.status_code == 200, moved.text
        polled = get(api, "/v1/conversations", sort_by="last_message_at", order="desc",
                     updated_since=moved.json()["data"]["updated_at"], **ALPINE)
        assert [c["id"] for c in polled] == [FELIX], action
        assert polled[0]["updated_at"] > before


def test_contact_and_channel_choose_the_sender_and_the_first_created_agent_answers(
        api: TestClient) -> None:
    harbor = {"workspace_id": "ws_harborview"}
    done = guest(api, contact_id="ph_emma_clarke", channel="email", body="Invoice please",
                 attachments=[{"url": "https://files.example.com/a.pdf",
                               "content_type": "application/pdf", "name": "a.pdf"}])
    assert done["conversation_id"] == "ph_emma_clarke"
    messages = get(api, "/v1/conversations/ph_emma_clarke/messages", limit=100, **harbor)
    [message] = [m for m in messages if m["id"] == done["message_id"]]
    assert message["channel"] == "email" and message["attachments"][0]["name"] == "a.pdf"
    contact = get(api, "/v1/contacts/ph_emma_clarke", **harbor)
    assert message["sender"]["external_id"] == next(
        c["value"] for c in contact["channels"] if c["type"] == "email")
    stored = api.get("/__mock__/records/contacts/ph_emma_clarke").json()["data"]
    assert stored["last_channel"] == "email"
    # whatsapp: ag_harbor_concierge (created 2026-05-01) and ag_harbor_night_owl both match
    done = guest(api, contact_id="ph_emma_clarke", channel="whatsapp", body="Hi again")
    assert done["agent_id"] == "ag_harbor_concierge"
    # an owner's message: the owner agent is inactive, nothing runs
    done = guest(api, conversation_id="ph_grace_whitfield", body="Statement?")
    assert done["run_id"] is None and done["mode"] is None
    refused = guest(api, 400, conversation_id=FELIX, body="x",
                    attachments=[{"url": "https://files.example.com/a.pdf"}])
    assert "attachments" in refused["error"]


def test_an_inactive_agent_does_not_answer(api: TestClient) -> None:
    moved = api.patch("/v1/agents/ag_alpine_host", params=ALPINE,
                      json={"operation_mode": "inactive"})
    assert moved.status_code == 200, moved.text
    done = guest(api, conversation_id=FELIX, body="Anyone?")
    assert done["run_id"] is None and done["mode"] is None


def test_what_an_event_caused_is_listed_with_its_cause(api: TestClient) -> None:
    at(api, NOON_VIENNA)
    done = guest(api, conversation_id=FELIX, body="Sauna?")
    caused = api.get("/__mock__/progression").json()["caused"]
    by_id = {entry["id"]: entry for entry in caused}
    assert by_id[done["message_id"]]["cause"].startswith(
        f"simulated guest message {done['message_id']} on email")
    assert "(autopilot)" in by_id[done["run_id"]]["cause"]
    assert by_id[done["sent_message_id"]]["at"] == done["reply_due_at"]
    booked = api.post("/__mock__/simulate/reservation", json={
        "workspace_id": "ws_alpine", "contact_id": FELIX, "status": "confirmed",
        "arrival_date": "2027-01-09", "departure_date": "2027-01-16"}).json()["data"]
    caused = api.get("/__mock__/progression").json()["caused"]
    [started] = [e for e in caused if e["id"] == booked["execution_ids"][0]]
    assert "RESERVATION_NEW of workflow wf_ski_pass_v2" in started["cause"]
