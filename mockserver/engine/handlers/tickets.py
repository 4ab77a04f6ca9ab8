"""Tickets: the queue, ticket transcripts and replies, internal notes, and the state machine.

    new ──┐                 ┌── reopen ──┐
          ├── resolve ──> resolved <─────┘ (back to pending)
 pending ─┘                 └── close ──> closed (final)

The machine's states are declared in the document (`x-mock-transition` on resolveTicket,
reopenTicket and closeTicket), which the gate's state rule reads too.

Every write through a ticket endpoint (reply, note, note edit, transition) moves the ticket's
updated_at.
"""

from __future__ import annotations

from typing import Any

from ..clock import parse_timestamp
from ..context import Context
from ..errors import BadRequest, Forbidden, NotFound
from ..store import Record
from . import operation
from ._common import (
    author,
    data,
    is_member,
    preview,
    record_outbound_message,
    transition,
    where_filtered,
)
from .attachments import resolve_attachments


def _ms_between(start: str, end: str) -> int:
    return max(0, parse_timestamp(end) - parse_timestamp(start))


# -- the queue --------------------------------------------------------------------------------


@operation("searchTickets")
def search_tickets(ctx: Context) -> dict[str, Any]:
    needle = ctx.query["query"].lower()

    def matches(t: Record) -> bool:
        return any(needle in (t.get(f) or "").lower()
                   for f in ("subject", "summary", "last_message_preview"))

    return ctx.page(where=where_filtered(ctx, matches))


# -- transcript and replies ------------------------------------------------------------------


@operation("sendTicketMessage")
def send_ticket_message(ctx: Context) -> dict[str, Any]:
    ticket = ctx.resource
    assert ticket is not None
    attachments = resolve_attachments(ctx, ctx.body.get("attachments"))
    if ctx.store.get("conversations", ticket["conversation_id"]) is None:
        raise NotFound(f"conversation {ticket['conversation_id']!r} of ticket {ticket['id']!r} not found")
    # Inferred: the reply goes out on the ticket's channel; it does not change the ticket's
    # status or waiting_on (the description ties no transition to a reply), and it is accepted
    # in every status (closing preserves the conversation history).
    message = record_outbound_message(
        ctx, conversation_id=ticket["conversation_id"], channel=ticket["channel"],
        body=ctx.body["body"], ticket_id=ticket["id"], attachments=attachments,
    )
    at = message["created_at"]
    changes: dict[str, Any] = {"last_message_at": at, "last_message_preview": preview(message["body"]),
                               "updated_at": at}
    if ticket.get("first_response_at") is None or ticket.get("_awaiting_reply"):
        # (a ticket a simulated guest message opened shows its first message's instant
        # until the first reply: engine/simulate.py, DECISIONS I4)
        changes["_awaiting_reply"] = False
        changes["first_response_at"] = at
        changes["time_to_first_response_ms"] = _ms_between(ticket["first_message_at"], at)
    ctx.store.update("tickets", ticket["id"], changes)
    return data(ctx, message)


# -- internal notes ---------------------------------------------------------------------------


@operation("createTicketNote")
def create_ticket_note(ctx: Context) -> dict[str, Any]:
    ticket = ctx.resource
    assert ticket is not None
    mentions = ctx.body.get("mention_user_ids") or []
    for i, user_id in enumerate(mentions):
        if not is_member(ctx, user_id, ticket["workspace_id"]):
            raise BadRequest(f"body field 'mention_user_ids/{i}': {user_id!r} is not a user of "
                             f"workspace {ticket['workspace_id']!r}")
    attachments = resolve_attachments(ctx, ctx.body.get("attachments"))
    now = ctx.now()
    note = {
        "id": ctx.new_id("ticket_notes"),
        "workspace_id": ticket["workspace_id"],
        "ticket_id": ticket["id"],
        "contact_id": ticket["contact_id"],
        "body": ctx.body["body"],
        "author": author(ctx),
        "created_at": now,
        "updated_at": None,
        "attachments": attachments,
        "_mention_user_ids": list(mentions),
    }
    ctx.store.insert("ticket_notes", note)
    ctx.store.update("tickets", ticket["id"], {"updated_at": now})
    return data(ctx, note)


@operation("updateTicketNote")
def update_ticket_note(ctx: Context) -> dict[str, Any]:
    ticket = ctx.resource
    assert ticket is not None
    note_id = ctx.path["note_id"]
    note = ctx.store.get("ticket_notes", note_id)
    if note is None or note["ticket_id"] != ticket["id"]:
        raise NotFound(f"note {note_id!r} not found on ticket {ticket['id']!r}")
    # Documented: only the note's author may edit it; the status (403) is inferred.
    if note["author"]["user_id"] != ctx.principal.user_id:
        raise Forbidden(f"note {note_id!r} can be edited only by its author "
                        f"({note['author']['user_id']!r})")
    now = ctx.now()
    note = ctx.store.update("ticket_notes", note_id, {"body": ctx.body["body"], "updated_at": now})
    ctx.store.update("tickets", ticket["id"], {"updated_at": now})
    return data(ctx, note)


def _touch_conversation(ctx: Context, ticket: Record, now: str) -> None:
    """Inferred (DECISIONS I14): the conversation's detail shows its latest ticket's status,
    so a transition of that ticket is a change of the conversation: its updated_at moves (the
    documented poll, `updated_since`, returns it)."""
    conversation_id = ticket.get("conversation_id")
    if isinstance(conversation_id, str) and ctx.store.get("conversations", conversation_id):
        ctx.store.update("conversations", conversation_id, {"updated_at": now})


# -- state machine ----------------------------------------------------------------------------
# Which status each action leaves from and moves to is the document's `x-mock-transition`
# (`transition` checks it, 400 otherwise); the handlers set what else the move changes.


@operation("resolveTicket")
def resolve_ticket(ctx: Context) -> dict[str, Any]:
    ticket, moved = transition(ctx)
    now = ctx.now()
    ticket = ctx.store.update("tickets", ticket["id"], {
        **moved,
        "resolved_at": now,
        "first_resolved_at": ticket.get("first_resolved_at") or now,
        "time_to_resolution_ms": _ms_between(ticket["created_at"], now),
        "waiting_on": "none",
        "updated_at": now,
    })
    _touch_conversation(ctx, ticket, now)
    return data(ctx, ticket)


@operation("reopenTicket")
def reopen_ticket(ctx: Context) -> dict[str, Any]:
    ticket, moved = transition(ctx)
    now = ctx.now()
    # Inferred: a reopened ticket waits on the team again; first_resolved_at keeps the first
    # resolution.
    ticket = ctx.store.update("tickets", ticket["id"], {
        **moved,
        "reopen_count": ticket.get("reopen_count", 0) + 1,
        "resolved_at": None,
        "time_to_resolution_ms": None,
        "waiting_on": "team",
        "updated_at": now,
    })
    _touch_conversation(ctx, ticket, now)
    return data(ctx, ticket)


@operation("closeTicket")
def close_ticket(ctx: Context) -> dict[str, Any]:
    ticket, moved = transition(ctx)
    now = ctx.now()
    ticket = ctx.store.update("tickets", ticket["id"], {
        **moved, "closed_at": now, "updated_at": now,
    })
    _touch_conversation(ctx, ticket, now)
    return data(ctx, ticket)
