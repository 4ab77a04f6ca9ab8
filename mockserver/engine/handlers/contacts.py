"""Contacts: list, search, detail, transcript, proactive messages, the AI pause flag, and the
lists scoped to a contact (reservations, helpdesk tickets, appointments).

A contact's canonical conversation has the contact's id (reference), so the contact's
transcript is the messages of conversation `{id}`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from ..context import Context
from ..errors import BadRequest
from ..store import Record
from . import operation
from ._common import data, record_outbound_message, where_filtered

__all__ = ["channel_kind", "contact_matcher"]

# -- search heuristics (shared with conversation search) ---------------------------------------

_PHONE_LIKE = re.compile(r"^\+?[0-9\s().-]+$")


def channel_kind(channel_type: str) -> str | None:
    """email, whatsapp or phone for a contact channel type (None for other channels)."""
    kind = channel_type.lower()
    if "whatsapp" in kind:
        return "whatsapp"
    if "email" in kind:
        return "email"
    if "sms" in kind or "phone" in kind or kind in ("voice", "call"):
        return "phone"
    return None


def _digits(text: str) -> str:
    return "".join(c for c in text if c.isdigit())


def _looks_like_phone(text: str) -> bool:
    return bool(_PHONE_LIKE.match(text)) and len(_digits(text)) >= 3


def contact_matcher(field: str, query: str) -> Callable[[Record], bool]:
    """Whether a contact record matches a search (`field` as the search endpoints take it).

    Reference heuristics for `any`: input with an @ searches email channels, input that looks
    like a phone number searches phone and WhatsApp channel values, anything else searches
    names. Matching is a case-insensitive substring; phone numbers compare by their digits.
    """
    needle = query.strip().lower()
    digits = _digits(query)

    def names(c: Record) -> list[str]:
        return [f"{c.get('first_name', '')} {c.get('last_name', '')}".lower()]

    def channel_values(c: Record, kinds: tuple[str | None, ...] | None) -> list[str]:
        return [ch["value"] for ch in c.get("channels") or ()
                if kinds is None or channel_kind(ch["type"]) in kinds]

    def text_in(values: list[str]) -> bool:
        return any(needle in v.lower() for v in values)

    def number_in(values: list[str]) -> bool:
        return bool(digits) and any(digits in _digits(v) for v in values)

    if field == "any":
        if "@" in query:
            field = "email"
        elif _looks_like_phone(query):
            return lambda c: number_in(channel_values(c, ("phone", "whatsapp")))
        else:
            field = "name"
    if field == "name":
        return lambda c: text_in(names(c))
    if field in ("first_name", "last_name"):
        return lambda c: needle in str(c.get(field) or "").lower()
    if field == "email":
        return lambda c: text_in(channel_values(c, ("email",)))
    if field in ("phone", "whatsapp"):
        kinds: tuple[str | None, ...] = (field,)
        if _looks_like_phone(query):
            return lambda c: number_in(channel_values(c, kinds))
        return lambda c: text_in(channel_values(c, kinds))
    if field == "channel":
        return lambda c: text_in(channel_values(c, None)) or (
            _looks_like_phone(query) and number_in(channel_values(c, None)))
    # `contact` (conversation search): names or any channel value.
    name_match = contact_matcher("name", query)
    channel_match = contact_matcher("channel", query)
    return lambda c: name_match(c) or channel_match(c)


# -- contacts ---------------------------------------------------------------------------------


_CONVERSATION_FOLLOW_UP = ("follow_up_at",)  # the conversations' field, which contacts lack


@operation("listContacts")
def list_contacts(ctx: Context) -> dict[str, Any]:
    where = where_filtered(ctx)
    if ctx.query["sort_by"] == "follow_up_at":
        # Inferred: contacts carry no follow_up_at; the follow-up is their conversation's (same
        # id), so this order walks the conversations by follow_up_at and lists their contacts.
        # A contact without a conversation has no follow-up and is not part of this order.
        # (The document's `x-order` says so: `by-sort.follow_up_at: null`, DECISIONS F2.)
        contacts = ctx.store.rows("contacts")

        def wanted(conversation: Record) -> bool:
            contact = contacts.get(conversation["id"])
            return contact is not None and (where is None or where(contact))

        return ctx.page("conversations", partition={"workspace_id": ctx.workspace_id},
                        order=_CONVERSATION_FOLLOW_UP, descending=ctx.descending, where=wanted,
                        render=lambda conv: ctx.shape(contacts[conv["id"]]))
    return ctx.page(where=where)


@operation("searchContacts")
def search_contacts(ctx: Context) -> dict[str, Any]:
    return ctx.page(where=where_filtered(ctx, contact_matcher(ctx.query["field"],
                                                              ctx.query["query"])))


# -- proactive messages -----------------------------------------------------------------------

_SENDER_CHANNEL = {"email": "email", "whatsapp": "whatsapp", "phone": "sms"}


def _pick_sender(ctx: Context, channel: Record) -> str:
    """The sender for a channel node: the one given (checked) or the workspace's default."""
    wanted = _SENDER_CHANNEL.get(channel_kind(channel["type"]) or "")
    given = ctx.body.get("sender_id")
    if wanted is None:
        # Inferred: channels no workspace sender serves (airbnb, web_chat) deliver through their
        # own integration; a sender_id there is refused, and the one reported names the channel.
        if given is not None:
            raise BadRequest(f"body field 'sender_id': {channel['type']} channels deliver through "
                             "their integration; no sender applies")
        return f"{channel['type']}:{ctx.workspace_id}"
    if given is not None:
        sender = ctx.store.get("senders", given)
        if sender is None or sender["workspace_id"] != ctx.workspace_id:
            raise BadRequest(f"body field 'sender_id': {given!r} is not a sender of workspace "
                             f"{ctx.workspace_id!r}")
        if sender["channel"] != wanted:
            raise BadRequest(f"body field 'sender_id': sender {given!r} sends {sender['channel']}, "
                             f"not on a {channel['type']} channel")
        return given
    compatible = sorted(
        (s for s in ctx.store.all("senders")
         if s["workspace_id"] == ctx.workspace_id and s["channel"] == wanted),
        key=lambda s: s["id"],
    )
    defaults = [s for s in compatible if s.get("is_default")]
    # Reference: sender_id is required when several compatible senders exist and none can be
    # picked as default. Inferred: with no compatible sender at all the message cannot go out.
    if len(defaults) >= 1:
        return str(defaults[0]["id"])
    if len(compatible) == 1:
        return str(compatible[0]["id"])
    if not compatible:
        raise BadRequest(f"body field 'sender_id': workspace {ctx.workspace_id!r} has no sender "
                         f"for {channel['type']} channels")
    raise BadRequest(f"body field 'sender_id': required: several senders can deliver on "
                     f"{channel['type']} channels and none is the default")


