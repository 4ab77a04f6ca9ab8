"""Small pieces several families share."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..context import Context
from ..errors import BadRequest
from ..progression import KINDS, view
from ..store import Record

__all__ = ["data", "get_resource"]
__all__ += ["author", "full_name", "is_member", "move_thread", "name_taken", "preview",
            "record_outbound_message", "transition", "where_filtered"]


def data(ctx: Context, record: Record, schema: str | None = None) -> dict[str, Any]:
    """`{"data": record}` projected onto a document schema (by default the one the
    operation's success response sends)."""
    return {"data": ctx.shape(record, schema)}


def get_resource(ctx: Context) -> dict[str, Any]:
    """The addressed resource (already resolved and access-checked), projected onto the
    schema the operation's response sends."""
    assert ctx.resource is not None
    table = ctx.operation.resource_table
    if table in KINDS:  # work that progresses, as it stands now (progression.py)
        return data(ctx, view(ctx.store, table, ctx.resource))
    return data(ctx, ctx.resource)


def transition(ctx: Context) -> tuple[Record, dict[str, Any]]:
    """The addressed record and the change the operation's `x-mock-transition` makes to it
    (`{field: target}`), or a 400 naming the field and its value when the record is not in
    one of the states the transition leaves from."""
    record = ctx.resource
    move = ctx.operation.transition
    assert record is not None and move is not None, ctx.operation.operation_id
    value = record.get(move.field)
    if not move.allows(value):
        noun = (ctx.operation.data_schema or "record").lower()
        raise BadRequest(f"{noun} {record['id']!r} has {move.field} {value!r}; only a {noun} "
                         f"with {move.field} {' or '.join(move.sources)} can move to "
                         f"{move.target}")
    return record, {move.field: move.target}


def name_taken(ctx: Context, table: str, workspace_id: str, name: str,
               own_id: str | None) -> Record | None:
    """Another record of `table` in the workspace already called `name` (names unique per
    workspace), or None; `own_id` is the record being renamed."""
    taken = ctx.store.find(table, lambda r: r["workspace_id"] == workspace_id
                           and r["name"] == name and r["id"] != own_id)
    return taken[0] if taken else None


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


def where_filtered(ctx: Context, *tests: Callable[[Record], bool] | None,
                   ) -> Callable[[Record], bool] | None:
    """A `where` for the request's filters the document states (`x-filter` on a query
    parameter: the record field it constrains, and what a virtual value stands for), and
    `tests` besides (None ones skipped)."""
    active = []  # (a loop, not a comprehension: no function made on every request)
    for test in tests:
        if test is not None:
            active.append(test)
    for facts in ctx.operation.filters:
        wanted = ctx.query.get(facts.param)
        if wanted is not None:
            active.append(_field_in(facts.field, facts.allowed(wanted)))
    if not active:
        return None
    if len(active) == 1:
        return active[0]
    return _all_of(active)


def _all_of(tests: list[Callable[[Record], bool]]) -> Callable[[Record], bool]:
    # (Its own function: `where_filtered` makes no closure cell on every request.)
    return lambda r: all(t(r) for t in tests)


def _field_in(field: str, allowed: tuple[Any, ...]) -> Callable[[Record], bool]:
    # A "true"/"false" query value selects a boolean field.
    allowed += tuple(a == "true" for a in allowed if a in ("true", "false"))
    path = field.split(".")
    if len(path) == 1:
        if len(allowed) == 1:
            [wanted] = allowed
            return lambda r: r.get(field) == wanted
        return lambda r: r.get(field) in allowed

    def test(record: Record) -> bool:
        node: Any = record
        for part in path:
            node = node.get(part) if isinstance(node, dict) else None
        return node in allowed
    return test
