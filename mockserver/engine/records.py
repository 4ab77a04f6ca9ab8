"""Records added factory-style: a copy of a fixture record of a table (one of the same kind,
in the same workspace when possible) with a new id, fresh timestamps and the fields given,
validated as the fixture loader validates one (schema and references) and inserted into a
state's store. A test's `mock_api.add` (testing/control.py) and the control API's
`POST /__mock__/records/{table}` (standalone/control.py) both add records here."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..data.fixtures import record_check
from ..data.tables import TABLES
from .context import public
from .errors import BadRequest, Conflict, NotFound
from .progression import dispatch_execution

if TYPE_CHECKING:
    from .app import MockApp
    from .state import MockState
    from .store import Record, Store

__all__ = ["PARENTS", "add_record", "derive_references", "get_record", "no_record",
           "unknown_table"]


def unknown_table(table: str) -> NotFound:
    return NotFound(f"no table {table!r}; tables: {', '.join(sorted(TABLES))}",
                    reason="unknown_table")


def no_record(table: str, key: str) -> NotFound:
    return NotFound(f"{table} has no record {key!r}", reason="no_record")


def _table(table: str) -> Any:
    found = TABLES.get(table)
    if found is None:
        raise unknown_table(table)
    return found


# A record naming its parent takes the parent's references (DECISIONS I15): field -> (the
# parent table, {this record's field: the parent's field, dotted}). A value given that
# differs from the parent's is refused (400 naming the field); one not given is derived, never
# copied from the fixture record the new one is made from (another guest's).
PARENTS: dict[str, list[tuple[str, str, dict[str, str]]]] = {
    "messages": [("conversation_id", "conversations",
                  {"workspace_id": "workspace_id", "channel": "channel"}),
                 ("ticket_id", "tickets", {"conversation_id": "conversation_id"})],
    "tickets": [("conversation_id", "conversations",
                 {"workspace_id": "workspace_id", "contact_id": "contact.id"})],
    "ticket_notes": [("ticket_id", "tickets",
                      {"workspace_id": "workspace_id", "contact_id": "contact_id"})],
    "escalations": [("conversation_id", "conversations",
                     {"workspace_id": "workspace_id", "contact_id": "contact.id"})],
    "calls": [("conversation_id", "conversations",
               {"workspace_id": "workspace_id", "contact_id": "contact.id"}),
              ("ticket_id", "tickets", {"conversation_id": "conversation_id"})],
    "reservations": [("contact_id", "contacts", {"workspace_id": "workspace_id"})],
    "helpdesk_tickets": [("contact_id", "contacts", {"workspace_id": "workspace_id"})],
}
# What a copy may not keep of its template once its parent is another (the template's own
# thread): cleared or derived below.
_CHILD_OF_TEMPLATE = {"messages": ("ticket_id",), "calls": ("ticket_id",),
                      "escalations": ("agent_run_id",)}


def _dig(record: Record, path: str) -> Any:
    node: Any = record
    for part in path.split("."):
        node = node.get(part) if isinstance(node, dict) else None
    return node


def derive_references(store: Store, table: str, template: Record, values: dict[str, Any],
                      record: dict[str, Any]) -> None:
    """Make `record` (a copy of `template` with `values`) agree with the parents `values`
    name: their references derived, a conflicting value given refused (BadRequest naming the
    field). A message's sender is the contact on that channel (inbound) and its instants the
    clock's."""
    for field, parent_table, copies in PARENTS.get(table, ()):
        key = values.get(field)
        if key is None:
            continue
        parent = store.get(parent_table, key) if isinstance(key, str) else None
        if parent is None:
            continue  # the loader's reference check names it
        for child_field, parent_path in copies.items():
            wanted = _dig(parent, parent_path)
            if child_field in values and values[child_field] != wanted:
                raise BadRequest(f"field {child_field!r}: {values[child_field]!r} conflicts with "
                                 f"{field} {key!r}, whose {parent_path} is {wanted!r}")
            record[child_field] = wanted
        if template.get(field) != key:
            for stale in _CHILD_OF_TEMPLATE.get(table, ()):
                if stale not in values and stale != field:
                    record[stale] = None
    if table == "messages" and "conversation_id" in values:
        now = record.get("created_at") if "created_at" not in values else None
        now = now if isinstance(now, str) else store.now()
        for stamp in ("sent_at", "created_at"):
            if stamp not in values:
                record[stamp] = now
        if "sender" not in values:
            conversation = store.get("conversations", str(values["conversation_id"]))
            contact = store.get("contacts", str(_dig(conversation or {}, "contact.id")))
            if record.get("direction") == "inbound" and contact is not None:
                handles = [c for c in contact.get("channels") or ()
                           if c.get("type") == record.get("channel")] or list(
                               contact.get("channels") or ())
                name = " ".join(p for p in (contact.get("first_name"),
                                            contact.get("last_name")) if p)
                record["sender"] = {"user_id": None, "name": name or contact["id"],
                                    "external_id": handles[0]["value"] if handles else None}
            elif record.get("direction") == "outbound":
                record["sender"] = {**(template.get("sender") or {}), "external_id": None}


