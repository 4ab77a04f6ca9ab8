"""Request validation compiled from the document: path and query parameters, JSON bodies.

Parameters arrive as strings; each is coerced by the type its schema declares and then checked
by a compiled JSON Schema validator (jsonschema-rs). Nothing here restates a schema: the
constraints come from the document. Every refusal is a `BadRequest` whose message names the
parameter or body field and what was wrong with it.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterable
from typing import Any
from urllib.parse import parse_qsl

import orjson

from ..openapi.schemas import first_error, json_validator
from ..openapi.spec import Operation, Spec
from .clock import normalise_instant
from .errors import BadRequest

__all__ = ["RequestValidator", "body_defaults"]

_INT = re.compile(r"-?[0-9]+")
# Deeper JSON than any request of this API needs; past it the validator and the encoder would
# give up (their recursion limits), so it is refused up front.
MAX_BODY_DEPTH = 64


def _too_deep(value: Any) -> str | None:
    """The path of the first value nested deeper than MAX_BODY_DEPTH, or None.

    Depth first, holding one iterator per open container and the keys that lead to the
    current one: time linear in the body, memory in its depth. (A path string per child, as
    this once built, costs depth x key length per leaf: a 1 MiB body of long keys asked for
    gigabytes.)"""
    if not isinstance(value, (dict, list)):
        return None
    keys: list[Any] = []
    stack: list[Any] = [iter(value.items()) if isinstance(value, dict) else enumerate(value)]
    while stack:
        step = next(stack[-1], None)
        if step is None:
            stack.pop()
            if keys:
                keys.pop()
            continue
        key, child = step
        if len(stack) > MAX_BODY_DEPTH:  # the child's depth
            return "/".join(str(k) for k in (*keys, key))
        if isinstance(child, (dict, list)):
            keys.append(key)
            stack.append(iter(child.items()) if isinstance(child, dict) else enumerate(child))
    return None


# Accepted query values remembered per operation (the whole memo is dropped when full).
ACCEPTED_VALUES = 1024
_UNSEEN = object()
_NUMBER = re.compile(r"-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?")






def _coerce(value: str, schema: dict[str, Any]) -> Any:
    kind = schema.get("type")
    if kind == "integer" and _INT.fullmatch(value):
        # Very long digit strings stay numbers (and fail the bounds) without overflowing.
        return int(value) if len(value) <= 18 else float(value)
    if kind == "number" and _NUMBER.fullmatch(value):
        return float(value)
    if kind == "boolean" and value in ("true", "false"):
        return value == "true"
    return value


def _instant(name: str, value: str) -> str:
    """A date-time parameter in any ISO 8601 / RFC 3339 form, as the API writes timestamps
    (handlers compare it with stored ones as text). The pattern admits strings that name no
    instant (month 13, hour 24): those are refused."""
    try:
        return normalise_instant(value)
    except ValueError:
        raise BadRequest(f"query parameter '{name}': {value!r} is not a valid date-time") from None


# -- body defaults --------------------------------------------------------------------------
#
# A default is compiled into a plan: {property: (default or _NO_DEFAULT, nested plan)}.
# Applying it to a valid body fills each absent property that declares a `default`, recurses
# into present objects (and into each item of present arrays), and materialises an absent
# optional object none of whose properties is required when some of them have defaults (so
# `pagination` omitted reads as `{"page_size": 20}`). oneOf/anyOf branches are not entered:
# which branch a value took is the validator's business, not the defaults'.

_NO_DEFAULT = object()
Plan = dict[str, tuple[Any, "Plan | None", bool]]  # default, nested plan, materialise


def _plan(schema: Any, spec: Spec, seen: frozenset[str] = frozenset()) -> Plan | None:
    ref = schema.get("$ref") if isinstance(schema, dict) else None
    if ref in seen:
        return None
    node = spec.resolve(schema)
    if not isinstance(node, dict):
        return None
    seen = seen | {ref} if ref else seen
    if "items" in node and "properties" not in node:
        return _plan(node["items"], spec, seen)  # arrays: the plan of each item
    plan: Plan = {}
    required = set(node.get("required", ()))
    for name, prop in node.get("properties", {}).items():
        resolved = spec.resolve(prop)
        nested = _plan(prop, spec, seen)
        # A default beside a $ref (OpenAPI 3.1) wins over one in the referenced schema.
        default = next((n["default"] for n in (prop, resolved)
                        if isinstance(n, dict) and "default" in n), _NO_DEFAULT)
        materialise = (nested is not None and name not in required
                       and "properties" in resolved and not resolved.get("required")
                       and any(d is not _NO_DEFAULT for d, _, _ in nested.values()))
        if default is not _NO_DEFAULT or nested or materialise:
            plan[name] = (default, nested, materialise)
    return plan or None


def _apply(plan: Plan, value: Any) -> Any:
    if isinstance(value, list):
        return [_apply(plan, item) for item in value]
    if not isinstance(value, dict):
        return value
    filled = dict(value)
    for name, (default, nested, materialise) in plan.items():
        if name in filled:
            if nested is not None:
                filled[name] = _apply(nested, filled[name])
        elif default is not _NO_DEFAULT:
            filled[name] = copy.deepcopy(default)
        elif materialise and nested is not None:
            filled[name] = _apply(nested, {})
    return filled


def body_defaults(spec: Spec, operation: Operation) -> Plan | None:
    """The defaults plan of an operation's request body (None when it declares none)."""
    if operation.body_schema is None:
        return None
    return _plan(operation.body_schema, spec)


