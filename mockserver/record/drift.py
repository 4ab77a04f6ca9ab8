"""Drift: what the recorded answers say that the document does not.

Every answer is validated against the operation's response schema for its status, closed as
the mock's self-check closes it (an object lists all its fields). Each finding is grouped by
operation, field (the instance path, list positions as `[]`) and kind: `undocumented-field`,
`missing-field`, `type`, `enum`, `schema` (any other constraint), `status` (a status the
operation does not document) and `order` (a list out of its documented `x-order`). The report
keeps counts and one example per group, scrubbed: an undocumented string is shown as a
pseudonym of its words, since nothing says whether it is personal.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..engine.selfcheck import close_schemas
from ..openapi.schemas import json_validator
from ..openapi.spec import Operation, Spec
from .scrub import Scrubber

__all__ = ["Drift"]

_KINDS = {"AdditionalProperties": "undocumented-field", "Required": "missing-field",
          "Type": "type", "Enum": "enum", "Constant": "enum"}


@dataclass
class Drift:
    """Findings grouped by (operation, field, kind): counts and one scrubbed example."""

    spec: Spec
    scrubber: Scrubber
    groups: dict[tuple[str, str, str], dict[str, Any]] = field(default_factory=dict)
    answers: int = 0
    _components: dict[str, Any] | None = None
    _validators: dict[tuple[str, int], Any] = field(default_factory=dict)

    def _validator(self, op: Operation, status: int) -> Any:
        key = (op.operation_id, status)
        if key not in self._validators:
            if self._components is None:
                self._components = close_schemas(self.spec.components)
            schema = op.response_schema(status)
            self._validators[key] = (None if schema is None else
                                     json_validator(close_schemas(schema), self._components))
        return self._validators[key]

    def _add(self, op: str, where: str, kind: str, example: Any) -> None:
        group = self.groups.setdefault((op, where, kind), {"count": 0, "example": example})
        group["count"] += 1

    def check(self, op: Operation, status: int, body: Any, last: Any = None,
              order: str | None = None) -> None:
        """Record what the answer `body` with `status` to `op` says beyond the document
        (`last`: the order key of the previous page's last item; `order`: the request's)."""
        self.answers += 1
        if status not in op.responses and status != 429:
            self._add(op.operation_id, "-", "status", status)
            return
        validator = self._validator(op, status)
        if validator is None or body is None:
            return
        if not validator.is_valid(body):
            for error in validator.iter_errors(body):
                self._error(op, body, error)
        if status == op.success_status and op.paginated and isinstance(body, dict):
            self._order(op, body.get("data"), last, order)

    def _error(self, op: Operation, body: Any, error: Any) -> None:
        kind = _KINDS.get(type(error.kind).__name__, "schema")
        path = [str(p) for p in error.instance_path]
        where = _where(path)
        if kind == "undocumented-field":
            parent = _at(body, path)
            for name in getattr(error.kind, "unexpected", []):
                value = parent.get(name) if isinstance(parent, dict) else None
                self._add(op.operation_id, f"{where}.{name}" if where else name, kind,
                          self._example(value, undocumented=True))
        elif kind == "missing-field":
            name = getattr(error.kind, "property", "?")
            self._add(op.operation_id, f"{where}.{name}" if where else str(name), kind, None)
        else:
            self._add(op.operation_id, where, kind, self._example(_at(body, path), path=path))

    def _example(self, value: Any, undocumented: bool = False, path: list[str] | None = None) -> Any:
        if isinstance(value, str):
            return self.scrubber.pseudonym("text", value) if undocumented or _personal(
                self.scrubber, path or []) else value
        if isinstance(value, dict):
            return {"object with fields": sorted(value)}
        if isinstance(value, list):
            return {"array of": len(value)}
        return value

    def order_key(self, op: Operation, item: dict[str, Any]) -> Any:
        fields = op.order.fields() if op.order is not None else None
        if not fields:
            return None
        values = [item.get(f) for f in fields]
        return values if all(isinstance(v, (str, int, float)) for v in values) else None

    def _order(self, op: Operation, data: Any, last: Any, order: str | None) -> None:
        if op.order is None or not isinstance(data, list):
            return
        descending = (order or op.order.direction) == "desc"
        previous = last
        for item in data:
            if not isinstance(item, dict):
                continue
            current = self.order_key(op, item)
            if previous is not None and current is not None and (
                    current > previous if descending else current < previous):
                self._add(op.operation_id, ",".join(op.order.fields() or ()), "order",
                          f"{'descending' if descending else 'ascending'} order broken")
            previous = current if current is not None else previous

    def report(self) -> dict[str, Any]:
        findings = [{"operation": op, "field": where, "kind": kind, **group}
                    for (op, where, kind), group in sorted(self.groups.items())]
        return {"answers_checked": self.answers, "findings": findings}

    def write(self, directory: Path) -> None:
        report = self.report()
        (directory / "drift.json").write_text(json.dumps(report, indent=2, sort_keys=True))
        lines = ["# Drift: what the recorded answers say that the document does not", "",
                 f"{report['answers_checked']} answers checked, "
                 f"{len(report['findings'])} finding(s).", ""]
        current = None
        for finding in report["findings"]:
            if finding["operation"] != current:
                current = finding["operation"]
                lines += ["", f"## {current}", "", "| field | kind | count | example |",
                          "|---|---|---|---|"]
            example = json.dumps(finding["example"])
            lines.append(f"| `{finding['field']}` | {finding['kind']} | {finding['count']} "
                         f"| `{example}` |")
        (directory / "drift.md").write_text("\n".join(lines) + "\n")


def _where(path: list[str]) -> str:
    return ".".join("[]" if p.isdigit() else p for p in path).replace(".[]", "[]")


def _at(body: Any, path: list[str]) -> Any:
    node = body
    for part in path:
        if isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        elif isinstance(node, dict):
            node = node.get(part)
        else:
            return None
    return node


def _personal(scrubber: Scrubber, path: list[str]) -> bool:
    """Whether a field of that name is scrubbed in any table (the example is then shown as a
    pseudonym, whatever the operation)."""
    from .scrub import RULES

    fields = [p for p in path if not p.isdigit()]
    return bool(fields) and any(rule.rsplit(".", 1)[-1] == fields[-1] for rule in RULES)
