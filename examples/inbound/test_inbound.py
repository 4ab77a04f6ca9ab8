"""The example of docs/simulate.md: a polling sync and an escalation desk, tested against
guest messages simulated through the product's rules."""

from __future__ import annotations

from inbox import EscalationDesk, InboxSync

ALPINE = "ws_alpine"
FELIX = "ph_felix_huber"


def test_the_sync_picks_up_a_guest_message(mock_api):
    sync = InboxSync(mock_api.client(), ALPINE)
    sync.poll()  # catch up with the fixtures
    assert sync.poll() == []
    sent = mock_api.simulate.guest_message("Is the sauna open tonight?", conversation_id=FELIX)
    [message] = sync.poll()
    assert message["id"] == sent["message_id"] and message["body"] == "Is the sauna open tonight?"
    assert message["sender"]["name"] == "Felix Huber" and message["channel"] == "email"
    assert sync.poll() == []


def test_the_autopilot_reply_arrives_after_its_delay(mock_api):
    mock_api.clock.set("2026-11-01T12:00:00.000Z")  # 13:00 in Vienna: autopilot on
    sent = mock_api.simulate.guest_message("Early check-in?", conversation_id=FELIX)
    assert sent["mode"] == "autopilot"
    client = mock_api.client()

    def outbound() -> set[str]:
        messages = client.get(f"/v1/conversations/{FELIX}/messages",
                              params={"workspace_id": ALPINE, "limit": 100}).json()["data"]
        return {m["id"] for m in messages if m["direction"] == "outbound"}

    assert sent["sent_message_id"] not in outbound()
    mock_api.clock.advance(15)
    assert sent["sent_message_id"] in outbound()


def test_the_desk_takes_and_resolves_a_new_escalation(mock_api):
    desk = EscalationDesk(mock_api.client(), ALPINE, operator_id="us_lena")
    for old in desk.new_pending():
        desk.handled.add(old["id"])
    mock_api.script_agent("ag_alpine_host", [{"disposition": "escalated",
                                               "response": "Let me ask the team.",
                                               "reflection": "Can we waive the fee?"}])
    sent = mock_api.simulate.guest_message("Can you waive the cleaning fee?",
                                           conversation_id=FELIX)
    [escalation] = desk.new_pending()
    assert escalation["id"] == sent["escalation_id"] and escalation["status"] == "pending"
    assert desk.take(escalation["id"])["assignee"]["id"] == "us_lena"
    assert desk.resolve(escalation["id"])["status"] == "resolved"
    assert desk.new_pending() == []
