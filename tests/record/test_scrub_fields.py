"""The recorder scrubs every personal field it writes, field by field, conversation summaries
included: not only the end-of-run leak check (run.py's `leftovers`).

`WRITTEN` is every string field the recorder writes that a scrub rule replaces (table, field
path, the kind of pseudonym), written out by hand: a conversation's summary is written twice,
in the conversation and in `conversation_summaries` (from the detail, walk.py's `_summary`),
a table with no schema of its own, which the rule test (test_scrub_rules.py) does not walk.
Two tests hold it:

- the table is what the plan (plan.py: the tables each read fills) and the rules (scrub.py:
  `rule_for` over each table's schemas) derive: dropping a rule, or changing its kind, fails;
- each row, sent through the recorder's own merge of an answer (`Walk._merge`: scrub,
  summary, projection onto the table's fields) in a record whose other fields are empty, is
  written, and written as the keyed pseudonym of its kind, and the original is nowhere in the
  written records.

Planted breaks seen failing: the rule `*.guest_note` dropped from `RULES` (both tests: the row
is not derived; reservations.guest_note written as it came); `Walk._merge` writing the
conversation summary from the unscrubbed answer (`self._summary(item)`: the
conversation_summaries row); `*.summary` narrowed to `calls.summary` and `tickets.summary`
(both tests, on the conversation_summaries row; test_scrub_rules.py passes it).
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from mockserver.data.tables import TABLES
from mockserver.openapi.spec import Spec, load_spec
from mockserver.record.drift import Drift
from mockserver.record.plan import CHILDREN, DETAIL, ROOTS
from mockserver.record.scrub import RULES, Scrubber, kept_field, rule_for
from mockserver.record.walk import Walk

from .test_scrub_rules import _fields

SPEC = load_spec()
KEY = b"test-scrub-fields"
WS = "ws_recorded"

# (table, field path: dotted, `1` for a free-form mapping's keys, kind of pseudonym)
WRITTEN: tuple[tuple[str, str, str], ...] = (
    ('agent_runs', 'disposition_reason', 'text'),
    ('agent_runs', 'error', 'text'),
    ('agent_runs', 'reflection', 'text'),
    ('agent_runs', 'response', 'text'),
    ('agent_runs', 'tool_trace.input.1', 'text'),
    ('agent_runs', 'tool_trace.output.1', 'text'),
    ('airbnb_transactions', 'details', 'text'),
    ('airbnb_transactions', 'guest_name', 'name'),
    ('appointments', 'booking_info.email', 'email'),
    ('appointments', 'booking_info.name', 'name'),
    ('appointments', 'booking_info.notes', 'text'),
    ('appointments', 'booking_info.phone', 'phone'),
    ('appointments', 'generated_context', 'text'),
    ('appointments', 'notes', 'text'),
    ('appointments', 'references.value', 'handle'),
    ('calls', 'from_phone', 'phone'),
    ('calls', 'recording_url', 'url'),
    ('calls', 'summary', 'text'),
    ('calls', 'to_phone', 'phone'),
    ('calls', 'transcript.text', 'text'),
    ('contacts', 'channels.value', 'handle'),
    ('contacts', 'first_name', 'name'),
    ('contacts', 'image_url', 'url'),
    ('contacts', 'last_message_preview', 'text'),
    ('contacts', 'last_name', 'name'),
    ('conversations', 'assignee.email', 'email'),
    ('conversations', 'assignee.name', 'name'),
    ('conversations', 'assignee.picture_url', 'url'),
    ('conversations', 'contact.first_name', 'name'),
    ('conversations', 'contact.image_url', 'url'),
    ('conversations', 'contact.last_name', 'name'),
    ('conversations', 'last_message_preview', 'text'),
    ('escalations', 'assignee.email', 'email'),
    ('escalations', 'assignee.name', 'name'),
    ('escalations', 'assignee.picture_url', 'url'),
    ('escalations', 'disposition_reason', 'text'),
    ('escalations', 'guest_message', 'text'),
    ('escalations', 'proposed_response', 'text'),
    ('escalations', 'questions_for_operator', 'text'),
    ('escalations', 'request_for_additional_info', 'text'),
    ('escalations', 'reviewed_by.email', 'email'),
    ('escalations', 'reviewed_by.name', 'name'),
    ('escalations', 'reviewed_by.picture_url', 'url'),
    ('helpdesk_tickets', 'description', 'text'),
    ('helpdesk_tickets', 'requester.email', 'email'),
    ('helpdesk_tickets', 'requester.external_id', 'token'),
    ('helpdesk_tickets', 'requester.name', 'name'),
    ('helpdesk_tickets', 'subject', 'text'),
    ('messages', 'attachments.name', 'filename'),
    ('messages', 'attachments.url', 'url'),
    ('messages', 'body', 'text'),
    ('messages', 'sender.external_id', 'token'),
    ('messages', 'sender.name', 'name'),
    ('reservations', 'door_code', 'code'),
    ('reservations', 'guest.city', 'name'),
    ('reservations', 'guest.email', 'email'),
    ('reservations', 'guest.external_account_id', 'token'),
    ('reservations', 'guest.first_name', 'name'),
    ('reservations', 'guest.last_name', 'name'),
    ('reservations', 'guest.name', 'name'),
    ('reservations', 'guest.phone', 'phone'),
    ('reservations', 'guest_note', 'text'),
    ('reservations', 'key_code', 'code'),
    ('ticket_notes', 'attachments.name', 'filename'),
    ('ticket_notes', 'attachments.url', 'url'),
    ('ticket_notes', 'author.email', 'email'),
    ('ticket_notes', 'author.name', 'name'),
    ('ticket_notes', 'author.picture_url', 'url'),
    ('ticket_notes', 'body', 'text'),
    ('tickets', 'assignee.email', 'email'),
    ('tickets', 'assignee.name', 'name'),
    ('tickets', 'assignee.picture_url', 'url'),
    ('tickets', 'last_message_preview', 'text'),
    ('tickets', 'subject', 'text'),
    ('tickets', 'summary', 'text'),
    ('users', 'email', 'email'),
    ('users', 'first_name', 'name'),
    ('users', 'last_name', 'name'),
    ('users', 'picture_url', 'url'),
    ('whatsapp_templates', 'variables.1', 'text'),
    ('workflow_events', 'message', 'text'),
    ('workflow_executions', 'error_summary', 'text'),
    ('workspaces', 'image_url', 'url'),
    ('conversation_summaries', 'summary', 'text'),
)

# A personal value of each kind, as a real workspace holds it.
ORIGINALS: dict[str, str] = {
    "text": "Emma Clarke asked whether door code 4821 still opens Gull Cottage",
    "name": "Emmeline",
    "email": "emmeline.clarke@gmail.com",
    "phone": "+44 7700 900123",
    "handle": "emmeline.clarke@gmail.com",
    "token": "ext-emmeline-8812",
    "code": "4821#",
    "url": "https://cdn.harborview.co/u/emmeline/photo.jpg",
    "filename": "emmeline_passport.pdf",
}
FREE_FORM_KEY = "guest_note"  # the key a free-form mapping's value is sent under


def _tables_written() -> set[str]:
    """The tables the plan fills: each read's table, the models, the workspaces."""
    tables = {source.table for source in ROOTS}
    tables |= {source.table for sources in CHILDREN.values() for source in sources}
    return tables | set(DETAIL) | {"models", "workspaces"}


