"""Request bodies a law sends: only the required properties with plain valid values, a
property of the wrong type, and the free-text fields a PATCH can change without side effects."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from .registry import Skip

if TYPE_CHECKING:
    from ..openapi.spec import Operation
    from .gate import Gate

__all__ = ["MARKER", "PREFERRED", "is_string", "minimal_body", "patchable", "plain_value", "resolved",
           "wrong_type"]

MARKER = "conformance law"
# Free-text fields first: patching them has no side effect a law would trip on.
PREFERRED = ("description", "title", "instructions", "summary", "body", "content", "text")


def resolved(gate: Gate, schema: Any) -> dict[str, Any]:
    resolved = gate.doc.spec.resolve(schema)
    return resolved if isinstance(resolved, dict) else {}


def plain_value(gate: Gate, name: str, schema: dict[str, Any]) -> Any:
    schema = resolved(gate, schema)
    if name == "workspace_id":
        return gate.workspace
    if "default" in schema:
        return schema["default"]
    if schema.get("enum"):
        return schema["enum"][0]
    kind = schema.get("type")
    if kind == "boolean":
        return False
    if kind in ("integer", "number"):
        return schema.get("minimum", 1)
    if kind == "array":
        if schema.get("minItems"):
            raise Skip(f"no value for the array {name}")
        return []
    if kind == "object":
        return {}
    if is_string(schema) and not schema.get("format"):
        tag = gate.tag()
        for text in (f"{MARKER} {tag}", f"conformance-law-{tag}", f"conformancelaw{tag}"):
            text = text[: schema.get("maxLength", len(text))]
            if not schema.get("pattern") or re.search(schema["pattern"], text):
                return text
    raise Skip(f"no value for {name}")


def is_string(schema: dict[str, Any]) -> bool:
    kind = schema.get("type")
    return kind == "string" or (isinstance(kind, list) and "string" in kind)


def minimal_body(gate: Gate, op: Operation) -> dict[str, Any]:
    """A body with only the required properties, each a plain valid value."""
    body = resolved(gate, op.body_schema)
    props = body.get("properties") or {}
    return {name: plain_value(gate, name, props.get(name, {})) for name in body.get("required") or []}


def wrong_type(gate: Gate, schema: Any) -> Any:
    kind = resolved(gate, schema).get("type")
    return "not-a-boolean" if kind in ("boolean", "integer", "number", "array", "object") \
        else {"not": "a string"}


def patchable(gate: Gate, op: Operation) -> dict[str, Any]:
    """Up to two free-text properties of the body (no enum, pattern or format) and values."""
    props = resolved(gate, op.body_schema).get("properties") or {}
    names = sorted(props, key=lambda n: (PREFERRED.index(n) if n in PREFERRED else 99, n))
    fields = {}
    for name in names:
        schema = resolved(gate, props[name])
        if is_string(schema) and not schema.get("enum") and not schema.get("pattern") \
                and not schema.get("format") and not name.endswith("_id") \
                and name in PREFERRED:
            fields[name] = plain_value(gate, name, schema)
        if len(fields) == 2:
            break
    return fields
