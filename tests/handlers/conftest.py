"""Helpers for the handler tests: `make` seeds records of the API shape into the store, each
checked as the fixture loader checks a record (closed schemas, references that resolve).

Each test builds the records it asserts on (in the default fixtures' workspaces, through the
tokens of the default fixtures), so the tests do not depend on the dataset's content.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from conftest import COLLEAGUE, OTHER, WRITE

from mockserver.data.fixtures import insert_checked
from mockserver.engine.app import MockApp

HARBOR = "ws_harborview"
ALPINE = "ws_alpine"
DESERT = "ws_desert"
PAST = "2026-10-01T09:00:00.000Z"


class Factory:
    """Builders of valid records; keyword arguments override fields."""

    def __init__(self, mock: MockApp) -> None:
        self.mock = mock
        self.store = mock.store
        self._seq = itertools.count(1)

    def insert(self, table: str, record: dict[str, Any]) -> None:
        """Insert after the fixture loader's own check (schemas and references)."""
        insert_checked(self.store, self.mock.spec, table, record)

    def _id(self, prefix: str) -> str:
        return f"{prefix}test{next(self._seq):05d}"

    def user_id(self, token: str = WRITE) -> str:
        return next(p.user_id for p in self.mock.tokens if p.token == token)

    def colleague_id(self) -> str:
        return self.user_id(COLLEAGUE)

    def other_user_id(self) -> str:
        return self.user_id(OTHER)

    def clear(self, table: str, ws: str = HARBOR) -> None:
        """Delete the fixture records of a table in one workspace."""
        field = "workspace_id" if table != "workflows" else "_workspace_id"
        for record in self.store.find(table, lambda r: r.get(field) == ws):
            self.store.delete(table, record[self.store.key_fields[table]])

    def contact(self, ws: str = HARBOR, *, conversation: bool = True, **over: Any) -> dict:
        cid = over.pop("id", None) or self._id("ph")
        contact = {
            "id": cid, "workspace_id": ws, "first_name": "Zelda", "last_name": "Quartz",
            "image_url": None, "language": "en", "type": None, "inbox_type_id": "guest",
            "archived": False, "ai_paused": False, "last_channel": "unthreaded_email",
            "last_message_at": PAST, "last_message_preview": "hello", "created_at": PAST,
            "updated_at": PAST,
            "channels": [
                {"id": self._id("hg"), "type": "unthreaded_email", "value": f"{cid}@example.com"},
                {"id": self._id("hg"), "type": "whatsapp", "value": "+1 (415) 555-0142"},
            ],
        }
        contact.update(over)
        self.insert("contacts", contact)
        if conversation:
            self.conversation(contact)
        return contact

    def conversation(self, contact: dict, **over: Any) -> dict:
        conversation = {
            "id": contact["id"], "workspace_id": contact["workspace_id"],
            "contact": {k: contact[k] for k in ("id", "first_name", "last_name", "image_url",
                                                "inbox_type_id")},
            "channel": "unthreaded_email", "archived": contact["archived"],
            "ai_paused": contact["ai_paused"], "follow_up_at": None, "assignee": None,
            "assigned_at": None, "assigned_by": None, "authorship": None,
            "last_message_at": contact["last_message_at"], "last_message_preview": "hello",
            "created_at": contact["created_at"], "updated_at": contact["updated_at"],
        }
        conversation.update(over)
        self.insert("conversations", conversation)
        return conversation

    def ticket(self, contact: dict, **over: Any) -> dict:
        ticket = {
            "id": self._id("xd"), "workspace_id": contact["workspace_id"],
            "contact_id": contact["id"], "conversation_id": contact["id"],
            "channel": "unthreaded_email", "status": "new", "waiting_on": "team",
            "inbox_type_id": "guest", "subject": "Late check-in", "summary": "Guest arrives late",
            "ai_paused": False, "assignee": None, "follow_up_at": None,
            "first_message_at": "2026-10-01T09:00:00.000Z",
            "first_response_at": "2026-10-01T09:05:00.000Z",
            "resolved_at": None, "first_resolved_at": None, "closed_at": None,
            "time_to_first_response_ms": 300000, "time_to_resolution_ms": None,
            "reopen_count": 0, "ai_participated": False,
            "last_message_at": "2026-10-01T09:05:00.000Z", "last_message_preview": "on it",
            "created_at": "2026-10-01T09:00:00.000Z", "updated_at": "2026-10-01T09:05:00.000Z",
            "call_transcript_id": None,
        }
        ticket.update(over)
        self.insert("tickets", ticket)
        return ticket

    def message(self, conversation_id: str, ws: str = HARBOR, **over: Any) -> dict:
        message = {
            "id": self._id("ms"), "workspace_id": ws, "conversation_id": conversation_id,
            "ticket_id": None, "channel": "unthreaded_email", "body": "Is parking free?",
            "direction": "inbound", "status": "received", "sent_at": PAST, "created_at": PAST,
            "sender": {"user_id": None, "external_id": "guest-1", "name": "Guest"},
            "attachments": [],
        }
        message.update(over)
        self.insert("messages", message)
        return message

    def note(self, ticket: dict, author_id: str, **over: Any) -> dict:
        note = {
            "id": self._id("nt"), "workspace_id": ticket["workspace_id"],
            "ticket_id": ticket["id"], "contact_id": ticket["contact_id"], "body": "internal",
            "author": {"user_id": author_id, "name": "Someone", "email": "s@example.com",
                       "picture_url": None},
            "created_at": PAST, "updated_at": None, "attachments": [],
        }
        note.update(over)
        self.insert("ticket_notes", note)
        return note

    def sender(self, ws: str = HARBOR, channel: str = "email", **over: Any) -> dict:
        address = f"{self._id('s')}@example.com"
        kind = {"email": "gmail_account", "whatsapp": "whatsapp_number",
                "sms": "phone_number_config"}[channel]
        sender = {"id": f"{kind}:{address}", "workspace_id": ws, "provider_type": kind,
                  "value": address, "display_name": "Front desk", "channel": channel,
                  "is_default": False}
        sender.update(over)
        self.insert("senders", sender)
        return sender

    def template(self, ws: str = HARBOR, **over: Any) -> dict:
        n = next(self._seq)
        sid = f"HX{n:032x}"
        template = {"id": sid, "content_sid": sid, "workspace_id": ws,
                    "friendly_name": "welcome", "language": "en", "status": "approved",
                    "category": "UTILITY", "content_type": "twilio/text",
                    "rejection_reason": "", "body": "Hi {{1}}, welcome to {{2}}!",
                    "variables": {"1": "Guest name", "2": "Listing name"},
                    "created_at": PAST, "updated_at": PAST}
        template.update(over)
        self.insert("whatsapp_templates", template)
        return template

    def reservation(self, contact: dict, **over: Any) -> dict:
        reservation = {
            "id": self._id("rs"), "workspace_id": contact["workspace_id"],
            "contact_id": contact["id"], "listing_id": "L1", "pms_platform": "hostaway",
            "external_id": "123", "channel_name": "airbnb", "channel_reservation_id": "HM1",
            "confirmation_code": "HM1", "status": "confirmed", "source": "airbnbOfficial",
            "arrival_date": "2026-11-10", "departure_date": "2026-11-14",
            "arrival_at": "2026-11-10T22:00:00.000Z", "departure_at": "2026-11-14T15:00:00.000Z",
            "num_nights": 4, "number_of_guests": 2, "number_of_adults": 2,
            "number_of_children": 0, "number_of_infants": 0, "number_of_pets": 0,
            "guest": {"name": "Zelda Quartz", "first_name": "Zelda", "last_name": "Quartz",
                      "email": None, "phone": None, "country": None, "city": None,
                      "locale": None, "external_account_id": None},
            "payment": {"is_paid": True, "total_price": 500, "currency": "USD",
                        "outstanding_balance": 0},
            "airbnb_payment": None, "door_code": None, "key_code": None, "guest_note": None,
            "ai_paused": False, "created_at": PAST, "updated_at": PAST,
        }
        reservation.update(over)
        self.insert("reservations", reservation)
        return reservation

    def call(self, contact: dict, **over: Any) -> dict:
        call = {
            "id": self._id("ce"), "workspace_id": contact["workspace_id"],
            "contact_id": contact["id"], "conversation_id": contact["id"], "ticket_id": None,
            "call_id": "call_1", "direction": "inbound", "from_phone": "+14155550123",
            "to_phone": "+14155550999", "source": "retell", "is_missed": False,
            "transfer_status": None, "duration_ms": 1000, "sentiment": None, "summary": None,
            "recording_url": None, "started_at": PAST, "created_at": PAST,
            "call_status": {"success": True, "is_voicemail_reached": False,
                            "is_transferred": False},
            "transcript": [],
        }
        call.update(over)
        self.insert("calls", call)
        return call

    def appointment(self, contact: dict, **over: Any) -> dict:
        appointment = {
            "id": self._id("ap"), "workspace_id": contact["workspace_id"],
            "contact_id": contact["id"], "external_id": "bk_1", "status": "confirmed",
            "start_at": PAST, "end_at": PAST, "duration_ms": 0, "origin": "direct",
            "notes": None, "generated_context": None, "short_link_id": None,
            "strength_indicator": None,
            "booking_info": {"name": "Zelda", "email": None, "phone": None, "notes": None},
            "references": [], "last_synced_at": PAST, "created_at": PAST,
        }
        appointment.update(over)
        self.insert("appointments", appointment)
        return appointment

    def helpdesk_ticket(self, contact: dict, **over: Any) -> dict:
        # Mirrors a ticket of the contact (the reference must resolve).
        ticket_id = over.pop("ticket_id", None) or self.ticket(contact)["id"]
        ticket = {
            "id": self._id("hd"), "workspace_id": contact["workspace_id"],
            "contact_id": contact["id"], "ticket_id": ticket_id, "connection_id": "cn1",
            "external_ticket_id": "1", "external_group_id": "g", "external_assignee_id": "a",
            "subject": "Heater", "description": "Broken", "status": "open", "priority": "high",
            "type": "incident", "channel": "email", "tags": [],
            "requester": {"external_id": "r", "name": "Zelda", "email": "z@example.com"},
            "last_external_update_at": PAST, "created_at": PAST,
        }
        ticket.update(over)
        self.insert("helpdesk_tickets", ticket)
        return ticket

    def folder(self, ws: str = HARBOR, **over: Any) -> dict:
        folder = {"id": self._id("wd"), "workspace_id": ws, "name": "Folder", "color": None,
                  "parent_id": None, "workflow_count": 0, "created_at": PAST,
                  "updated_at": PAST}
        folder.update(over)
        self.insert("workflow_folders", folder)
        return folder

    def workflow(self, ws: str = HARBOR, **over: Any) -> dict:
        workflow = {"workflow_id": self._id("wf"), "_workspace_id": ws, "master_id": "wm1",
                    "folder_id": None, "name": "Welcome", "enabled": True, "status": "ACTIVE",
                    "version": 1, "is_latest": True, "color": "#112233",
                    "trigger_summary": "RESERVATION_NEW", "created_at": PAST, "updated_at": PAST}
        workflow.update(over)
        self.insert("workflows", workflow)
        return workflow

    def execution(self, workflow: dict, **over: Any) -> dict:
        execution = {"execution_id": self._id("wx"), "_workspace_id": workflow["_workspace_id"],
                     "workflow_id": workflow["workflow_id"], "master_id": workflow["master_id"],
                     "status": "SUCCESS", "trigger_source": "RESERVATION_NEW",
                     "started_at": PAST, "ended_at": None, "error_summary": None}
        execution.update(over)
        self.insert("workflow_executions", execution)
        return execution

    def event(self, execution: dict, sequence: int, **over: Any) -> dict:
        event = {"id": self._id("we"), "execution_id": execution["execution_id"],
                 "sequence": sequence, "type": "STEP_STARTED", "step_id": None,
                 "step_name": None, "message": None, "data": {}, "occurred_at": PAST}
        event.update(over)
        self.insert("workflow_events", event)
        return event

    def agent_run(self, conversation_id: str, ws: str = HARBOR, **over: Any) -> dict:
        # Run by an agent of the workspace (references must resolve, as in a fixture).
        agent_id = next(a["id"] for a in self.store.all("agents") if a["workspace_id"] == ws)
        run = {"id": self._id("ar"), "run_id": "r", "agent_id": agent_id, "workspace_id": ws,
               "status": "completed", "disposition": "resolved", "disposition_reason": "",
               "autopilot_sent": True, "proposal_outcome": None, "contact_id": conversation_id,
               "conversation_id": conversation_id, "trigger_id": "tr1", "error": None,
               "duration_ms": 1, "token_usage": {"input": 1, "output": 1}, "total_cost": 0,
               "trace_id": "t", "created_at": PAST, "completed_at": PAST,
               "session_id": None, "trigger_event_id": None, "response": None,
               "reflection": None, "tool_trace": []}
        run.update(over)
        self.insert("agent_runs", run)
        return run


@pytest.fixture
def make(mock: MockApp) -> Factory:
    return Factory(mock)