def _template_body(ctx: Context, template_input: dict[str, Any]) -> str:
    sid = template_input["content_sid"]
    template = ctx.store.get("whatsapp_templates", sid)
    if template is None or template["workspace_id"] != ctx.workspace_id:
        raise BadRequest(f"body field 'whatsapp_template/content_sid': {sid!r} is not a WhatsApp "
                         f"template of workspace {ctx.workspace_id!r}")
    if template.get("status") != "approved":
        # Inferred: WhatsApp only delivers approved templates.
        raise BadRequest(f"body field 'whatsapp_template/content_sid': template {sid!r} is "
                         f"{template.get('status')}, not approved")
    text = str(template["body"])
    for key, value in (template_input.get("variables") or {}).items():
        text = text.replace("{{" + key + "}}", value)
    return text


def _ensure_conversation(ctx: Context, contact: Record, channel_type: str, at: str) -> None:
    """A contact without a conversation gets one when a first message goes out (inferred)."""
    if ctx.store.get("conversations", contact["id"]) is not None:
        return
    ctx.store.insert("conversations", {
        "id": contact["id"],
        "workspace_id": contact["workspace_id"],
        "contact": {"id": contact["id"], "first_name": contact["first_name"],
                    "last_name": contact["last_name"], "image_url": contact.get("image_url"),
                    "inbox_type_id": contact["inbox_type_id"]},
        "channel": channel_type,
        "archived": contact.get("archived", False),
        "ai_paused": contact.get("ai_paused", False),
        "follow_up_at": None,
        "assignee": None,
        "assigned_at": None,
        "assigned_by": None,
        "authorship": None,
        "last_message_at": at,
        "last_message_preview": "",
        "created_at": at,
        "updated_at": at,
    })


