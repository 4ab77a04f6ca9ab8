"""Autopilot replies that fall due on the mock's clock (engine/simulate.py schedules them): a
reply is kept in the session's internal `_mock` table with the instant it is due, and written
(the outbound AI message, the thread moved, `auto_mark_as_done` applied) by the write that
reaches that instant: a clock move (`MockState._passed`) or the next simulated event.
DECISIONS I6-I8."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .clock import parse_timestamp
from .handlers._common import preview
from .progression import MOCK_TABLE, _stamp
from .store import Store

__all__ = ["OPEN_TICKET", "PENDING_REPLIES", "deliver_due"]

PENDING_REPLIES = "pending_replies"  # the `_mock` record of autopilot replies not yet due
OPEN_TICKET = ("new", "pending")


def _ai_authorship(current: Any) -> str:
    return "ai" if current in (None, "ai") else "mixed"


def deliver_due(store: Store, now_ms: int) -> int:
    """Write every autopilot reply whose time has come (the mock's clock at `now_ms`): the
    outbound AI message, the thread moved, `auto_mark_as_done` applied. How many."""
    pending = store.get(MOCK_TABLE, PENDING_REPLIES)
    if pending is None or not pending["replies"]:
        return 0
    due = [r for r in pending["replies"] if r["due_ms"] <= now_ms]
    if not due:
        return 0
    store.insert(MOCK_TABLE, {**pending, "replies": [r for r in pending["replies"]
                                                     if r["due_ms"] > now_ms]})
    for reply in sorted(due, key=lambda r: (r["due_ms"], r["message_id"])):
        _send_reply(store, reply)
    return len(due)


def _send_reply(store: Store, reply: Mapping[str, Any]) -> None:
    at = _stamp(reply["due_ms"])
    agent = store.get("agents", reply["agent_id"]) or {}
    conversation = store.get("conversations", reply["conversation_id"])
    contact = store.get("contacts", reply["contact_id"])
    if conversation is None or contact is None:
        return  # deleted meanwhile: nothing to reply to
    store.insert("messages", {
        "id": reply["message_id"], "workspace_id": contact["workspace_id"],
        "conversation_id": conversation["id"], "ticket_id": reply["ticket_id"],
        "channel": reply["channel"], "body": reply["body"], "direction": "outbound",
        "status": "sent", "sent_at": at, "created_at": at,
        # I7: the AI's reply names the agent as its sender (no workspace user wrote it).
        "sender": {"user_id": None, "external_id": None, "name": agent.get("name", "AI agent")},
        "attachments": [], "_agent_run_id": reply["run_id"],
        "_progress": {"start": reply["due_ms"]}})
    store.update("conversations", conversation["id"], {
        "last_message_at": at, "last_message_preview": preview(reply["body"]),
        "authorship": _ai_authorship(conversation.get("authorship")), "updated_at": at})
    store.update("contacts", contact["id"], {
        "last_message_at": at, "last_message_preview": preview(reply["body"]),
        "last_channel": reply["channel"], "updated_at": at})
    ticket = store.get("tickets", reply["ticket_id"])
    if ticket is None:
        return
    changes: dict[str, Any] = {"last_message_at": at, "updated_at": at,
                               "last_message_preview": preview(reply["body"]),
                               "waiting_on": "customer"}
    if ticket.get("first_response_at") is None or ticket.get("_awaiting_reply"):
        changes["_awaiting_reply"] = False
        changes["first_response_at"] = at
        changes["time_to_first_response_ms"] = max(
            0, reply["due_ms"] - _ms(ticket["first_message_at"]))
    if reply["mark_done"] and ticket["status"] in OPEN_TICKET:
        # I8: auto_mark_as_done resolves the ticket the reply answered (as resolveTicket).
        changes.update(status="resolved", resolved_at=at, waiting_on="none",
                       first_resolved_at=ticket.get("first_resolved_at") or at,
                       time_to_resolution_ms=max(0, reply["due_ms"] - _ms(ticket["created_at"])))
        store.update("conversations", conversation["id"], {"updated_at": at})
    store.update("tickets", ticket["id"], changes)


def _ms(stamp: str) -> int:
    return parse_timestamp(stamp)


