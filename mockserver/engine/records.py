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

__all__ = ["add_record", "get_record", "no_record", "unknown_table"]


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
    mock.sessions.check_room(state, mock.sessions.record_bytes)  # the default: no cap
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

    return public(state.add_record(table, build))


def get_record(state: MockState, table: str, key: str) -> dict[str, Any] | None:
    """A record of `state` as stored, internal `_` fields dropped (None: no such record;
    NotFound for an unknown table)."""
    _table(table)
    record = state.store.get(table, key)
    return None if record is None else public(record)
