"""`record --compare OLD_DIR`: per table, the records added, removed and changed since a
previous recording (keys only, and the names of the fields that changed: never values).
Two recordings under the same `--scrub-key` compare record by record; under different keys
every scrubbed field differs, and the report says so."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import orjson

from ..data.tables import TABLES

__all__ = ["compare", "write_compare"]

EXAMPLES = 5  # keys listed per table and kind


def _tables(directory: Path) -> dict[str, dict[str, dict[str, Any]]]:
    tables = {}
    for path in sorted(directory.glob("*.json")):
        if path.stem in TABLES:
            key = TABLES[path.stem].key
            tables[path.stem] = {r[key]: r for r in orjson.loads(path.read_bytes())}
    return tables


def compare(old_dir: Path, new_dir: Path) -> dict[str, Any]:
    """Per table: counts and a few keys of the records added, removed and changed, and which
    fields changed how often."""
    old, new = _tables(old_dir), _tables(new_dir)
    report: dict[str, Any] = {}
    for name in sorted(set(old) | set(new)):
        before, after = old.get(name, {}), new.get(name, {})
        added = [k for k in after if k not in before]
        removed = [k for k in before if k not in after]
        changed = [k for k in after if k in before and after[k] != before[k]]
        fields: Counter[str] = Counter()
        for key in changed:
            a, b = before[key], after[key]
            fields.update(f for f in {*a, *b} if a.get(f) != b.get(f))
        if added or removed or changed:
            report[name] = {"added": len(added), "removed": len(removed),
                            "changed": len(changed), "fields_changed": dict(fields.most_common()),
                            "examples": {"added": added[:EXAMPLES], "removed": removed[:EXAMPLES],
                                         "changed": changed[:EXAMPLES]}}
    return report


def write_compare(report: dict[str, Any], directory: Path, old_dir: Path) -> None:
    (directory / "compare.json").write_text(json.dumps(
        {"since": str(old_dir), "tables": report}, indent=2, sort_keys=True))
    lines = [f"# Changes since {old_dir}", "", "| table | added | removed | changed | "
             "fields changed |", "|---|---|---|---|---|"]
    for name, entry in report.items():
        fields = ", ".join(f"{f} ({n})" for f, n in entry["fields_changed"].items())
        lines.append(f"| {name} | {entry['added']} | {entry['removed']} | {entry['changed']} "
                     f"| {fields} |")
    if not report:
        lines.append("| (no change) | | | | |")
    (directory / "compare.md").write_text("\n".join(lines) + "\n")
