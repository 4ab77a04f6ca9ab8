"""Validate a request as it went over the wire against the document.

schemathesis reports `negative_data_rejection` ("invalid request accepted") from the case it
generated; serialisation (a type mutation that becomes the same string in a URL, an array of one
sent as one value) or shrinking can turn that case back into a valid request. Before the gate
reports such a failure it validates the request that was actually sent: the path, the query
string and the body, each by the schema the document gives it. A valid request drops the
failure; an invalid one is reported with the part that breaks the document and the rule.

Nothing here restates a schema: parameters and bodies are checked by jsonschema-rs validators
compiled from the document. Query and path values arrive as text and are read by the type
their schema declares (as any server must read them) before they are checked.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, unquote, urlsplit

from ..openapi.schemas import first_error, json_validator

if TYPE_CHECKING:
    from ..openapi.spec import Operation
    from .document import Document

__all__ = ["Invalid", "invalid_part"]

_INT = re.compile(r"-?[0-9]+")
_NUMBER = re.compile(r"-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?")


@dataclass(frozen=True)
class Invalid:
    """The part of a request that breaks the document, and the rule it breaks."""

    part: str  # "query parameter 'limit'", "body /title", "request body", "header 'Content-Type'"
    rule: str

    def __str__(self) -> str:
        return f"{self.part}: {self.rule}"


def _read(text: str, schema: dict[str, Any]) -> Any:
    kind = schema.get("type")
    if kind == "integer" and _INT.fullmatch(text):
        return int(text)
    if kind == "number" and _NUMBER.fullmatch(text):
        return float(text)
    if kind == "boolean" and text in ("true", "false"):
        return text == "true"
    return text


def _path_values(op: Operation, url_path: str) -> dict[str, str] | None:
    names = re.findall(r"\{([^}]+)\}", op.path)
    pattern = re.sub(r"\\\{[^}]+\\\}", "([^/]*)", re.escape(op.path)) + "$"
    match = re.search(pattern, url_path)
    if match is None:
        return None
    return {name: unquote(value) for name, value in zip(names, match.groups(), strict=True)}


def invalid_part(doc: Document, op: Operation, method: str, url: str,
                 headers: dict[str, str] | None, body: bytes | str | None) -> Invalid | None:
    """The first part of the request that the document does not allow, or None if it is valid."""
    components = doc.spec.components
    split = urlsplit(url)
    path_values = _path_values(op, split.path) or {}
    query: dict[str, list[str]] = {}
    for name, value in parse_qsl(split.query, keep_blank_values=True):
        query.setdefault(name, []).append(value)
    for param in op.parameters:
        if param.location == "path":
            raw = path_values.get(param.name)
            if raw is None:
                continue
            if raw == "":
                return Invalid(f"path parameter '{param.name}'", "is empty")
            problem = first_error(json_validator(param.schema, components), _read(raw, param.schema))
            if problem is not None:
                return Invalid(f"path parameter '{param.name}'", problem[1])
        elif param.location == "query":
            values = query.get(param.name)
            if values is None:
                if param.required:
                    return Invalid(f"query parameter '{param.name}'", "is required and missing")
                continue
            if param.schema.get("type") == "array":
                item_schema = param.schema.get("items", {})
                instance: Any = [_read(v, item_schema) for v in values]
            elif len(values) > 1:
                return Invalid(f"query parameter '{param.name}'",
                               f"is given {len(values)} times; its schema holds one value")
            else:
                instance = _read(values[0], param.schema)
            problem = first_error(json_validator(param.schema, components), instance)
            if problem is not None:
                return Invalid(f"query parameter '{param.name}'", problem[1])
        elif param.location == "header":
            wanted = {k.lower(): v for k, v in (headers or {}).items()}.get(param.name.lower())
            if wanted is None:
                if param.required:
                    return Invalid(f"header '{param.name}'", "is required and missing")
                continue
            problem = first_error(json_validator(param.schema, components), wanted)
            if problem is not None:
                return Invalid(f"header '{param.name}'", problem[1])
    if op.body_schema is None or method.upper() in ("GET", "HEAD", "DELETE"):
        return None
    raw_body = body.encode("utf-8") if isinstance(body, str) else (body or b"")
    if not raw_body.strip():
        return Invalid("request body", "is required and missing") if op.body_required else None
    content_type = {k.lower(): v for k, v in (headers or {}).items()}.get("content-type", "")
    media_type = content_type.split(";")[0].strip().lower()
    if media_type != "application/json":
        return Invalid("header 'Content-Type'",
                       f"the body must be application/json, was sent as {media_type or 'none'!r}")
    try:
        document = json.loads(raw_body)
    except ValueError as exc:
        return Invalid("request body", f"is not valid JSON ({exc})")
    problem = first_error(json_validator(op.body_schema, components), document)
    if problem is not None:
        where, message = problem
        return Invalid(f"body /{where}" if where else "request body", message)
    return None