@operation("sendContactMessage")
def send_contact_message(ctx: Context) -> dict[str, Any]:
    contact = ctx.resource
    assert contact is not None
    body = ctx.body
    node_id = body["channel_node_id"]
    channel = next((ch for ch in contact.get("channels") or () if ch["id"] == node_id), None)
    if channel is None:
        raise BadRequest(f"body field 'channel_node_id': {node_id!r} is not a channel of contact "
                         f"{contact['id']!r}")
    kind = channel_kind(channel["type"])
    if "whatsapp_template" in body and kind != "whatsapp":
        raise BadRequest(f"body field 'whatsapp_template': only for WhatsApp channel nodes; "
                         f"{node_id!r} is a {channel['type']} channel")
    if "whatsapp_template" in body and "body" in body:
        # Inferred: a template is sent instead of a body, so both at once is ambiguous.
        raise BadRequest("body field 'whatsapp_template': send either body or whatsapp_template, "
                         "not both")
    if "subject" in body and kind != "email":
        # Reference: subject is for email channel nodes; elsewhere it is refused (inferred).
        raise BadRequest(f"body field 'subject': only for email channel nodes; {node_id!r} is a "
                         f"{channel['type']} channel")
    text = body["body"] if "body" in body else _template_body(ctx, body["whatsapp_template"])
    sender_id = _pick_sender(ctx, channel)
    _ensure_conversation(ctx, contact, channel["type"], ctx.now())
    # Inferred: the message's channel is the channel node's type (for example unthreaded_email).
    message = record_outbound_message(
        ctx, conversation_id=contact["id"], channel=channel["type"], body=text,
        internal={"_channel_node_id": node_id, "_sender_id": sender_id,
                  "_subject": body.get("subject"),
                  "_whatsapp_template": body.get("whatsapp_template")},
    )
    sent = {**message, "contact_id": contact["id"], "channel_node_id": node_id,
            "sender_id": sender_id}
    return data(ctx, sent)


# -- AI pause flag ----------------------------------------------------------------------------


def _set_ai_paused(ctx: Context, paused: bool) -> dict[str, Any]:
    contact = ctx.resource
    assert contact is not None
    # Inferred: idempotent; updated_at moves only when the flag changes. The conversation (same
    # id) follows the contact so both read the same; tickets and reservations keep their own.
    if contact.get("ai_paused") is not paused:
        now = ctx.now()
        contact = ctx.store.update("contacts", contact["id"], {"ai_paused": paused, "updated_at": now})
        conversation = ctx.store.get("conversations", contact["id"])
        if conversation is not None and conversation.get("ai_paused") is not paused:
            ctx.store.update("conversations", contact["id"], {"ai_paused": paused, "updated_at": now})
    return data(ctx, contact, "Contact")


@operation("pauseContactAi")
def pause_contact_ai(ctx: Context) -> dict[str, Any]:
    return _set_ai_paused(ctx, True)


@operation("resumeContactAi")
def resume_contact_ai(ctx: Context) -> dict[str, Any]:
    return _set_ai_paused(ctx, False)
