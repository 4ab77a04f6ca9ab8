"""Small pieces several families share."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..context import Context
from ..store import Record

__all__ = ["data", "get_resource"]
__all__ += ["author", "flag", "full_name", "is_member", "move_thread", "name_taken", "preview",
            "record_outbound_message", "where_equal"]


def data(ctx: Context, record: Record, schema: str | None = None) -> dict[str, Any]:
    """`{"data": record}` projected onto a document schema (by default the one the
    operation's success response sends)."""
    return {"data": ctx.shape(record, schema)}


def get_resource(ctx: Context) -> dict[str, Any]:
    """The addressed resource (already resolved and access-checked), projected onto the
    schema the operation's response sends."""
    assert ctx.resource is not None
    return data(ctx, ctx.resource)


def name_taken(ctx: Context, table: str, workspace_id: str, name: str,
               own_id: str | None) -> Record | None:
    """Another record of `table` in the workspace already called `name` (names unique per
    workspace), or None; `own_id` is the record being renamed."""
    taken = ctx.store.find(table, lambda r: r["workspace_id"] == workspace_id
                           and r["name"] == name and r["id"] != own_id)
    return taken[0] if taken else None


# -- query flags --------------------------------------------------------------------------------


def flag(ctx: Context, name: str) -> bool | None:
    """A `"true"`/`"false"` string query filter as a bool (None when the parameter is absent)."""
    value = ctx.query.get(name)
    return None if value is None else value == "true"


# -- people -------------------------------------------------------------------------------------


def full_name(user: Record) -> str:
    """A workspace user's display name: first and last name."""
    return " ".join(p for p in (user.get("first_name"), user.get("last_name")) if p)


def author(ctx: Context) -> dict[str, Any]:
    """The calling token's user as an `Author` ({user_id, name, email, picture_url})."""
    user = ctx.user()
    return {"user_id": user["id"], "name": full_name(user), "email": user.get("email", ""),
            "picture_url": user.get("picture_url")}


def is_member(ctx: Context, user_id: str, workspace_id: str) -> bool:
    """Whether a workspace user belongs to a workspace (users list theirs in `_workspace_ids`)."""
    user = ctx.store.get("users", user_id)
    return user is not None and workspace_id in user.get("_workspace_ids", ())


# -- outbound messages --------------------------------------------------------------------------

PREVIEW_CHARS = 140


def preview(body: str) -> str:
    """The `last_message_preview` of a message body: its first 140 characters."""
    return body[:PREVIEW_CHARS]


def _authorship(current: str | None, human: bool) -> str:
    # Inferred: `authorship` says who wrote the outbound replies; a human reply turns "ai" into
    # "mixed" and null into "human" (and an AI reply the reverse).
    mine = "human" if human else "ai"
    if current in (None, mine):
        return mine
    return "mixed"


def record_outbound_message(
    ctx: Context,
    *,
    conversation_id: str,
    channel: str,
    body: str,
    ticket_id: str | None = None,
    attachments: list[dict[str, Any]] | None = None,
    internal: dict[str, Any] | None = None,
) -> Record:
    """Store an outbound message sent by the token's user and move its thread.

    The message (status sent) goes into `messages`; the conversation's last_message_at,
    last_message_preview, authorship and updated_at move, and so do the contact's
    last_message_at, last_message_preview, last_channel and updated_at. The conversation must
    exist. Returns the stored message.
    """
    now = ctx.now()
    user = ctx.user()
    message = {
        "id": ctx.new_id("messages"),
        "workspace_id": ctx.workspace_id,
        "conversation_id": conversation_id,
        "ticket_id": ticket_id,
        "channel": channel,
        "body": body,
        "direction": "outbound",
        "status": "sent",
        "sent_at": now,
        "created_at": now,
        "sender": {"user_id": user["id"], "external_id": None, "name": full_name(user)},
        "attachments": attachments or [],
        **(internal or {}),
    }
    ctx.store.insert("messages", message)
    move_thread(ctx, conversation_id, at=now, text=body, channel=channel)
    return message


def move_thread(ctx: Context, conversation_id: str, *, at: str, text: str, channel: str) -> None:
    """Move a conversation and its contact to a new latest message (sent by a human)."""
    conversation = ctx.store.get("conversations", conversation_id)
    if conversation is not None:
        ctx.store.update("conversations", conversation_id, {
            "last_message_at": at,
            "last_message_preview": preview(text),
            "authorship": _authorship(conversation.get("authorship"), human=True),
            "updated_at": at,
        })
    # The canonical conversation id is the contact id (reference).
    if ctx.store.get("contacts", conversation_id) is not None:
        ctx.store.update("contacts", conversation_id, {
            "last_message_at": at,
            "last_message_preview": preview(text),
            "last_channel": channel,
            "updated_at": at,
        })


# -- list filters -------------------------------------------------------------------------------


def where_equal(ctx: Context, *params: str) -> Callable[[Record], bool] | None:
    """A `where` for query filters that must equal the record's field of the same name."""
    wanted = {p: ctx.query[p] for p in params if ctx.query.get(p) is not None}
    if not wanted:
        return None
    return lambda r: all(r.get(k) == v for k, v in wanted.items())
