"""Compiled JSON-schema validators over the document (2020-12, with
`#/components/...` references), shared by the mock, the proxy and the gate."""

from __future__ import annotations

from typing import Any

import jsonschema_rs

__all__ = ["first_error", "json_validator"]


def json_validator(schema: dict[str, Any], components: dict[str, Any]) -> Any:
    """A compiled 2020-12 validator; `#/components/...` references resolve against the document."""
    if "$ref" in repr(schema):
        schema = {**schema, "components": components}
    return jsonschema_rs.Draft202012Validator(schema)


def first_error(validator: Any, instance: Any) -> tuple[str, str] | None:
    """(instance path, message) of the most specific error, or None when valid."""
    if validator.is_valid(instance):  # the common case, without building error objects
        return None
    best: tuple[str, str] | None = None
    depth = -1
    for error in validator.iter_errors(instance):
        path = list(error.instance_path)
        if len(path) > depth:
            best = ("/".join(str(p) for p in path), error.message)
            depth = len(path)
    return best