def _summary_fields() -> set[tuple[str, ...]]:
    """The string fields the walk copies from a conversation's detail into its summary."""
    walk = Walk(SPEC, Scrubber(KEY), Drift(SPEC, Scrubber(KEY)))
    walk._summary({"id": "ph_1", "summary": "s", "sentiment": "positive"})
    copied = set(walk.tables["conversation_summaries"]["ph_1"]) - {"id"}
    detail = SPEC.document["components"]["schemas"]["ConversationDetail"]["properties"]
    return {(name,) for name in copied
            if SPEC.resolve(detail[name]).get("type") in ("string", ["string", "null"])}


def derived() -> set[tuple[str, str, str]]:
    fields = _fields()
    found = {(table, ".".join(path), RULES[rule])
             for table in _tables_written() for path in fields.get(table, ())
             if (rule := rule_for(table, path)) is not None}
    for path in _summary_fields():
        rule = rule_for("conversation_summaries", path)
        if rule is not None and not kept_field("conversation_summaries", path):
            found.add(("conversation_summaries", ".".join(path), RULES[rule]))
    return found


def test_the_table_is_what_the_plan_and_the_rules_derive() -> None:
    assert len(set(WRITTEN)) == len(WRITTEN)
    assert sorted(set(WRITTEN) - derived()) == []  # a rule dropped (or its kind changed)
    assert sorted(derived() - set(WRITTEN)) == []  # a field scrubbed that is not listed