class RequestValidator:
    """The compiled checks of one operation."""

    def __init__(self, spec: Spec, operation: Operation) -> None:
        self.operation = operation
        components = spec.components
        self.query_params = {p.name: p for p in operation.parameters if p.location == "query"}
        self.path_params = {p.name: p for p in operation.parameters if p.location == "path"}
        self._validators = {
            (p.location, p.name): json_validator(p.schema, components)
            for p in operation.parameters
            if p.location in ("query", "path")
        }
        # (name, raw string) -> the value it was coerced to and accepted as: a parameter's
        # check is a function of its text, and clients repeat the same values constantly.
        self._accepted: dict[tuple[str, str], Any] = {}
        # "name=value" -> (name, accepted value): the same, by the unescaped part whole.
        self._accepted_parts: dict[str, tuple[str, Any]] = {}
        self._query_defaults = {
            name: p.default for name, p in self.query_params.items() if p.default is not None
        }
        self._required_query = tuple(n for n, p in self.query_params.items() if p.required)
        self._body_defaults = body_defaults(spec, operation)
        self.body_validator = (
            json_validator(operation.body_schema, components)
            if operation.body_schema is not None
            else None
        )

    def _check(self, location: str, name: str, value: Any) -> None:
        problem = first_error(self._validators[(location, name)], value)
        if problem is not None:
            raise BadRequest(f"{location} parameter '{name}': {problem[1]}")

    def path(self, raw: dict[str, str]) -> dict[str, Any]:
        values = {}
        for name, param in self.path_params.items():
            value = _coerce(raw[name], param.schema)
            self._check("path", name, value)
            values[name] = value
        return values

    def query(self, items: Iterable[tuple[str, str]], *, strict: bool = False,
              unknown: list[str] | None = None) -> dict[str, Any]:
        """The documented query parameters, coerced and checked, defaults filled in.

        Unknown parameters are ignored (the real service ignores them: decision B10) and are
        not part of the result, so a request answers as it would without them (their names
        are appended to `unknown` when given); `strict` refuses them instead. A documented parameter given twice is refused; an unknown one
        given twice is ignored like any other unknown parameter.
        """
        values: dict[str, Any] = {}
        accepted = self._accepted
        known = self.query_params
        for name, raw in items:
            if name not in known:
                if strict:
                    raise BadRequest(f"unknown query parameter '{name}'")
                if unknown is not None:
                    unknown.append(name)
                continue
            value = accepted.get((name, raw), _UNSEEN)
            if value is _UNSEEN:
                value = self._query_value(name, raw)
                if len(accepted) >= ACCEPTED_VALUES:
                    accepted.clear()
                accepted[(name, raw)] = value
            if name in values:
                raise BadRequest(f"query parameter '{name}' is given more than once")
            values[name] = value
        return self._completed(values)

    def query_string(self, query_string: bytes, *, strict: bool = False,
                     unknown: list[str] | None = None) -> dict[str, Any]:
        """`query` over a raw query string, split as the pipeline's `parse_query` splits it.
        In the common case (nothing escaped) each `name=value` part a documented parameter
        was accepted as is remembered whole, so a part seen before costs one lookup: the
        same checks, in the same order, without parsing the string into a list first."""
        if not query_string:
            return self.query((), strict=strict, unknown=unknown)
        text = query_string.decode("latin-1")
        if "%" in text or "+" in text:
            return self.query(parse_qsl(query_string.decode("utf-8", "replace"),
                                        keep_blank_values=True), strict=strict, unknown=unknown)
        values: dict[str, Any] = {}
        parts = self._accepted_parts
        for part in text.split("&"):
            found = parts.get(part)
            if found is None:
                if not part:
                    continue
                name, _, raw = part.partition("=")
                if name not in self.query_params:
                    if strict:
                        raise BadRequest(f"unknown query parameter '{name}'")
                    if unknown is not None:
                        unknown.append(name)
                    continue
                found = (name, self._query_value(name, raw))
                if len(parts) >= ACCEPTED_VALUES:
                    parts.clear()
                parts[part] = found
            name, value = found
            if name in values:
                raise BadRequest(f"query parameter '{name}' is given more than once")
            values[name] = value
        return self._completed(values)

    def _completed(self, values: dict[str, Any]) -> dict[str, Any]:
        """Accepted `values`: refused without a required parameter, else with the defaults."""
        for name in self._required_query:
            if name not in values:
                raise BadRequest(f"query parameter '{name}' is required")
        if not self._query_defaults:
            return values
        query = self._query_defaults.copy()
        query.update(values)
        return query

    def ignored(self, items: Iterable[tuple[str, str]]) -> list[str]:
        """The names in `items` that are not documented query parameters (each once, in order):
        what the default mode ignores and reports."""
        known = self.query_params
        unknown = [name for name, _ in items if name not in known]
        return list(dict.fromkeys(unknown)) if unknown else unknown

    def _query_value(self, name: str, raw: str) -> Any:
        param = self.query_params[name]
        value = _coerce(raw, param.schema)
        self._check("query", name, value)
        if param.schema.get("format") == "date-time":
            return _instant(name, value)
        return value

    def body(self, raw: bytes, content_type: str | None) -> Any:
        operation = self.operation
        if self.body_validator is None:
            return None  # bodyless operations ignore whatever was sent
        if not raw.strip():
            if operation.body_required:
                raise BadRequest("request body is required: send a JSON object")
            # An omitted optional body is the empty object, with the document's defaults.
            return _apply(self._body_defaults, {}) if self._body_defaults else None
        media_type = (content_type or "").split(";")[0].strip().lower()
        if media_type != "application/json":
            raise BadRequest(
                f"header 'Content-Type': a request body must be application/json, "
                f"got {media_type or 'none'!r}"
            )
        try:
            body = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            raise BadRequest(f"request body is not valid JSON: {exc}") from None
        deep = _too_deep(body)
        if deep is not None:
            field = deep.split("/")[0]
            raise BadRequest(f"body field '{field}': nested deeper than {MAX_BODY_DEPTH} levels")
        problem = first_error(self.body_validator, body)
        if problem is not None:
            where, message = problem
            if where:
                raise BadRequest(f"body field '{where}': {message}")
            raise BadRequest(f"request body: {message}")
        if self._body_defaults is not None:
            body = _apply(self._body_defaults, body)  # the document's defaults, filled in
        return body