def add_record(mock: MockApp, state: MockState, table: str, values: dict[str, Any],
               primary: str | None) -> dict[str, Any]:
    """Add a record to `table` of `state`: a copy of one of its fixture records (one in the
    workspace `values` name, else in `primary` (a workspace that must exist), else any: the
    copy then keeps that record's workspace) with a new id, fresh timestamps and `values`;
    returns it as stored, internal `_` fields dropped. NotFound for an unknown
    table, BadRequest naming the field for a record the fixture loader would refuse, Conflict
    for an id the table holds already, 507 for a session's add past the sessions' memory cap;
    nothing is written then."""
    table_def = _table(table)
    ws_field = table_def.workspace_field
    workspace = values.get(ws_field) if ws_field else None
    templates = list(state.dataset.tables.get(table, {}).values())
    kinds = table_def.kinds
    if kinds is not None:  # a knowledge-base file for a body, a folder otherwise
        try:
            wanted = kinds.value(kinds.of(values))
        except ValueError as exc:
            raise BadRequest(str(exc)) from None
        templates = [t for t in templates if t.get(kinds.field) == wanted]
    if workspace is None and ws_field and primary:
        if state.store.get("workspaces", primary) is None:
            raise BadRequest(f"parameter 'workspace': no workspace {primary!r}")
        preferred = [t for t in templates if t.get(ws_field) == primary]
    else:
        preferred = [t for t in templates if ws_field and t.get(ws_field) == workspace]
    template = (preferred or templates or [{}])[0]
    check = record_check(mock.spec)

    def build(store: Store) -> Record:
        """The record, made on the store as it is (its ids and clock), or BadRequest."""
        record = {**template, **values}
        key = table_def.key
        if key in values:
            if not isinstance(values[key], str) or not values[key]:
                raise BadRequest(f"field {key!r}: a record's key is a non-empty string")
            if store.get(table, values[key]) is not None:
                raise Conflict(f"field {key!r}: {table} already holds a record {values[key]!r}")
        else:
            old = template.get(key, "")
            hex_id = len(old) == 24 and all(c in "0123456789abcdef" for c in old)
            record[key] = store.new_hex_id() if hex_id else store.new_id(table_def.prefix)
        now = store.now()
        for stamp in ("created_at", "updated_at"):
            if stamp in template and stamp not in values:
                record[stamp] = now
        derive_references(store, table, template, values, record)
        if table == "workflow_executions" and "status" not in values:
            # An execution added without a status is a dispatch of its workflow: it starts
            # now and progresses (progression.py), taking the workflow's next scripted outcome.
            record = dispatch_execution(store, record, now)
        # The fixture loader's own check (fixtures.RecordCheck): schemas and references.
        problem = check.schema_problem(table, record) or check.dangling(
            table, record, lambda target, k: isinstance(k, str) and store.get(target, k) is not None)
        if problem is not None:
            raise BadRequest(problem)
        return record

    return public(mock.sessions.admit(state, lambda: state.add_record(table, build)))


def get_record(state: MockState, table: str, key: str) -> dict[str, Any] | None:
    """A record of `state` as stored, internal `_` fields dropped (None: no such record;
    NotFound for an unknown table)."""
    _table(table)
    record = state.store.get(table, key)
    return None if record is None else public(record)
