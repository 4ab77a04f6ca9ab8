"""Compiled JSON-schema validators over the document (2020-12, with
`#/components/...` references), shared by the mock, the proxy and the gate."""

from __future__ import annotations

import json
from typing import Any

import jsonschema_rs

__all__ = ["first_error", "json_validator"]


def json_validator(schema: dict[str, Any], components: dict[str, Any]) -> Any:
    """A compiled 2020-12 validator; `#/components/...` references resolve against the document."""
    if "$ref" in repr(schema):
        schema = {**schema, "components": components}
    return jsonschema_rs.Draft202012Validator(schema)


def first_error(validator: Any, instance: Any) -> tuple[str, str] | None:
    """(instance path, message) of the most specific error, or None when valid.

    The message says all of it (decision U19): every required property missing at that
    path (not the first), every value an enum allows (not "2 other candidates"), and the
    properties a `not: {required: [...]}` forbids together.
    """
    if validator.is_valid(instance):  # the common case, without building error objects
        return None
    best: tuple[str, str] | None = None
    depth = -1
    missing: list[str] = []
    for error in validator.iter_errors(instance):
        path = list(error.instance_path)
        if len(path) > depth:
            best = ("/".join(str(p) for p in path), _message(error))
            depth = len(path)
            missing = []
        if len(path) == depth and type(error.kind).__name__ == "Required":
            missing.append(str(error.kind.property))
    if best is not None and len(missing) > 1:
        names = ", ".join(f'"{name}"' for name in missing[:-1]) + f' and "{missing[-1]}"'
        best = (best[0], f"{names} are required properties")
    return best


def _message(error: Any) -> str:
    kind = error.kind
    name = type(kind).__name__
    if name == "Enum":
        options = kind.options if isinstance(kind.options, list) else [kind.options]
        allowed = ", ".join(json.dumps(option, ensure_ascii=False) for option in options)
        return f"{json.dumps(error.instance, ensure_ascii=False)} is not one of {allowed}"
    if name == "Not" and isinstance(kind.schema, dict) and set(kind.schema) <= {
            "required", "properties"} and kind.schema.get("required"):
        together = " and ".join(f'"{field}"' for field in kind.schema["required"])
        return f"{together} cannot be sent together (send one of them)"
    return str(error.message)
