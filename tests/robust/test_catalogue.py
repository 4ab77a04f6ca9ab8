"""What the catalogue offers for a field is read from its schema: each kind where the
document allows it, and values made from the field's own constraints."""

from __future__ import annotations

from typing import Any

from mockserver.robust.catalogue import TIME_EDGES, FieldFacts


def _facts(*schemas: dict[str, Any], required: bool = True, reference: bool = False) -> FieldFacts:
    return FieldFacts("t", "f", schemas, required, reference)


def test_kinds_follow_the_schema() -> None:
    assert _facts({"type": ["string", "null"]}, required=False).kinds() == (
        "null", "absent", "empty-string", "unicode")
    assert _facts({"type": "string", "minLength": 1}).kinds() == ("unicode",)
    assert _facts({"type": "string", "enum": ["a", "b"]}).kinds() == ("enum",)
    assert _facts({"type": "array", "minItems": 1, "maxItems": 3}).kinds() == (
        "one-item", "max-items")
    assert _facts({"type": "array", "maxItems": 500}).kinds() == ("empty-array", "one-item")
    assert _facts({"type": "array", "maxItems": 3, "uniqueItems": True}).kinds() == (
        "empty-array", "one-item")
    assert _facts({"type": "integer", "minimum": 0, "maximum": 9}).values("number-bound") == (
        0, 9)
    assert _facts({"type": "integer", "exclusiveMinimum": 0}).values("number-bound") == (1,)
    assert _facts({"type": ["string", "null"]}, required=False, reference=True).kinds() == (
        "null", "absent")


def test_values_keep_to_the_constraints() -> None:
    short = _facts({"type": "string", "maxLength": 5})
    assert short.values("max-length") == ("Robus",)
    assert all(len(v) <= 5 for v in short.values("unicode"))
    stamp = _facts({"type": "string", "format": "date-time",
                    "pattern": r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z$"})
    assert stamp.values("time-edge") == TIME_EDGES
    assert stamp.kinds() == ("time-edge",)  # never free text where a format is declared
    both = _facts({"type": "string", "enum": ["a", "b", "c"]}, {"type": "string",
                                                              "enum": ["b", "c", "d"]})
    assert both.values("enum") == ("b", "c")  # what every schema of the table allows
