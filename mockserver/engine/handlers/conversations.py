"""Conversations: the list (the polling hot path), search, detail, transcript and replies.

Conversation records are stored in their exact API shape, so lists send them as they are.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..context import Context
from ..errors import BadRequest
from ..store import Record
from . import operation
from ._common import data, record_outbound_message, where_filtered
from .contacts import contact_matcher


def _updated_since(ctx: Context) -> Callable[[Record], bool] | None:
    since = ctx.query.get("updated_since")
    if since is None:
        return None
    return _updated_at_or_after(since)


def _updated_at_or_after(since: str) -> Callable[[Record], bool]:
    # Timestamps share one fixed format (UTC, milliseconds, Z), so they compare as strings.
    # (Its own function: the closure's cell is made only when the parameter is given.)
    return lambda c: c["updated_at"] >= since


@operation("listConversations")
def list_conversations(ctx: Context) -> dict[str, Any]:
    # Polling rule (documented): with sort_by=last_message_at and order=desc, a client that
    # carries the highest updated_at it has seen as `updated_since` gets every conversation
    # written since (updated_at >= bound): every write moves updated_at, and the store's
    # clock is strictly increasing, so nothing written later can carry an older updated_at.
    return ctx.page(where=where_filtered(ctx, _updated_since(ctx)))


@operation("searchConversations")
def search_conversations(ctx: Context) -> dict[str, Any]:
    field = ctx.query["field"]
    query = ctx.query["query"]
    tests: list[Callable[[Record], bool]] = []
    if field == "message":
        needle = query.lower()
        hits = {m["conversation_id"] for m in ctx.store.all("messages")
                if m["workspace_id"] == ctx.workspace_id and needle in m["body"].lower()}
        tests.append(lambda c: c["id"] in hits)
    else:
        matches = contact_matcher(field, query)
        contacts = ctx.store.rows("contacts")
        # The conversation's contact (same id); its embedded summary when the contact is gone.
        tests.append(lambda c: matches(contacts.get(c["id"]) or c["contact"]))
    return ctx.page(where=where_filtered(ctx, *tests))


def _latest_ticket(ctx: Context, conversation_id: str) -> dict[str, Any] | None:
    index = ctx.store.index("tickets", ("conversation_id",), ("created_at",))
    for key in index.keys((conversation_id,), after=None, descending=True):
        ticket = ctx.store.get("tickets", key[-1])
        if ticket is not None:
            return {"id": ticket["id"], "status": ticket["status"]}
    return None


def _reservation_context(ctx: Context, contact_id: str) -> dict[str, Any] | None:
    # Inferred: the reservation context is the contact's current or next stay (the earliest
    # non-cancelled reservation not yet departed), else the most recent reservation.
    index = ctx.store.index("reservations", ("contact_id",), ("arrival_date",))
    today = ctx.store.clock.now()[:10]
    chosen: Record | None = None
    for key in index.keys((contact_id,), after=None, descending=False):
        reservation = ctx.store.get("reservations", key[-1])
        if reservation is None:
            continue
        if reservation["departure_date"] >= today and reservation["status"] != "cancelled":
            chosen = reservation
            break
        chosen = reservation
    if chosen is None:
        return None
    return {"id": chosen["id"], "status": chosen["status"], "arrival_date": chosen["arrival_date"],
            "departure_date": chosen["departure_date"], "listing_id": chosen["listing_id"]}


@operation("getConversation")
def get_conversation(ctx: Context) -> dict[str, Any]:
    conversation = ctx.resource
    assert conversation is not None
    summary = ctx.store.get("conversation_summaries", conversation["id"]) or {}
    detail = {
        **conversation,
        "summary": summary.get("summary"),
        "sentiment": summary.get("sentiment"),
        "ticket": _latest_ticket(ctx, conversation["id"]),
        "reservation": _reservation_context(ctx, conversation["contact"]["id"]),
    }
    return data(ctx, detail)


@operation("sendConversationMessage")
def send_conversation_message(ctx: Context) -> dict[str, Any]:
    conversation = ctx.resource
    assert conversation is not None
    sender_id = ctx.body.get("sender_id")
    if sender_id is not None:
        sender = ctx.store.get("senders", sender_id)
        if sender is None or sender["workspace_id"] != ctx.workspace_id:
            raise BadRequest(f"body field 'sender_id': {sender_id!r} is not a sender of workspace "
                             f"{ctx.workspace_id!r}")
    # Inferred: a conversation reply goes out on the conversation's channel and belongs to no
    # ticket (ticket_id null); replies inside a ticket go through POST /v1/tickets/{id}/messages.
    message = record_outbound_message(
        ctx, conversation_id=conversation["id"], channel=conversation["channel"],
        body=ctx.body["body"], internal={"_sender_id": sender_id},
    )
    return data(ctx, message)
