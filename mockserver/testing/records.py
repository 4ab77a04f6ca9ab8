"""`mock_api.add`: a record made factory-style from a fixture record of its table, validated as
the fixture loader validates one, and inserted into a session's store."""

from __future__ import annotations

from typing import Any

import pytest

from ..data.fixtures import record_check
from ..data.tables import TABLES
from ..engine.app import MockApp
from ..engine.context import public
from ..engine.state import MockState


def add_record(mock: MockApp, state: MockState, table: str, values: dict[str, Any],
               primary: str | None) -> dict[str, Any]:
    """A copy of a fixture record of `table` (one of the same kind, in the same workspace when
    possible, else in `primary`) with a new id, fresh timestamps and `values`; returns it as
    stored, internal `_` fields dropped."""
    table_def = TABLES.get(table)
    if table_def is None:
        raise pytest.UsageError(f"mock_api.add: no table {table!r}; "
                                f"tables: {', '.join(sorted(TABLES))}")
    store = state.store
    ws_field = table_def.workspace_field
    workspace = values.get(ws_field) if ws_field else None
    templates = list(state.dataset.tables.get(table, {}).values())
    kinds = table_def.kinds
    if kinds is not None:  # a knowledge-base file for a body, a folder otherwise
        try:
            wanted = kinds.value(kinds.of(values))
        except ValueError as exc:
            raise ValueError(f"mock_api.add({table!r}): {exc}") from None
        templates = [t for t in templates if t.get(kinds.field) == wanted]
    if workspace is None and ws_field and primary:
        preferred = [t for t in templates if t.get(ws_field) == primary]
    else:
        preferred = [t for t in templates if ws_field and t.get(ws_field) == workspace]
    template = (preferred or templates or [{}])[0]
    record = {**template, **values}
    key = table_def.key
    if key not in values:
        old = template.get(key, "")
        hex_id = len(old) == 24 and all(c in "0123456789abcdef" for c in old)
        record[key] = store.new_hex_id() if hex_id else store.new_id(table_def.prefix)
    now = store.now()
    for stamp in ("created_at", "updated_at"):
        if stamp in template and stamp not in values:
            record[stamp] = now
    # The fixture loader's own check (fixtures.RecordCheck): schemas and references.
    check = record_check(mock.spec)
    problem = check.schema_problem(table, record) or check.dangling(
        table, record, lambda target, key: store.get(target, key) is not None)
    if problem is not None:
        raise ValueError(f"mock_api.add({table!r}): {problem}")
    store.insert(table, record)
    return public(record)