# -- each field, through the recorder's merge ------------------------------------------------------

def _schema_of(table: str) -> dict[str, Any]:
    return {"allOf": [{"$ref": f"#/components/schemas/{name}"} for name in TABLES[table].schemas]}


def _branches(spec: Spec, schema: Any) -> list[dict[str, Any]]:
    schema = spec.resolve(schema)
    if not isinstance(schema, dict):
        return []
    found = [schema]
    for key in ("allOf", "anyOf", "oneOf"):
        for branch in schema.get(key, []):
            found += _branches(spec, branch)
    return found


def _build(spec: Spec, schema: Any, path: list[str], value: str) -> Any:
    """A value of `schema` holding `value` at `path` (an array where the schema has one)."""
    branches = _branches(spec, schema)
    items = next((b["items"] for b in branches if isinstance(b.get("items"), dict)), None)
    if items is not None:
        return [_build(spec, items, path, value)]
    if not path:
        return value
    step, rest = path[0], path[1:]
    if step == "1":
        sub = next(b["additionalProperties"] for b in branches
                   if "additionalProperties" in b)
        return {FREE_FORM_KEY: _build(spec, sub if isinstance(sub, dict) else {}, rest, value)}
    sub = next(b["properties"][step] for b in branches if step in b.get("properties", {}))
    return {step: _build(spec, sub, rest, value)}


def _at(node: Any, path: list[str]) -> Any:
    for step in path:
        while isinstance(node, list):
            node = node[0]
        node = node[FREE_FORM_KEY if step == "1" else step]
    while isinstance(node, list):
        node = node[0]
    return node


def _step(table: str) -> dict[str, Any]:
    """The plan's read that fills `table` (a conversation's detail for its summary)."""
    if table in ("conversation_summaries", "conversations"):
        return {"op": "getConversation", "table": "conversations", "ws": WS, "detail": True}
    if table == "workspaces":
        return {"op": "listWorkspaces", "table": "workspaces", "ws": WS}
    if table == "models":
        return {"op": "listModels", "table": "models", "ws": None}
    sources = [*ROOTS, *(s for group in CHILDREN.values() for s in group)]
    source = next(s for s in sources if s.table == table)
    return {"op": source.op, "table": table, "ws": WS, "internal_ws": source.internal_ws}


@pytest.mark.parametrize("row", WRITTEN, ids=lambda row: f"{row[0]}.{row[1]}")
def test_each_field_is_written_as_the_pseudonym_of_its_kind(row: tuple[str, str, str]) -> None:
    table, dotted, kind = row
    path = dotted.split(".")
    original = ORIGINALS[kind]
    recorded = "conversations" if table == "conversation_summaries" else table
    key_field = TABLES[recorded].key
    schema = ({"$ref": "#/components/schemas/ConversationDetail"}  # the detail read
              if table == "conversation_summaries" else _schema_of(recorded))
    item = _build(SPEC, schema, path, original)
    item[key_field] = "rec_1"
    walk = Walk(SPEC, Scrubber(KEY), Drift(SPEC, Scrubber(KEY)))
    walk._merge(_step(table), SPEC.by_id[_step(table)["op"]], item)
    written = walk.tables[table]["rec_1"]
    assert _at(written, path) == Scrubber(KEY).pseudonym(kind, original) != original
    everything = orjson.dumps(walk.tables).decode()
    assert original not in everything and orjson.dumps(original).decode()[1:-1] not in everything
