"""Bounding a recording: `--since` keeps the records updated (or created) at or after a date
and every record they refer to; any record whose references do not resolve (a run cut short
by `--max-records`) is dropped, repeatedly, so every id another record names resolves."""

from __future__ import annotations

from typing import Any

from ..data.tables import TABLES

__all__ = ["bound"]

_STAMPS = ("updated_at", "created_at", "sent_at", "started_at", "occurred_at")
_CONFIG = ("workspaces", "users", "roles", "senders", "whatsapp_templates", "verification_rules",
           "workspace_settings", "models", "builtin_tools", "agents", "skills", "custom_tools",
           "kb_nodes", "conversation_tags", "workflows", "workflow_folders")


def _stamp(record: dict[str, Any]) -> str | None:
    for name in _STAMPS:
        value = record.get(name)
        if isinstance(value, str):
            return value
    return None


def bound(tables: dict[str, dict[str, dict[str, Any]]], since: str | None) -> dict[str, int]:
    """Apply `since` and drop dangling records, in place; records dropped per table."""
    before = {name: len(rows) for name, rows in tables.items()}
    if since:
        keep = {name: {k for k, r in rows.items() if name in _CONFIG
                       or (_stamp(r) or since) >= since}
                for name, rows in tables.items()}
        _close_over_references(tables, keep)
        for name, rows in tables.items():
            for key in [k for k in rows if k not in keep[name]]:
                del rows[key]
    changed = True
    while changed:
        changed = False
        for name, rows in tables.items():
            refs = TABLES[name].refs
            for key in list(rows):
                record = rows[key]
                if any(record.get(f) is not None and record[f] not in tables.get(t, {})
                       for f, t in refs.items()):
                    del rows[key]
                    changed = True
    return {name: before[name] - len(rows) for name, rows in tables.items()
            if before.get(name, 0) != len(rows)}


def _close_over_references(tables: dict[str, dict[str, dict[str, Any]]],
                           keep: dict[str, set[str]]) -> None:
    """Add to `keep` every record a kept record refers to, until nothing changes."""
    pending = [(name, key) for name, keys in keep.items() for key in keys]
    while pending:
        name, key = pending.pop()
        record = tables[name][key]
        for ref_field, target in TABLES[name].refs.items():
            value = record.get(ref_field)
            if value is not None and value in tables.get(target, {}) and \
                    value not in keep.setdefault(target, set()):
                keep[target].add(value)
                pending.append((target, value))
