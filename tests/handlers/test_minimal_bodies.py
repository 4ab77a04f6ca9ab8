"""Every write with a body, sent the smallest body the document accepts (its required fields
only, each at its smallest valid value), is handled without a 5xx: a handler that reads a field
the document does not require fails here directly, not only when a fuzzer happens to omit it.

Planted defect this was seen failing on: `name` dropped from `createAgent`'s required fields in
spec/openapi.yaml (createAgent then answered 500: the self-check found the agent it made
without its required `name`).
"""

from __future__ import annotations

import re
from typing import Any

from conftest import FROZEN_AT
from starlette.testclient import TestClient

from mockserver.engine.app import MockApp
from mockserver.openapi.schemas import first_error, json_validator
from mockserver.openapi.spec import Operation

WORKSPACE = "ws_harborview"


def minimal(spec: Any, schema: dict[str, Any], name: str = "") -> Any:
    """The smallest instance of `schema`: required properties only, smallest values."""
    schema = spec.resolve(schema)
    alternatives = schema.get("oneOf") or schema.get("anyOf")
    if alternatives and "properties" not in schema:
        return minimal(spec, alternatives[0], name)
    if "allOf" in schema:
        merged: dict[str, Any] = {}
        for part in schema["allOf"]:
            merged.update(minimal(spec, part, name))
        return merged
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return schema["enum"][0]
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next(k for k in kind if k != "null")
    if kind == "object":
        fields = list(schema.get("required", []))
        # Bodies requiring one of several fields (`anyOf: [{required: [...]}, ...]`): the first.
        fields += [f for f in (alternatives or [{}])[0].get("required", []) if f not in fields]
        wanted = max(len(fields), schema.get("minProperties", 0))
        # minProperties (a PATCH names at least one field): the first fields in order.
        fields += [f for f in schema.get("properties", {}) if f not in fields]
        return {field: minimal(spec, schema["properties"][field], field)
                for field in fields[:wanted]}
    if kind == "array":
        return [minimal(spec, schema["items"], name) for _ in range(schema.get("minItems", 0))]
    if kind in ("integer", "number"):
        return schema.get("minimum", 1)
    if kind == "boolean":
        return False
    if schema.get("format") == "date-time":
        return FROZEN_AT
    if name == "workspace_id":
        return WORKSPACE
    return "x" * max(1, schema.get("minLength", 1))


def _path(mock: MockApp, op: Operation) -> str | None:
    """The operation's path with a record of the workspace for each parameter (None when the
    dataset has none)."""
    path = op.path
    for name in re.findall(r"\{([^}]+)\}", op.path):
        table = op.resource_table if name == op.resource_param or name == "id" else None
        if table is None:
            return None
        ws_field = "workspace_id" if table != "workflows" else "_workspace_id"
        found = mock.store.find(table, lambda r, f=ws_field: r.get(f) == WORKSPACE)
        if not found:
            return None
        path = path.replace("{" + name + "}", str(found[0][mock.store.key_fields[table]]))
    return path


def test_the_smallest_accepted_body_is_handled(mock: MockApp, client: TestClient) -> None:
    failures = []
    sent = 0
    for op in mock.spec.operations:
        if op.body_schema is None:
            continue
        body = minimal(mock.spec, op.body_schema)
        validator = json_validator(op.body_schema, mock.spec.components)
        assert first_error(validator, body) is None, f"{op.operation_id}: {body}"
        path = _path(mock, op)
        if path is None:
            continue
        answer = client.request(op.method, path, params={"workspace_id": WORKSPACE}, json=body)
        sent += 1
        if answer.status_code >= 500:
            failures.append((op.operation_id, body, answer.status_code, answer.text[:200]))
        elif answer.status_code >= 400:
            assert "error" in answer.json(), op.operation_id
        mock.reset()
    assert failures == []
    assert sent >= 15
