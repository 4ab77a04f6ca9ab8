"""A call ending, a helpdesk ticket synced and a delivery outcome, over the control API."""

from __future__ import annotations

from typing import Any

from starlette.testclient import TestClient

from tests.simulate.test_guest_message import ALPINE, FELIX, NOON_VIENNA, at, get, guest

HARBOR = {"workspace_id": "ws_harborview"}


def post(api: TestClient, event: str, body: dict[str, Any], status: int = 200) -> Any:
    answer = api.post(f"/__mock__/simulate/{event}", json=body)
    assert answer.status_code == status, answer.text
    return answer.json().get("data", answer.json())


def test_a_call_ends_on_the_contacts_conversation_and_open_ticket(api: TestClient) -> None:
    before = get(api, "/v1/conversations/ph_tom_gallagher", **HARBOR)["updated_at"]
    api.post("/__mock__/clock", json={"advance_seconds": 120})
    call = post(api, "call", {"contact_id": "ph_tom_gallagher", "duration_ms": 61000,
                              "summary": "Asked about parking.",
                              "transcript": [{"author": "guest", "text": "Where do I park?",
                                              "start": 0.0, "end": 2.1}]})
    shown = get(api, f"/v1/calls/{call['id']}", **HARBOR)
    assert shown["conversation_id"] == "ph_tom_gallagher" and shown["summary"] == \
        "Asked about parking."
    assert shown["transcript"][0]["text"] == "Where do I park?"
    assert shown["from_phone"] == "+15035550178"  # Tom's own number, not another guest's
    after = get(api, "/v1/conversations/ph_tom_gallagher", **HARBOR)["updated_at"]
    assert after > before
    refused = post(api, "call", {"contact_id": "ph_nobody"}, 404)
    assert "contact_id" in refused["error"]
    refused = post(api, "call", {"contact_id": "ph_tom_gallagher", "sentiment": 5}, 400)
    assert "sentiment" in refused["error"]
    refused = post(api, "call", {"contact_id": "ph_tom_gallagher",
                                 "id": "ce_tom_gallagher_lost_items"}, 400)  # not overwritten
    assert "'id'" in refused["error"]
    refused = post(api, "call", {"contact_id": "ph_tom_gallagher",
                                 "ticket_id": "xd_felix_huber_ski_passes"}, 400)
    assert "ticket_id" in refused["error"]


def test_a_helpdesk_ticket_syncs_from_upstream(api: TestClient) -> None:
    synced = post(api, "helpdesk-ticket", {"id": "hd_emma_clarke_zendesk", "status": "open",
                                           "priority": "high"})
    shown = get(api, "/v1/helpdesk-tickets/hd_emma_clarke_zendesk", **HARBOR)
    assert shown["status"] == "open" and shown["priority"] == "high"
    assert shown["last_external_update_at"] == synced["last_external_update_at"] > \
        "2026-10-15T09:05:00.000Z"
    refused = post(api, "helpdesk-ticket", {"id": "hd_nope", "status": "open"}, 404)
    assert "'id'" in refused["error"]
    refused = post(api, "helpdesk-ticket", {"id": "hd_emma_clarke_zendesk",
                                            "contact_id": "ph_lucas_meyer"}, 400)
    assert "contact_id" in refused["error"]
    new = post(api, "helpdesk-ticket", {"contact_id": "ph_lucas_meyer",
                                        "connection_id": "cn_harbor_zendesk",
                                        "external_ticket_id": "50001", "subject": "Wifi",
                                        "status": "new"})
    assert new["requester"]["name"] == "Lucas Meyer"
    assert get(api, f"/v1/tickets/{new['ticket_id']}", **HARBOR)["contact_id"] == "ph_lucas_meyer"
    refused = post(api, "helpdesk-ticket", {"contact_id": "ph_lucas_meyer",
                                            "connection_id": "cn_harbor_zendesk",
                                            "external_ticket_id": "50002", "subject": "Wifi",
                                            "status": "new",
                                            "ticket_id": "xd_aisha_khan_parking"}, 400)
    assert "ticket_id" in refused["error"]


def test_a_delivery_outcome_fails_an_outbound_message(api: TestClient) -> None:
    at(api, NOON_VIENNA)
    done = guest(api, conversation_id=FELIX, body="Towels?")
    api.post("/__mock__/clock", json={"advance_seconds": 15})
    failed = post(api, "delivery", {"message_id": done["sent_message_id"], "status": "failed",
                                    "error": "Twilio error 30006"})
    assert failed["status"] == "failed"
    messages = get(api, f"/v1/conversations/{FELIX}/messages", limit=100, **ALPINE)
    assert [m["status"] for m in messages if m["id"] == done["sent_message_id"]] == ["failed"]
    refused = post(api, "delivery", {"message_id": done["sent_message_id"],
                                     "status": "read"}, 409)
    assert "failed" in refused["error"]
    refused = post(api, "delivery", {"message_id": "ms_nope", "status": "read"}, 404)
    assert "message_id" in refused["error"]
