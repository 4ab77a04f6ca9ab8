"""Self-check: validate every response the mock sends against the document, and fail loudly.

The schemas used here are the document's own, *closed*: every object schema that lists its
properties refuses others. The document keeps response schemas open (a real server may add
fields without breaking clients), but the mock must not invent undocumented fields, so its own
responses are held to the closed form. Fixture records are checked the same way.
"""

from __future__ import annotations

import copy
from typing import Any

import orjson

from ..openapi.schemas import first_error, json_validator
from ..openapi.spec import Operation, Spec
from .errors import ResponseContractViolation

__all__ = ["SelfCheck", "close_schemas", "underscore_field"]


def _is_object_schema(node: dict[str, Any]) -> bool:
    kind = node.get("type")
    return kind == "object" or (isinstance(kind, list) and "object" in kind)


def close_schemas(node: Any) -> Any:
    """A deep copy in which every object schema with `properties` forbids other properties."""
    node = copy.deepcopy(node)
    _close(node)
    return node


def _close(node: Any) -> None:
    if isinstance(node, list):
        for item in node:
            _close(item)
        return
    if not isinstance(node, dict):
        return
    if (
        _is_object_schema(node)
        and isinstance(node.get("properties"), dict)
        and "additionalProperties" not in node
        and "patternProperties" not in node
    ):
        node["additionalProperties"] = False
    for key, value in node.items():
        if key in ("example", "examples", "default", "const", "enum"):
            continue
        if key == "properties" and isinstance(value, dict):
            for prop in value.values():
                _close(prop)
        else:
            _close(value)


def underscore_field(value: Any, where: str = "") -> str | None:
    """The path of the first object key starting with `_` in a JSON value, or None."""
    if isinstance(value, dict):
        for key, item in value.items():
            path = f"{where}/{key}"
            if key.startswith("_"):
                return path
            found = underscore_field(item, path)
            if found is not None:
                return found
    elif isinstance(value, list):
        for i, item in enumerate(value):
            found = underscore_field(item, f"{where}/{i}")
            if found is not None:
                return found
    return None


# Bodies found valid, by (operation, status): a body is checked once, not each time it is
# sent again. Every test's session answers its first reads with the same bytes (the seed's
# pages), and validating a 20-item page (parse, schema, `_` scan) costs ~70 us; a body equal
# to one already found valid is valid (the check is a pure function of operation, status and
# body; headers are checked every time). Bounded in count and bytes (cleared when full).
_VALID_BODIES = 512
_VALID_BYTES = 8 * 1024 * 1024


class SelfCheck:
    def __init__(self, spec: Spec) -> None:
        self.spec = spec
        self.components = close_schemas(spec.components)
        self._validators: dict[tuple[str, int], Any] = {}
        self._valid: set[tuple[str, int, bytes]] = set()
        self._valid_bytes = 0

    def validator_for_schema(self, schema: dict[str, Any]) -> Any:
        return json_validator(close_schemas(schema), self.components)

    def _validator(self, operation: Operation, status: int) -> Any:
        key = (operation.operation_id, status)
        if key not in self._validators:
            schema = operation.response_schema(status)
            self._validators[key] = (
                None if schema is None else json_validator(close_schemas(schema), self.components)
            )
        return self._validators[key]

    def check(self, operation: Operation, status: int, body: bytes,
              headers: dict[str, str]) -> None:
        errors: list[str] = []
        if status not in operation.responses:
            errors.append(f"status {status} is not documented for this operation")
        else:
            seen = (operation.operation_id, status, body)
            if seen not in self._valid:
                errors += self._body_errors(operation, status, body)
                if not errors:
                    self._remember(seen)
            for name in operation.responses[status].get("headers", {}):
                value = headers.get(name) or headers.get(name.lower())
                if value is None:
                    errors.append(f"header {name} is missing")
                elif name == "Retry-After" and not (value.isdigit() and int(value) >= 1):
                    errors.append(f"header Retry-After is not whole seconds: {value!r}")
        if errors:
            raise ResponseContractViolation(operation.operation_id, status, errors)

    def _body_errors(self, operation: Operation, status: int, body: bytes) -> list[str]:
        """What is wrong with a documented status's body: not JSON, not the schema, a `_` field."""
        try:
            payload = orjson.loads(body)
        except orjson.JSONDecodeError as exc:
            return [f"body is not JSON: {exc}"]
        errors = []
        validator = self._validator(operation, status)
        if validator is not None:
            problem = first_error(validator, payload)
            if problem is not None:
                where, message = problem
                errors.append(f"at '/{where}': {message}")
        # Every object schema with properties is closed (`close_schemas`): a record's internal
        # `_` field is refused by the schema itself. A `_` key in a body the schema accepts is
        # a user's key in a free-form object (`metadata`, a trigger's `config`), which the
        # API keeps (DECISIONS H26); the scan only names the internal field in a refusal.
        if errors and body.find(b'"_') >= 0:
            leaked = underscore_field(payload)
            if leaked is not None:
                errors.append(f"internal field {leaked!r} sent (fields starting with '_' "
                              "are never sent)")
        return errors

    def _remember(self, seen: tuple[str, int, bytes]) -> None:
        size = len(seen[2])
        if len(self._valid) >= _VALID_BODIES or self._valid_bytes + size > _VALID_BYTES:
            self._valid.clear()  # (a set shared by the server's threads: clear, not rebuild)
            self._valid_bytes = 0
        self._valid.add(seen)
        self._valid_bytes += size

