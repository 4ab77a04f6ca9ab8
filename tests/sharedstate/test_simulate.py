"""Simulated inbound events on Redis shared state: an event on one worker is one write of the
log, read the same on every worker; the autopilot reply falls due as any worker moves the
clock."""

from __future__ import annotations

from typing import Any

from starlette.testclient import TestClient

from .conftest import Workers

ALPINE = {"workspace_id": "ws_alpine"}


def transcript(client: TestClient) -> list[dict[str, Any]]:
    answer = client.get("/v1/conversations/ph_felix_huber/messages",
                        params={**ALPINE, "limit": 100})
    assert answer.status_code == 200, answer.text
    found: list[dict[str, Any]] = answer.json()["data"]
    return found


def test_a_guest_message_on_one_worker_is_read_on_another(workers: Workers) -> None:
    a, b = workers.add(), workers.add()
    assert a.post("/__mock__/clock", json={"now": "2026-11-01T12:00:00.000Z"}).status_code == 200
    sent = a.post("/__mock__/simulate/guest-message",
                  json={"conversation_id": "ph_felix_huber", "body": "Sauna tonight?"})
    assert sent.status_code == 200, sent.text
    done = sent.json()["data"]
    assert done["mode"] == "autopilot"
    assert done["message_id"] in {m["id"] for m in transcript(b)}
    assert done["sent_message_id"] not in {m["id"] for m in transcript(b)}
    assert b.post("/__mock__/clock", json={"advance_seconds": 15}).status_code == 200
    assert [m["id"] for m in transcript(a)] == [m["id"] for m in transcript(b)]
    assert done["sent_message_id"] in {m["id"] for m in transcript(a)}
    refused = b.post("/__mock__/simulate/guest-message",
                     json={"conversation_id": "ph_nobody", "body": "Hi"})
    assert refused.status_code == 404
    booked = b.post("/__mock__/simulate/reservation", json={
        "workspace_id": "ws_alpine", "contact_id": "ph_felix_huber", "status": "confirmed",
        "listing_id": "lst_edelweiss_chalet", "arrival_date": "2027-01-09",
        "departure_date": "2027-01-16"})
    assert booked.status_code == 200, booked.text
    [execution_id] = booked.json()["data"]["execution_ids"]
    executions = a.get("/v1/workflows/wf_ski_pass_v2/executions",
                       params={**ALPINE, "limit": 100}).json()["data"]
    assert execution_id in {x["execution_id"] for x in executions}
