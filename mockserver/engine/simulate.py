"""Simulated inbound events: what the outside world does to a workspace, through the product's
own rules (`POST /__mock__/simulate/...`, `mock_api.simulate...`).

Each event is checked whole first (unknown ids 404 naming the field, a body the document's
schemas would not allow 400 naming the field), then written as one write of the state
(`MockState.write`: one replicated transaction on Redis shared state), so nothing is
half-applied. The records are written as the API's own handlers write them (the store's
`insert`/`update`, the thread's preview and authorship rules of `handlers/_common.py`, the
ticket machine's fields of `handlers/tickets.py`, runs and executions dispatched by
`progression.new_run` and `progression.dispatch_execution`), never copied from another record.

- a guest message (`guest_message`): the inbound message, the thread moved, the ticket
  (waiting on the team, reopened or new), then the message trigger: the answering agent's run,
  an escalation for an escalating outcome, and an autopilot reply due after the agent's
  `custom_response_delay_ms` (written when the mock's clock passes it: `deliver_due`);
- a reservation synced from a property-management system (`reservation`): created or
  changed, and the ACTIVE workflows whose trigger matches start executions.

The rules and their provenance: spec/DECISIONS.md I1-I15; user docs: docs/simulate.md.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from datetime import date
from typing import TYPE_CHECKING, Any

from ..data.fixtures import record_check
from .context import public
from .errors import BadRequest, NotFound
from .handlers._common import preview
from .progress_control import transition_record
from .progression import (
    CLOCK_LOG,
    MAX_LOGGED,
    MOCK_TABLE,
    _stamp,
    dispatch_execution,
    in_schedule,
    new_run,
)
from .replies import OPEN_TICKET, PENDING_REPLIES, deliver_due
from .store import Record, Store

if TYPE_CHECKING:
    from .app import MockApp
    from .state import MockState

__all__ = ["answering_agent", "call_ended", "delivery", "guest_message", "helpdesk_synced",
           "log_caused", "reservation", "workflow_trigger"]

def _known(store: Store, table: str, key: Any, field: str, what: str, hint: str = "") -> Record:
    """The record `key` of `table` a body field names, or 404 naming the field: an event
    never creates what it names."""
    found = store.get(table, str(key))
    if found is None:
        raise NotFound(f"body field {field!r}: {what} {key!r} not found{hint}",
                       reason="no_record")
    return found


# Inferred (I11): what a reservation's change starts, by the workflow trigger it matches.
STATUS_TRIGGERS = {"cancelled": "RESERVATION_CANCELLED"}
DEFAULT_RESPONSE = "Thanks for your message. I've looked into it and everything is set."
PROPOSED = "pending"  # proposal_outcome of a proposal nobody acted on yet (I6)


def log_caused(store: Store, entries: list[dict[str, Any]]) -> None:
    """Keep what an event caused in the session's log of caused work (progression's: the
    inspector and `GET /__mock__/progression` list it, `caused`), oldest first."""
    if entries:
        log = store.get(MOCK_TABLE, CLOCK_LOG) or {"id": CLOCK_LOG, "entries": []}
        store.insert(MOCK_TABLE, {**log, "entries": [*log["entries"], *entries][-MAX_LOGGED:]})


# -- the message trigger --------------------------------------------------------------------


def _active(agent: Record) -> bool:
    return bool(agent.get("enabled", True)) and agent.get("operation_mode") != "inactive"


def answering_agent(store: Store, workspace_id: str, inbox_type: Any, channel: str
                    ) -> tuple[Record, Record] | None:
    """The active agent of the workspace whose enabled message trigger matches the contact's
    inbox type and the channel, with that trigger; when several match, the one created first
    (then by id: DECISIONS I5). None: no agent answers."""
    found: list[tuple[str, str, Record, Record]] = []
    for agent in store.all("agents"):
        if agent.get("workspace_id") != workspace_id or not _active(agent):
            continue
        for trigger in agent.get("triggers") or ():
            config = trigger.get("config") or {}
            if (trigger.get("type") == "message" and trigger.get("enabled", True)
                    and config.get("inboxTypeId") == inbox_type
                    and channel in (config.get("channels") or ())):
                found.append((str(agent.get("created_at", "")), agent["id"], agent, trigger))
                break
    if not found:
        return None
    found.sort(key=lambda f: (f[0], f[1]))
    return found[0][2], found[0][3]


# -- a guest message ------------------------------------------------------------------------


def _sender(contact: Record, channel: str) -> dict[str, Any]:
    """The contact on that channel: its handle of that type (else its first), as sender."""
    handles = [c for c in contact.get("channels") or () if c.get("type") == channel]
    handles = handles or list(contact.get("channels") or ())
    name = " ".join(p for p in (contact.get("first_name"), contact.get("last_name")) if p)
    return {"user_id": None, "external_id": handles[0]["value"] if handles else None,
            "name": name or contact["id"]}


def _check_guest_message(store: Store, body: Mapping[str, Any]
                         ) -> tuple[Record, Record | None, str]:
    """The contact, its conversation (None: it starts one) and the channel, or 404/400."""
    conversation_id = body.get("conversation_id")
    contact_id = body.get("contact_id")
    channel = body.get("channel")
    if conversation_id is None and contact_id is None:
        raise BadRequest("body field 'conversation_id' (or 'contact_id' and 'channel') is "
                         "required")
    conversation = None
    if conversation_id is not None:
        conversation = _known(store, "conversations", conversation_id, "conversation_id",
                              "conversation")
        contact_key = conversation["contact"]["id"]
        if contact_id is not None and contact_id != contact_key:
            raise BadRequest(f"body field 'contact_id': {contact_id!r} is not the contact of "
                             f"conversation {conversation_id!r} ({contact_key!r})")
        contact_id = contact_key
    contact = _known(store, "contacts", contact_id, "contact_id", "contact")
    if conversation is None:
        if channel is None:
            raise BadRequest("body field 'channel' is required with 'contact_id'")
        # The canonical conversation id is the contact id (reference).
        conversation = store.get("conversations", contact["id"])
    if channel is None:
        assert conversation is not None
        channel = conversation["channel"]
    known = {c.get("type") for c in contact.get("channels") or ()}
    if conversation is not None:
        known.add(conversation.get("channel"))
    if channel not in known:
        raise BadRequest(f"body field 'channel': contact {contact['id']!r} has no {channel!r} "
                         f"channel ({', '.join(sorted(str(k) for k in known))})")
    return contact, conversation, str(channel)


def guest_message(mock: MockApp, state: MockState, body: Mapping[str, Any]) -> dict[str, Any]:
    """A guest writes in: see the module docstring. The ids of everything it caused."""
    store = state.store
    contact, conversation, channel = _check_guest_message(store, body)
    text = body["body"]
    attachments = list(body.get("attachments") or [])
    check = record_check(mock.spec)
    sample = _inbound(contact, conversation["id"] if conversation else contact["id"], channel,
                      text, attachments, "ms_check", None, store.now())
    problem = check.schema_problem("messages", sample)
    if problem is not None:
        raise BadRequest(f"body: {problem}")

    def write(store: Store) -> dict[str, Any]:
        deliver_due(store, store.clock.now_ms())
        return _write_guest_message(store, contact, conversation, channel, text, attachments)

    result: dict[str, Any] = mock.sessions.admit(state, lambda: state.write(write))
    return {"data": result}


def _inbound(contact: Record, conversation_id: str, channel: str, text: str,
             attachments: list[Any], key: str, ticket_id: str | None, now: str) -> Record:
    return {
        "id": key,
        "workspace_id": contact["workspace_id"],
        "conversation_id": conversation_id,
        "ticket_id": ticket_id,
        "channel": channel,
        "body": text,
        "direction": "inbound",
        "status": "received",
        "sent_at": now,
        "created_at": now,
        "sender": _sender(contact, channel),
        "attachments": attachments,
    }


def _new_conversation(store: Store, contact: Record, channel: str, now: str) -> Record:
    """The conversation a contact's first message starts (its id is the contact's: I2)."""
    return store.insert("conversations", {
        "id": contact["id"],
        "workspace_id": contact["workspace_id"],
        "contact": {"id": contact["id"], "first_name": contact.get("first_name"),
                    "last_name": contact.get("last_name"), "image_url": contact.get("image_url"),
                    "inbox_type_id": contact.get("inbox_type_id")},
        "channel": channel, "archived": False, "ai_paused": False, "follow_up_at": None,
        "assignee": None, "assigned_at": None, "assigned_by": None, "authorship": None,
        "last_message_at": now, "last_message_preview": "", "created_at": now,
        "updated_at": now,
    })


def _tickets(store: Store, field: str, value: str) -> Iterator[Record]:
    """The tickets whose `field` is `value`, newest first (the store's index, as
    getConversation's latest ticket)."""
    index = store.index("tickets", (field,), ("created_at",))
    for key in index.keys((value,), after=None, descending=True):
        ticket = store.get("tickets", key[-1])
        if ticket is not None:
            yield ticket


def _ticket_for(store: Store, contact: Record, conversation: Record, channel: str, text: str,
                now: str) -> Record:
    """The ticket the message belongs to (DECISIONS I4): the conversation's latest ticket
    waiting on the team when open, reopened when resolved, else a new one."""
    latest = next(_tickets(store, "conversation_id", conversation["id"]), None)
    moved = {"last_message_at": now, "last_message_preview": preview(text), "updated_at": now}
    if latest is not None and latest["status"] in OPEN_TICKET:
        return store.update("tickets", latest["id"], {**moved, "waiting_on": "team"})
    if latest is not None and latest["status"] == "resolved":
        # As reopenTicket does (handlers/tickets.py): back to pending, counted.
        return store.update("tickets", latest["id"], {
            **moved, "status": "pending", "reopen_count": latest.get("reopen_count", 0) + 1,
            "resolved_at": None, "time_to_resolution_ms": None, "waiting_on": "team"})
    return store.insert("tickets", {
        "id": store.new_id("xd"),
        "workspace_id": contact["workspace_id"],
        "contact_id": contact["id"],
        "conversation_id": conversation["id"],
        "channel": channel,
        "status": "new",
        "waiting_on": "team",
        "inbox_type_id": contact.get("inbox_type_id") or "guest",
        "subject": preview(text)[:80],
        "summary": "",
        "ai_paused": bool(contact.get("ai_paused")),
        "assignee": conversation.get("assignee"),
        "follow_up_at": None,
        "first_message_at": now,
        # I4: the document requires a timestamp; until the first reply it reads the first
        # message's instant and 0 ms (the reply sets both: `_awaiting_reply`).
        "first_response_at": now,
        "_awaiting_reply": True,
        "resolved_at": None,
        "first_resolved_at": None,
        "closed_at": None,
        "time_to_first_response_ms": 0,
        "time_to_resolution_ms": None,
        "reopen_count": 0,
        "ai_participated": False,
        "last_message_at": now,
        "last_message_preview": preview(text),
        "created_at": now,
        "updated_at": now,
        "call_transcript_id": None,
    })


def _write_guest_message(store: Store, contact: Record, conversation: Record | None,
                         channel: str, text: str, attachments: list[Any]) -> dict[str, Any]:
    now = store.now()
    if conversation is None:
        conversation = _new_conversation(store, contact, channel, now)
    ticket = _ticket_for(store, contact, conversation, channel, text, now)
    message = store.insert("messages", _inbound(contact, conversation["id"], channel, text,
                                                attachments, store.new_id("ms"), ticket["id"],
                                                now))
    store.update("conversations", conversation["id"], {
        "last_message_at": now, "last_message_preview": preview(text), "updated_at": now,
        "archived": False})  # I3: a guest's message brings an archived thread back
    store.update("contacts", contact["id"], {
        "last_message_at": now, "last_message_preview": preview(text), "last_channel": channel,
        "updated_at": now})
    result: dict[str, Any] = {
        "message_id": message["id"], "conversation_id": conversation["id"],
        "contact_id": contact["id"], "ticket_id": ticket["id"], "run_id": None,
        "agent_id": None, "escalation_id": None, "sent_message_id": None,
        "reply_due_at": None, "mode": None}
    event = f"simulated guest message {message['id']} on {channel} ({conversation['id']})"
    caused = [{"at": now, "table": "messages", "id": message["id"], "cause": event},
              {"at": now, "table": "tickets", "id": ticket["id"], "cause": event}]
    if contact.get("ai_paused") or conversation.get("ai_paused"):
        result["mode"] = "ai_paused"
        log_caused(store, caused)
        return result
    found = answering_agent(store, contact["workspace_id"], contact.get("inbox_type_id"),
                            channel)
    if found is None:
        log_caused(store, caused)
        return result
    agent, trigger = found
    payload = {"contact_id": contact["id"], "conversation_id": conversation["id"],
               "message_id": message["id"], "channel": channel}
    run = new_run(store, agent, trigger, payload, contact_id=contact["id"],
                  conversation_id=conversation["id"],
                  cause=f"guest message {message['id']} on {channel}")
    progress = dict(run["_progress"])
    outcome = dict(progress.get("outcome") or {})
    now_ms = store.clock.now_ms()
    autopilot = agent.get("operation_mode") == "autopilot" and in_schedule(
        agent.get("autopilot_schedule"), now_ms)
    escalating = outcome.get("disposition") == "escalated"
    failing = outcome.get("status") == "failed"
    result.update(run_id=run["id"], agent_id=agent["id"])
    if escalating:
        result["mode"] = "escalated"
        outcome.setdefault("autopilot_sent", False)
        outcome.setdefault("proposal_outcome", None)
        escalation = store.insert("escalations", {
            "id": store.new_id("es"),
            "workspace_id": contact["workspace_id"],
            "type": "chat",
            "conversation_id": conversation["id"],
            "contact_id": contact["id"],
            "agent_run_id": run["id"],
            "agent_id": agent["id"],
            "disposition": "escalated",
            "disposition_reason": outcome.get("disposition_reason")
            or "The agent needs the team to answer.",
            "status": "pending",
            "created_at": now,
            "reviewed_at": None,
            "reviewed_by": None,
            "assignee": None,
            "guest_message": text,
            "proposed_response": outcome.get("response") or "",
            "request_for_additional_info": "",
            "questions_for_operator": outcome.get("reflection")
            or outcome.get("disposition_reason") or "",
        })
        result["escalation_id"] = escalation["id"]
    elif failing:
        result["mode"] = "failed"
    elif autopilot:
        result["mode"] = "autopilot"
        outcome.setdefault("autopilot_sent", True)
        outcome.setdefault("proposal_outcome", None)
        due = now_ms + int(agent.get("custom_response_delay_ms") or 0)
        reply_id = store.new_id("ms")
        pending = store.get(MOCK_TABLE, PENDING_REPLIES) or {"id": PENDING_REPLIES, "replies": []}
        store.insert(MOCK_TABLE, {**pending, "replies": [*pending["replies"], {
            "due_ms": due, "message_id": reply_id, "run_id": run["id"],
            "agent_id": agent["id"], "conversation_id": conversation["id"],
            "contact_id": contact["id"], "ticket_id": ticket["id"], "channel": channel,
            "body": outcome.get("response") or DEFAULT_RESPONSE,
            "mark_done": bool(agent.get("auto_mark_as_done"))}]})
        result["sent_message_id"] = reply_id
        result["reply_due_at"] = _stamp(due)
        if due <= now_ms:
            deliver_due(store, now_ms)
    else:
        # copilot, or autopilot outside its schedule: a proposal, nothing sent (I6)
        result["mode"] = "proposal"
        outcome["autopilot_sent"] = False
        outcome.setdefault("proposal_outcome", PROPOSED)
    if outcome:
        progress["outcome"] = outcome
        store.update("agent_runs", run["id"], {"_progress": progress})
    store.update("tickets", ticket["id"], {"ai_participated": True})
    trigger_cause = f"{event}: message trigger {trigger['id']} of {agent['id']}"
    caused.append({"at": now, "table": "agent_runs", "id": run["id"],
                   "cause": f"{trigger_cause} ({result['mode']})"})
    if result["escalation_id"]:
        caused.append({"at": now, "table": "escalations", "id": result["escalation_id"],
                       "cause": f"{trigger_cause}: an escalating outcome"})
    if result["sent_message_id"]:
        caused.append({"at": result["reply_due_at"], "table": "messages",
                       "id": result["sent_message_id"],
                       "cause": f"{trigger_cause}: the autopilot reply, due after "
                                f"{agent.get('custom_response_delay_ms') or 0} ms"})
    log_caused(store, caused)
    return result


# -- a reservation --------------------------------------------------------------------------


def workflow_trigger(before: Record | None, after: Record) -> str | None:
    """The workflow trigger a reservation's sync fires (I11): RESERVATION_NEW for a new
    one, RESERVATION_CANCELLED when its status becomes cancelled; None otherwise."""
    if before is None:
        return "RESERVATION_CANCELLED" if after.get("status") == "cancelled" else \
            "RESERVATION_NEW"
    if before.get("status") != after.get("status"):
        return STATUS_TRIGGERS.get(str(after.get("status")))
    return None


def reservation(mock: MockApp, state: MockState, body: Mapping[str, Any]) -> dict[str, Any]:
    """A reservation synced from a property-management system: created (no `id`; an unknown
    `id` is refused, never created) or changed (the `id` of an existing one); the ACTIVE workflows its
    trigger matches start executions. The reservation as stored and the executions."""
    store = state.store
    fields = dict(body)
    key = fields.get("id")
    before: Record | None = None
    if key is not None:
        before = _known(store, "reservations", key, "id", "reservation",
                        " (leave 'id' out to create one)")
        if "workspace_id" in fields and fields["workspace_id"] != before["workspace_id"]:
            raise BadRequest(f"body field 'workspace_id': reservation {key!r} belongs to "
                             f"{before['workspace_id']!r}")
    else:
        for name in ("workspace_id", "contact_id", "status", "arrival_date", "departure_date"):
            if name not in fields:
                raise BadRequest(f"body field {name!r} is required for a new reservation")
    workspace_id = fields.get("workspace_id") or (before or {}).get("workspace_id")
    _known(store, "workspaces", workspace_id, "workspace_id", "workspace")
    contact_id = fields.get("contact_id", (before or {}).get("contact_id"))
    contact = store.get("contacts", str(contact_id))
    if contact is None or contact["workspace_id"] != workspace_id:
        raise NotFound(f"body field 'contact_id': contact {contact_id!r} not found in "
                       f"workspace {workspace_id!r}", reason="no_record")
    template = before or _template(state, workspace_id)
    check = record_check(mock.spec)

    def write(store: Store) -> dict[str, Any]:
        now = store.now()
        record = {**template, **fields}
        if before is None:
            record["id"] = store.new_id("rs")
            record["created_at"] = now
            record.update(_fresh(contact, fields, template, record["id"]))
        record["updated_at"] = now
        if "num_nights" not in fields and record.get("arrival_date") and record.get(
                "departure_date"):
            try:
                nights = (date.fromisoformat(record["departure_date"])
                          - date.fromisoformat(record["arrival_date"])).days
            except (TypeError, ValueError):
                nights = None
            if nights is not None and nights < 0:
                raise BadRequest("body field 'departure_date': before the arrival_date")
            if nights is not None:
                record["num_nights"] = nights
        problem = check.schema_problem("reservations", record) or check.dangling(
            "reservations", record,
            lambda target, k: isinstance(k, str) and store.get(target, k) is not None)
        if problem is not None:
            raise BadRequest(f"body: {problem}")
        stored = store.insert("reservations", record)
        trigger = workflow_trigger(before, stored)
        executions = _start_workflows(store, workspace_id, trigger, stored) if trigger else []
        event = (f"simulated reservation {stored['id']} "
                 f"({'new' if before is None else 'changed'}, {stored.get('status')})")
        log_caused(store, [{"at": now, "table": "reservations", "id": stored["id"],
                            "cause": event}] + [
            {"at": now, "table": "workflow_executions", "id": e["execution_id"],
             "cause": f"{event}: {trigger} of workflow {e['workflow_id']}"}
            for e in executions])
        return {"reservation": public(stored), "trigger": trigger,
                "execution_ids": [e["execution_id"] for e in executions],
                "created": before is None}

    result: dict[str, Any] = mock.sessions.admit(state, lambda: state.write(write))
    return {"data": result}


def _template(state: MockState, workspace_id: str) -> Record:
    rows = list(state.dataset.tables.get("reservations", {}).values())
    mine = [r for r in rows if r.get("workspace_id") == workspace_id]
    return dict((mine or rows or [{}])[0])


def _fresh(contact: Record, fields: Mapping[str, Any], template: Record, key: str
           ) -> dict[str, Any]:
    """A new reservation's own facts where the body names none: the guest is the contact,
    no codes, no note, unpaid (never another guest's: I10)."""
    name = " ".join(p for p in (contact.get("first_name"), contact.get("last_name")) if p)
    currency = (template.get("payment") or {}).get("currency") or "USD"
    email = next((c["value"] for c in contact.get("channels") or () if c.get("type") == "email"),
                 None)
    fresh: dict[str, Any] = {
        "guest": {"name": name, "first_name": contact.get("first_name"),
                  "last_name": contact.get("last_name"), "email": email, "phone": None,
                  "country": None, "city": None, "locale": contact.get("language"),
                  "external_account_id": None},
        "door_code": None, "key_code": None, "guest_note": None, "ai_paused": False,
        "external_id": f"PMS-{key[-10:].upper()}", "channel_reservation_id": key[-10:].upper(),
        "confirmation_code": key[-10:].upper(), "airbnb_payment": None,
        "number_of_guests": 1, "number_of_adults": 1, "number_of_children": 0,
        "number_of_infants": 0, "number_of_pets": 0,
        "payment": {"is_paid": False, "total_price": 0.0, "currency": currency,
                    "outstanding_balance": 0.0},
    }
    for stamp, day in (("arrival_at", "arrival_date"), ("departure_at", "departure_date")):
        if isinstance(fields.get(day), str) and isinstance(template.get(stamp), str):
            fresh[stamp] = fields[day] + template[stamp][10:]  # the template's hour of day
    return {k: v for k, v in fresh.items() if k not in fields}


def _start_workflows(store: Store, workspace_id: str, trigger: str, reservation: Record
                     ) -> list[Record]:
    """Start one execution per workflow (master) whose ACTIVE, enabled version's trigger is
    `trigger`: the latest such version (I13)."""
    chosen: dict[str, Record] = {}
    for workflow in store.all("workflows"):
        if (workflow.get("_workspace_id") != workspace_id or workflow.get("status") != "ACTIVE"
                or not workflow.get("enabled") or workflow.get("trigger_summary") != trigger):
            continue
        master = str(workflow.get("master_id"))
        held = chosen.get(master)
        if held is None or (bool(workflow.get("is_latest")), int(workflow.get("version", 0))) > (
                bool(held.get("is_latest")), int(held.get("version", 0))):
            chosen[master] = workflow
    started = []
    now = store.now()
    for master in sorted(chosen):
        workflow = chosen[master]
        record = {"execution_id": store.new_id("wx"), "workflow_id": workflow["workflow_id"],
                  "master_id": workflow["master_id"], "trigger_source": trigger,
                  "_workspace_id": workspace_id, "_reservation_id": reservation["id"]}
        started.append(store.insert("workflow_executions",
                                    dispatch_execution(store, record, now)))
    return started


# -- a call ending, a helpdesk ticket synced, a delivery outcome (DECISIONS I12) -------------


def _phone(contact: Record) -> str | None:
    return next((c["value"] for c in contact.get("channels") or ()
                 if c.get("type") in ("sms", "whatsapp", "phone")), None)


def call_ended(mock: MockApp, state: MockState, body: Mapping[str, Any]) -> dict[str, Any]:
    """A call ended (the voice provider's record): on the contact's conversation and its open
    ticket, with the transcript and summary given. The call as stored."""
    store = state.store
    contact = _known(store, "contacts", body["contact_id"], "contact_id", "contact")
    conversation = store.get("conversations", contact["id"])
    if conversation is None:
        raise NotFound(f"body field 'contact_id': contact {contact['id']!r} has no "
                       "conversation", reason="no_record")
    for name in ("id", "workspace_id", "conversation_id", "created_at"):
        if name in body:
            raise BadRequest(f"body field {name!r}: set by the mock (the call's own id, the "
                             "contact's workspace and conversation, the clock)")
    ticket_id = body.get("ticket_id")
    if ticket_id is not None:
        linked = store.get("tickets", str(ticket_id))
        if linked is None or linked.get("conversation_id") != conversation["id"]:
            raise BadRequest(f"body field 'ticket_id': {ticket_id!r} is not a ticket of "
                             f"conversation {conversation['id']!r}")
    template = next(iter(state.dataset.tables.get("calls", {}).values()), {})
    check = record_check(mock.spec)

    def write(store: Store) -> dict[str, Any]:
        now = store.now()
        duration = int(body.get("duration_ms", 0))
        open_ticket = next((t for t in _tickets(store, "conversation_id", conversation["id"])
                            if t.get("status") in OPEN_TICKET), None)
        inbound = body.get("direction", "inbound") == "inbound"
        guest_phone, line = _phone(contact), str(template.get("to_phone") or "+10000000000")
        key = store.new_id("ce")
        missed = bool(body.get("is_missed", False))
        record = {
            "id": key, "workspace_id": contact["workspace_id"], "contact_id": contact["id"],
            "conversation_id": conversation["id"],
            "ticket_id": open_ticket["id"] if open_ticket else None,
            "call_id": f"call-{key[-12:]}", "direction": "inbound" if inbound else "outbound",
            "from_phone": guest_phone if inbound else line,
            "to_phone": line if inbound else guest_phone,
            "source": template.get("source", "retell"), "is_missed": missed,
            "transfer_status": None, "duration_ms": duration, "sentiment": None,
            "summary": None, "recording_url": None,
            "started_at": _stamp(max(0, store.clock.now_ms() - duration)), "created_at": now,
            "call_status": {"success": not missed, "is_voicemail_reached": False,
                            "is_transferred": False},
            "transcript": [],
        }
        record.update({k: v for k, v in body.items() if k != "contact_id"})
        problem = check.schema_problem("calls", record)
        if problem is not None:
            raise BadRequest(f"body: {problem}")
        stored = store.insert("calls", record)
        store.update("conversations", conversation["id"], {"updated_at": now})
        log_caused(store, [{"at": now, "table": "calls", "id": key,
                            "cause": f"simulated call ending on {conversation['id']}"}])
        return public(stored)

    result: dict[str, Any] = mock.sessions.admit(state, lambda: state.write(write))
    return {"data": result}


def helpdesk_synced(mock: MockApp, state: MockState, body: Mapping[str, Any]
                    ) -> dict[str, Any]:
    """An upstream helpdesk ticket synced: the mirror with `id` changes (status, priority,
    assignee ...), `last_external_update_at` the clock's; without `id` a new mirror
    (`contact_id`, `connection_id`, `external_ticket_id`, `subject`, `status`)."""
    store = state.store
    fields = dict(body)
    key = fields.get("id")
    before = None
    if key is not None:
        before = _known(store, "helpdesk_tickets", key, "id", "helpdesk ticket",
                        " (leave 'id' out to mirror a new one)")
        for name in ("workspace_id", "contact_id", "connection_id", "external_ticket_id"):
            if name in fields and fields[name] != before.get(name):
                raise BadRequest(f"body field {name!r}: the mirror's {name} is "
                                 f"{before.get(name)!r}; it does not change")
    else:
        for name in ("contact_id", "connection_id", "external_ticket_id", "subject", "status"):
            if name not in fields:
                raise BadRequest(f"body field {name!r} is required for a new helpdesk ticket")
    contact = _known(store, "contacts", fields.get("contact_id", (before or {}).get(
        "contact_id")), "contact_id", "contact")
    ticket_id = fields.get("ticket_id", (before or {}).get("ticket_id"))
    if ticket_id is None:
        # The mirror links the contact's ticket (the document requires one): the latest.
        latest = next(_tickets(store, "contact_id", contact["id"]), None)
        if latest is None:
            raise BadRequest(f"body field 'ticket_id' is required: contact {contact['id']!r} "
                             "has no ticket to link")
        ticket_id = latest["id"]
    linked = store.get("tickets", str(ticket_id))
    if linked is None or linked.get("contact_id") != contact["id"]:
        raise BadRequest(f"body field 'ticket_id': {ticket_id!r} is not a ticket of contact "
                         f"{contact['id']!r}")
    template = before or next(iter(state.dataset.tables.get("helpdesk_tickets", {}).values()),
                              {})
    check = record_check(mock.spec)

    def write(store: Store) -> dict[str, Any]:
        now = store.now()
        record = {**template, **fields, "last_external_update_at": now}
        if before is None:
            name = " ".join(p for p in (contact.get("first_name"), contact.get("last_name"))
                            if p)
            email = next((c["value"] for c in contact.get("channels") or ()
                          if c.get("type") == "email"), None)
            record.update({"id": store.new_id("hd"), "workspace_id": contact["workspace_id"],
                           "created_at": now, "ticket_id": ticket_id,
                           "description": fields.get("description", ""),
                           "tags": fields.get("tags", []),
                           # unassigned upstream (the document requires strings)
                           "external_group_id": fields.get("external_group_id", ""),
                           "external_assignee_id": fields.get("external_assignee_id", ""),
                           "requester": fields.get("requester", {
                               "external_id": f"req-{contact['id']}", "name": name,
                               "email": email or ""})})
        problem = check.schema_problem("helpdesk_tickets", record) or check.dangling(
            "helpdesk_tickets", record,
            lambda target, k: isinstance(k, str) and store.get(target, k) is not None)
        if problem is not None:
            raise BadRequest(f"body: {problem}")
        stored = store.insert("helpdesk_tickets", record)
        log_caused(store, [{"at": now, "table": "helpdesk_tickets", "id": stored["id"],
                            "cause": "simulated helpdesk sync "
                                     f"({'new' if before is None else 'changed'})"}])
        return public(stored)

    result: dict[str, Any] = mock.sessions.admit(state, lambda: state.write(write))
    return {"data": result}


def delivery(mock: MockApp, state: MockState, body: dict[str, Any]) -> dict[str, Any]:
    """A delivery outcome for an outbound message: progression's guarded transition, reached
    from the simulate endpoints (404 naming `message_id` for an unknown message)."""
    key = _known(state.store, "messages", body["message_id"], "message_id", "message")["id"]
    fields = {k: v for k, v in body.items() if k != "message_id"}
    return transition_record(mock, state, "messages", key, fields)
