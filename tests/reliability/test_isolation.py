"""Workspace isolation, generated over every operation of the document: the foreign token
(mock-other-token, whose only workspace is ws_desert) aimed at ws_harborview is refused with
403/404 and its response names no id, name or text of a ws_harborview record. The same request
with the write token is not refused with 403, so the check has teeth."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from conftest import OTHER, WRITE, auth
from starlette.testclient import TestClient

from mockserver.data.tables import TABLES
from mockserver.engine.app import MockApp
from mockserver.openapi.spec import Operation, load_spec

WS = "ws_harborview"
PYTHON_CODE = "def main(**params):\n    return {'message': 'isolation'}\n"

# Small literal values for body fields the schema gives nothing usable for.
FIELD_VALUES: dict[str, Any] = {
    "name": "isolation-probe", "description": "isolation probe", "body": "isolation probe",
    "title": "isolation probe", "query": "check-in", "language": "python", "code": PYTHON_CODE,
    "folder_id": None, "auto_assign_to_existing_v2_agents": False,
}


def _ws_field(table: str) -> str:
    return TABLES[table].workspace_field or "workspace_id"


def harborview_records(mock: MockApp) -> list[dict[str, Any]]:
    found = []
    for name, table in TABLES.items():
        if table.workspace_field is None:
            continue
        field = table.workspace_field
        found += [dict(r) for r in mock.store.all(name) if r.get(field) == WS]
    return found


def _strings(record: Any) -> set[str]:
    found: set[str] = set()
    if isinstance(record, str):
        found.add(record)
    elif isinstance(record, dict):
        for key, value in record.items():
            if not (isinstance(key, str) and key.startswith("_")):
                found |= _strings(value)
    elif isinstance(record, list):
        for value in record:
            found |= _strings(value)
    return found


def secrets_of(mock: MockApp) -> set[str]:
    key = id(mock)
    if key not in _SECRETS:
        _SECRETS[key] = _secrets_of(mock)
    return _SECRETS[key]


_SECRETS: dict[int, set[str]] = {}


def _secrets_of(mock: MockApp) -> set[str]:
    """Ids, names and texts of ws_harborview records that nothing outside ws_harborview holds
    (shared values, such as a model string an agent names, are not secrets). The workspace id
    itself is left out here: `test_refusal_does_not_name_the_owning_workspace` checks it."""
    mine: set[str] = set()
    elsewhere: set[str] = set()
    for name, table in TABLES.items():
        field = table.workspace_field
        for record in mock.store.all(name):
            if field is not None and record.get(field) == WS:
                mine |= _strings(record)
            else:
                elsewhere |= _strings(record)
    blob = "\n".join(elsewhere)
    # Texts shorter than this are too common to mean a leak; timestamps are not secrets; a
    # value found inside a value of another workspace is not one either.
    return {s for s in mine - elsewhere - {WS}
            if len(s) >= 6 and not s[:4].isdigit() and s not in blob}


def leaks(secrets: set[str], text: str, asked: str = "") -> list[str]:
    """Secrets in a response: a whole JSON string value, quoted in a message, or (long texts
    and ids) anywhere; what the request itself sent does not count."""
    try:
        values = _strings(orjson.loads(text))
    except orjson.JSONDecodeError:
        values = set()
    joined = "\n".join(values)  # string values only: a key named like a value is no leak
    found = []
    for secret in secrets:
        if secret not in joined or secret in asked:
            continue
        if len(secret) >= 10 or secret in values or f"'{secret}'" in joined:
            found.append(secret)
    return sorted(found)


def _record(mock: MockApp, table: str, where: Any = None) -> dict[str, Any]:
    field = _ws_field(table)
    rows = [dict(r) for r in mock.store.all(table) if r.get(field) == WS
            and (where is None or where(r))]
    assert rows, f"no ws_harborview record in {table}"
    return rows[0]


def _sample(schema: dict[str, Any], name: str) -> Any:
    if name in FIELD_VALUES:
        return FIELD_VALUES[name]
    if "default" in schema:
        return schema["default"]
    if schema.get("enum"):
        return schema["enum"][0]
    if schema.get("examples"):
        return schema["examples"][0]
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next(k for k in kind if k != "null")
    return {"integer": schema.get("minimum", 1), "number": 1, "boolean": False,
            "array": [], "object": {}}.get(kind, "isolation")


def build(mock: MockApp, op: Operation) -> tuple[str, dict[str, Any], Any]:
    """(path, query, body) of a valid-looking request aimed at ws_harborview data."""
    spec = mock.spec
    path = op.path
    query: dict[str, Any] = {}
    record = None
    if op.resource_table:
        record = _record(mock, op.resource_table)
        if op.operation_id == "updateTicketNote":
            # A note the write token's user wrote (only its author may edit it).
            note = next((n for n in mock.store.all("ticket_notes") if n["workspace_id"] == WS
                         and n["author"].get("user_id") == "us_maria"), None) \
                or _record(mock, "ticket_notes")
            record = dict(mock.store.get("tickets", note["ticket_id"]) or {})
            path = path.replace("{note_id}", note["id"])
        if op.operation_id == "listWorkflowExecutionEvents":
            execution = next(e for e in mock.store.all("workflow_executions")
                             if e["_workspace_id"] == WS)
            record = dict(mock.store.get("workflows", execution["workflow_id"]) or {})
            path = path.replace("{execution_id}", execution["execution_id"])
        key = record[TABLES[op.resource_table].key]
        path = path.replace("{" + (op.resource_param or "id") + "}", str(key))
        if "{run_id}" in path:  # a run of the addressed agent
            run = next((r for r in mock.store.all("agent_runs") if r["agent_id"] == key),
                       None) or _record(mock, "agent_runs")
            path = path.replace("{run_id}", run["id"])
    if op.workspace_source == "path":
        path = path.replace("{id}", WS)
        if "{rule_id}" in path:
            path = path.replace("{rule_id}", _record(mock, "verification_rules")["id"])
    for param in op.parameters:
        if param.location != "query":
            continue
        if param.name == "workspace_id" and param.required:
            query["workspace_id"] = WS
        elif param.required:
            query[param.name] = _sample(param.schema, param.name)
    body = None
    if op.body_schema is not None:
        schema = spec.resolve(op.body_schema)
        body = {}
        for name in schema.get("required", []):
            prop = spec.resolve(schema.get("properties", {}).get(name, {}))
            body[name] = WS if name == "workspace_id" else _sample(prop, name)
        for choice in schema.get("anyOf", []):  # one alternative's required fields
            for name in choice.get("required", []):
                prop = spec.resolve(schema.get("properties", {}).get(name, {}))
                body.setdefault(name, _sample(prop, name))
            break
        if len(body) < schema.get("minProperties", 0):
            name = next(n for n in schema.get("properties", {}) if n in FIELD_VALUES)
            body[name] = FIELD_VALUES[name]
        if "workspace_id" in schema.get("properties", {}) and op.workspace_source == "body":
            body["workspace_id"] = WS
        if op.operation_id == "assignEscalation":
            body["assignee_id"] = "us_maria"
        if op.operation_id == "sendContactMessage":
            body["channel_node_id"] = "isolation"
    return path, query, body


OPERATIONS = load_spec().operations


@pytest.mark.parametrize("op_id", [op.operation_id for op in OPERATIONS])
def test_foreign_token_gets_nothing_of_another_workspace(mock: MockApp, client: TestClient,
                                                         op_id: str) -> None:
    op = mock.spec.by_id[op_id]
    if op.workspace_source is None:
        # Global operations (the index, models, the token's workspaces, runtimes): no workspace
        # to aim at; the foreign token's answer must still name nothing of ws_harborview.
        path, query, body = op.path, {}, None
    else:
        path, query, body = build(mock, op)
    secrets = secrets_of(mock)
    before = {name: dict(mock.store.rows(name)) for name in TABLES}
    response = client.request(op.method, path, params=query, json=body, headers=auth(OTHER))
    text = response.text
    asked = path + " " + repr(query) + " " + repr(body)
    leaked = leaks(secrets, text, asked)
    assert not leaked, (op_id, response.status_code, leaked[:5], text[:300])
    if op.workspace_source is None:
        assert response.status_code < 500, text
        return
    if response.status_code == 400:
        # Our body could not be made valid: acceptable only as a refusal that leaks nothing.
        assert list(response.json()) == ["error"], text
    else:
        assert response.status_code in (403, 404), (op_id, response.status_code, text[:300])
        assert list(response.json()) == ["error"], text
    # A refused request changed nothing.
    assert {name: dict(mock.store.rows(name)) for name in TABLES} == before, op_id
    # Teeth: the legitimate token is not refused for the same request.
    own = client.request(op.method, path, params=query, json=body, headers=auth(WRITE))
    assert own.status_code != 403, (op_id, own.status_code, own.text[:300])
    assert own.status_code < 500, (op_id, own.text[:300])


def test_foreign_token_lists_of_its_own_workspace_hold_nothing_of_another(
        mock: MockApp, client: TestClient) -> None:
    secrets = secrets_of(mock)
    for op in mock.spec.operations:
        if op.method != "GET" or op.workspace_source not in ("query", "path"):
            continue
        path = op.path.replace("{id}", "ws_desert")
        if "{" in path:
            continue
        query = {p.name: ("ws_desert" if p.name == "workspace_id" else _sample(p.schema, p.name))
                 for p in op.parameters if p.location == "query" and p.required}
        if any(p.name == "limit" for p in op.parameters):
            query["limit"] = 100
        response = client.get(path, params=query, headers=auth(OTHER))
        assert response.status_code == 200, (op.operation_id, response.text[:300])
        leaked = leaks(secrets, response.text)
        assert not leaked, (op.operation_id, leaked[:5])


def test_refusal_does_not_name_the_owning_workspace(mock: MockApp, client: TestClient) -> None:
    """A foreign token that addresses a record by id alone (no workspace_id sent) must not
    learn which workspace holds it: the refusal may not name ws_harborview."""
    offenders = []
    for op in mock.spec.operations:
        if op.workspace_source != "resource":
            continue
        path, query, body = build(mock, op)
        query.pop("workspace_id", None)
        if isinstance(body, dict):
            body.pop("workspace_id", None)
        if WS in path:
            continue
        response = client.request(op.method, path, params=query, json=body, headers=auth(OTHER))
        if WS in response.text:
            offenders.append(f"{op.method} {path} -> {response.status_code} {response.text}")
    assert not offenders, f"{len(offenders)} operations name the owning workspace:\n" + \
        "\n".join(offenders[:5])
