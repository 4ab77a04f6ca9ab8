"""Every documented sort and filter makes a visible difference on the default fixtures.

The parameters are read from the document: every optional query parameter of a GET operation
other than paging (`limit`, `cursor`) and the workspace. A new parameter whose effect the
default data cannot show fails here, naming the operation and the parameter.

- a sort (`order`, `sort_by`): every value gives its own order of the same records;
- a filter with listed values (an enum, a boolean): at least one value keeps some records and
  drops others, and no value errs;
- a free-form filter: a value taken from the unfiltered answer (a field of the same name at
  any depth, or for an instant one of the instants the answer shows) keeps some records and
  drops others (or changes what is shown of them: `include_body`).
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from conftest import auth
from starlette.testclient import TestClient

from mockserver.data.tables import TABLES
from mockserver.engine.app import MockApp
from mockserver.engine.clock import format_timestamp, parse_timestamp
from mockserver.openapi.spec import Operation, load_spec
from mockserver.standalone.server import create_app

SKIP = {"workspace_id", "limit", "cursor"}
SORTS = {"order", "sort_by"}
_INSTANT = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
# Values of required search terms (the term is not a filter; these find several records).
SEARCH_TERMS = {"searchWorkspaceUsers": "a", "searchTickets": "e", "searchContacts": "a",
                "searchConversations": "a"}


def _cases() -> list[tuple[str, str]]:
    cases = []
    for op in load_spec().operations:
        if op.method != "GET":
            continue
        for p in op.parameters:
            if p.location == "query" and not p.required and p.name not in SKIP:
                cases.append((op.operation_id, p.name))
    return cases


CASES = _cases()


def _limit(op: Operation) -> dict[str, int]:
    for p in op.parameters:
        if p.location == "query" and p.name == "limit":
            return {"limit": int(p.schema.get("maximum", 100))}
    return {}


def _targets(mock: MockApp, op: Operation) -> list[tuple[str, dict[str, Any]]]:
    """(url, base query) candidates: each workspace of the write token, each resource."""
    workspaces = ["ws_harborview", "ws_alpine"]
    base: dict[str, Any] = {**_limit(op)}
    for p in op.parameters:
        if p.location == "query" and p.required and p.name in ("query",):
            base["query"] = SEARCH_TERMS[op.operation_id]
    if op.path.startswith("/v1/workspaces/{id}"):
        return [(op.path.replace("{id}", ws), base) for ws in workspaces]
    if "{" in op.path:
        table = TABLES[op.resource_table or ""]
        field = table.workspace_field or "workspace_id"
        urls = []
        for record in mock.store.all(table.name):
            if record.get(field) in workspaces:
                key = str(record[table.key])
                urls.append((re.sub(r"\{[^}]+\}", key, op.path, count=1), base))
        return urls
    needs_ws = any(p.name == "workspace_id" for p in op.parameters if p.location == "query")
    if needs_ws:
        return [(op.path, {**base, "workspace_id": ws}) for ws in workspaces]
    return [(op.path, base)]


def _data(response: Any) -> Any:
    assert response.status_code == 200, response.text
    return response.json()["data"]


def _ids(data: Any) -> Any:
    if isinstance(data, list):
        return [item.get("id", item.get("_id", repr(item))) if isinstance(item, dict) else item
                for item in data]
    return data


def _values(op: Operation, name: str, baseline: Any) -> list[str]:
    param = next(p for p in op.parameters if p.location == "query" and p.name == name)
    schema = param.schema
    if "enum" in schema:
        return [str(v) for v in schema["enum"]]
    if schema.get("type") == "boolean":
        return ["true", "false"]
    items = baseline if isinstance(baseline, list) else [baseline]
    if schema.get("format") == "date-time":
        instants = sorted({v for item in items if isinstance(item, dict)
                           for v in item.values() if isinstance(v, str) and _INSTANT.match(v)})
        n = len(instants)
        if not n:
            return []
        picks = [instants[i] for i in (n // 2, n // 4, 3 * n // 4, 0, n - 1)]
        middle = (_ms(instants[0]) + _ms(instants[-1])) // 2  # between the first and the last
        return list(dict.fromkeys([*picks, format_timestamp(middle)]))
    seen: list[str] = []
    for item in items:
        _collect(item, name, seen)
    return seen


def _ms(value: str) -> int:
    return int(parse_timestamp(value))


def _collect(node: Any, name: str, seen: list[str]) -> None:
    """String values of fields called `name` (or `{name}.id`), at any depth of `node`."""
    if isinstance(node, list):
        for item in node:
            _collect(item, name, seen)
    elif isinstance(node, dict):
        value = node.get(name)
        if isinstance(value, dict):
            value = value.get("id")
        if isinstance(value, str) and value not in seen:
            seen.append(value)
        for key, item in node.items():
            if key != name:
                _collect(item, name, seen)


@pytest.fixture(scope="module")
def api(session_mock: MockApp) -> Any:
    session_mock.reset()
    session_mock.limiter.configure(enabled=False)  # hundreds of reads; limits are not tested
    try:
        with TestClient(create_app(mock=session_mock), headers=auth()) as client:
            yield client, session_mock
    finally:
        session_mock.reset()


def test_every_sort_and_filter_is_covered_by_the_cases() -> None:
    names = {name for _, name in CASES}
    assert {"order", "sort_by", "status", "updated_since", "archived"} <= names


@pytest.mark.parametrize(("operation_id", "name"), CASES)
def test_makes_a_visible_difference(api: Any, operation_id: str, name: str) -> None:
    client, mock = api
    op = mock.spec.by_id[operation_id]
    shown = []
    for url, base in _targets(mock, op):
        baseline = _data(client.get(url, params=base))
        if name in SORTS:
            values = _values(op, name, baseline)
            orders = [_ids(_data(client.get(url, params={**base, name: v}))) for v in values]
            shown.append((url, orders))
            distinct = len({repr(o) for o in orders}) == len(values)
            if distinct and all(sorted(map(repr, o)) == sorted(map(repr, orders[0]))
                                for o in orders):
                return
            continue
        for value in _values(op, name, baseline):
            response = client.get(url, params={**base, name: value})
            if response.status_code == 400 and _INSTANT.match(value):
                continue  # an instant taken from the data can make an empty range (start=end)
            result = _data(response)
            shown.append((url, value, _ids(result)))
            if result and result != baseline:
                return
    pytest.fail(f"{operation_id}: query parameter {name!r} makes no visible difference on the "
                f"default fixtures; tried: {shown[:6]}")
