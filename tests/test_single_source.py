"""The document is the only source of field lists, defaults and response schema names.

Mechanical checks:

- lists are declared in the document (`x-mock-list`: a table and a partition), and take their
  order and filters from it (`x-order`, `x-filter`), not from a copy in Python: no handler
  module holds a list declaration or names a declared list's table again, every list the
  mock sorts by a document order states one, and the scan below finds
  no literal sort fields, direction or filter parameter in a handler of such a list; a
  document with another `x-order` or `x-filter` makes the mock answer in that order, with that
  filter (the planted break);
- no handler module restates the document (an `ast` scan of mockserver/engine/handlers/): no string
  naming the operation's own response schema (it is `Operation.data_schema`), no `.get(name,
  default)` of a request field or query parameter that has a document default (the validator
  fills it), and no literal collection of three or more property names of a request body
  schema (a field list such as the former `_PATCHABLE`); in the handler of a list the
  document orders or filters, no literal `order=`/`descending=` passed to `ctx.page`, no
  `ctx.query` read of an `x-filter` parameter, and no dict literal of a `by-sort` mapping;
- the ticket state machine is the document's `x-mock-transition` (the handlers name no
  state of it, and another declaration changes what the mock allows);
- the control API serves exactly the operations of spec/control-openapi.yaml, at their paths
  and methods (its success statuses are taken from there too).
"""

from __future__ import annotations

import ast
import copy
import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from mockserver.data.tables import TABLES
from mockserver.engine.handlers import load_handlers
from mockserver.openapi.spec import Listing, Operation, Spec, load_spec

HANDLERS_DIR = Path(__file__).resolve().parent.parent / "mockserver" / "engine" / "handlers"


@pytest.fixture(scope="module")
def spec() -> Spec:
    return load_spec()


def _query(op: Operation) -> dict[str, Any]:
    return {p.name: p for p in op.parameters if p.location == "query"}


DECLARED = sorted(op.operation_id for op in load_spec().operations if op.listing is not None)


def test_lists_are_declared_in_the_document() -> None:
    """The lists that only page a table are the document's `x-mock-list` (issue 30)."""
    assert len(DECLARED) >= 30


@pytest.mark.parametrize("operation_id", DECLARED)
def test_declared_lists_agree_with_the_document(spec: Spec, operation_id: str) -> None:
    op = spec.by_id[operation_id]
    listing = op.listing
    assert listing is not None
    assert op.method == "GET" and op.paginated
    assert listing.table in TABLES
    assert op.data_schema in TABLES[listing.table].schemas
    # The order is the document's: a declared list states one, over one fixed field list.
    assert op.order is not None and (op.order.by or op.order.by_sort), \
        f"{operation_id} states no x-order"
    if listing.of == "resource":
        assert op.resource_table is not None, f"{operation_id} addresses no resource"


def test_declarations_carry_no_order_or_filter() -> None:
    """What a list is sorted and filtered by is said once, in the document (`x-order`,
    `x-filter`): its `x-mock-list` says only which table and partition it pages."""
    assert {f.name for f in dataclasses.fields(Listing)} == {"table", "partition", "of"}
    for op in load_spec().operations:
        raw = op.raw.get("x-mock-list")
        assert raw is None or set(raw) <= set(Listing.KEYS), op.operation_id


def test_no_list_is_declared_outside_the_document() -> None:
    """No handler module builds a `Listing` or holds a table of lists: the document's
    `x-mock-list` is the only declaration."""
    for module in HANDLERS_DIR.glob("*.py"):
        tree = ast.parse(module.read_text())
        for node in ast.walk(tree):
            called = isinstance(node, ast.Call) and ast.unparse(node.func).endswith("Listing")
            assert not called, f"{module.name}:{getattr(node, 'lineno', '?')} declares a list"


@pytest.mark.parametrize("operation_id", sorted(
    op.operation_id for op in load_spec().operations if op.order is not None))
def test_a_stated_order_is_consistent(spec: Spec, operation_id: str) -> None:
    """The `order` parameter's default is the stated direction; `by-sort` names every
    `sort_by` value (what `ctx.ordering()` reads for a request)."""
    op = spec.by_id[operation_id]
    assert op.order is not None
    query = _query(op)
    if "order" in query:
        assert query["order"].default == op.order.direction, operation_id
    if op.order.by_sort:
        assert set(op.order.by_sort) == set(query["sort_by"].schema["enum"]), operation_id
    for facts in op.filters:
        assert facts.param in query, f"{operation_id}: x-filter on {facts.param}, no such query"


def test_every_operation_has_a_handler_and_reads_come_from_the_document(spec: Spec) -> None:
    handlers = load_handlers(spec)
    assert set(spec.by_id) <= set(handlers)
    explicit = load_handlers()
    for op in spec.operations:
        if op.operation_id not in explicit and op.listing is None:
            assert op.method == "GET" and op.resource_table and op.data_schema, op.operation_id


# -- the scan -----------------------------------------------------------------------------


def _operation_ids(node: ast.AST) -> list[str]:
    """The operationIds a function is registered under (`@operation("x", ...)`)."""
    found: list[str] = []
    for decorator in getattr(node, "decorator_list", ()):
        if isinstance(decorator, ast.Call) and getattr(decorator.func, "id", None) == "operation":
            found += [a.value for a in decorator.args if isinstance(a, ast.Constant)]
    return found


def _body_properties(spec: Spec) -> set[str]:
    names: set[str] = set()
    for op in spec.operations:
        if op.body_schema is not None:
            names |= set(spec.resolve(op.body_schema).get("properties", {}))
    return names


def _defaulted_names(spec: Spec) -> set[str]:
    """Request fields and query parameters that carry a default in the document."""
    names: set[str] = set()

    def walk(schema: Any, seen: frozenset[str]) -> None:
        ref = schema.get("$ref") if isinstance(schema, dict) else None
        if ref in seen:
            return
        node = spec.resolve(schema)
        if not isinstance(node, dict):
            return
        seen = seen | {ref} if ref else seen
        for name, prop in node.get("properties", {}).items():
            if "default" in prop or "default" in spec.resolve(prop):
                names.add(name)
            walk(prop, seen)
        if "items" in node:
            walk(node["items"], seen)

    for op in spec.operations:
        names |= {p.name for p in op.parameters if p.default is not None}
        if op.body_schema is not None:
            walk(op.body_schema, frozenset())
    return names


def _is_request(node: ast.AST) -> bool:
    """Whether an expression is the request's body or query, or a part of them (the names
    handlers give them), as opposed to a stored record."""
    text = ast.unparse(node)
    return text in ("body", "ctx.body", "ctx.query", "pagination", "filters", "params",
                    "(ctx.body or {})", "ctx.body or {}")


def restatements(source: str, spec: Spec) -> list[str]:
    """What a handler module's source restates from the document, one line per finding."""
    tree = ast.parse(source)
    found: list[str] = []
    body_names = _body_properties(spec)
    defaulted = _defaulted_names(spec)
    sort_maps = {op.operation_id: op.order.by_sort for op in spec.operations
                 if op.order is not None and op.order.by_sort}
    for function in ast.walk(tree):
        ids = _operation_ids(function)
        ops = [spec.by_id[i] for i in ids if i in spec.by_id]
        found += _restated_list_facts(function, ops)
        states = {state for op in ops if op.transition is not None
                  for state in (op.transition.target, *op.transition.sources)}
        found += [f"line {node.lineno}: state {node.value!r} (the document's x-mock-transition)"
                  for node in ast.walk(function)
                  if isinstance(node, ast.Constant) and node.value in states]
        sent = {op.data_schema for op in ops} - {None}
        if not sent:
            continue
        for node in ast.walk(function):
            if isinstance(node, ast.Constant) and node.value in sent:
                found.append(f"line {node.lineno}: schema name {node.value!r} (the response's)")
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr == "get" and len(node.args) == 2
                and _is_request(node.func.value)
                and isinstance(node.args[0], ast.Constant) and node.args[0].value in defaulted):
            found.append(f"line {node.lineno}: .get({node.args[0].value!r}, default) of a "
                         "documented default")
        if isinstance(node, ast.Tuple | ast.List | ast.Set):
            strings = [e.value for e in node.elts
                       if isinstance(e, ast.Constant) and isinstance(e.value, str)]
            if len(strings) == len(node.elts) >= 3 and set(strings) <= body_names:
                found.append(f"line {node.lineno}: field list {strings}")
        if isinstance(node, ast.Dict):
            keys = [k.value for k in node.keys if isinstance(k, ast.Constant)]
            values = [v.value for v in node.values if isinstance(v, ast.Constant)]
            if len(keys) == len(values) == len(node.keys) >= 2 and any(
                    set(dict(zip(keys, values, strict=True)).items())
                    <= {(k, v[0]) for k, v in sort_maps[op_id].items() if v}
                    for op_id in sort_maps):
                found.append(f"line {node.lineno}: sort_by map {keys} (the document's by-sort)")
            constants = all(isinstance(v, ast.Constant | ast.List | ast.Dict) and not
                            (isinstance(v, ast.List | ast.Dict) and (getattr(v, "elts", None)
                                                                     or getattr(v, "keys", None)))
                            for v in node.values)
            if len(keys) == len(node.keys) >= 3 and constants and set(keys) <= body_names:
                found.append(f"line {node.lineno}: defaults of {keys}")
    return found


def _restated_list_facts(function: ast.AST, ops: list[Operation]) -> list[str]:
    """In a handler of lists the document orders, filters or declares: a literal sort order or
    direction passed to `ctx.page`, a read of a filter parameter (the document's `x-filter`),
    or the declared table named again (the document's `x-mock-list`)."""
    ordered = any(op.order is not None for op in ops)
    filters = {f.param for op in ops for f in op.filters}
    declared = {op.listing.table for op in ops if op.listing is not None}
    found: list[str] = []
    for node in ast.walk(function):
        if declared and isinstance(node, ast.Call) and ast.unparse(node.func) == "ctx.page":
            table = node.args[0] if node.args else None
            if isinstance(table, ast.Constant) and table.value in declared:
                found.append(f"line {node.lineno}: table {table.value!r} restated (the "
                             "document's x-mock-list)")
        if ordered and isinstance(node, ast.Call) and ast.unparse(node.func) == "ctx.page":
            for keyword in node.keywords:
                if keyword.arg in ("order", "descending") and (
                        isinstance(keyword.value, ast.Constant | ast.Tuple | ast.List)
                        or "ctx.query" in ast.unparse(keyword.value)):
                    found.append(f"line {node.lineno}: {keyword.arg}= "
                                 f"{ast.unparse(keyword.value)} (the document's x-order)")
        if isinstance(node, ast.Call) and ast.unparse(node.func) == "ctx.query.get" \
                and node.args and isinstance(node.args[0], ast.Constant) \
                and node.args[0].value in filters:
            found.append(f"line {node.lineno}: filter {node.args[0].value!r} read by hand "
                         "(the document's x-filter)")
        if isinstance(node, ast.Subscript) and ast.unparse(node.value) == "ctx.query" \
                and isinstance(node.slice, ast.Constant) and node.slice.value in filters:
            found.append(f"line {node.lineno}: filter {node.slice.value!r} read by hand "
                         "(the document's x-filter)")
    return found


@pytest.mark.parametrize("module", sorted(p.name for p in HANDLERS_DIR.glob("*.py")))
def test_no_handler_restates_the_document(spec: Spec, module: str) -> None:
    assert restatements((HANDLERS_DIR / module).read_text(), spec) == []


@pytest.mark.parametrize(("planted", "finding"), [
    ('_PATCHABLE = ("name", "display_name", "description", "body")\n', "field list"),
    ('x = {"description": None, "color": None, "icon_id": None}\n', "defaults of"),
    ('def f(body):\n    return body.get("enabled", True)\n', "documented default"),
    ('@operation("getSkill")\ndef f(ctx):\n    return data(ctx, ctx.resource, "Skill")\n',
     "schema name 'Skill'"),
    ('@operation("listAgents")\ndef f(ctx):\n    return ctx.page("agents", partition={}, '
     'order=("created_at",), descending=True)\n', "the document's x-order"),
    ('@operation("listConversations")\ndef f(ctx):\n    return ctx.page("conversations", '
     'partition={}, order=(ctx.query["sort_by"],), descending=False)\n',
     "the document's x-order"),
    ('@operation("listTickets")\ndef f(ctx):\n    wanted = ctx.query.get("waiting_on")\n',
     "filter 'waiting_on' read by hand"),
    ('_SORT = {"arrival": "arrival_date", "departure": "departure_date"}\n', "sort_by map"),
    ('@operation("listTickets")\ndef f(ctx):\n    return ctx.page("tickets", partition={'
     '"workspace_id": ctx.workspace_id})\n', "the document's x-mock-list"),
    ('@operation("closeTicket")\ndef f(ctx):\n    if ctx.resource["status"] != "resolved":\n'
     '        raise BadRequest("no")\n', "the document's x-mock-transition"),
])
def test_the_scan_finds_what_it_looks_for(spec: Spec, planted: str, finding: str) -> None:
    assert any(finding in line for line in restatements(planted, spec))


def test_the_control_api_routes_from_its_own_document() -> None:
    from starlette.routing import Route

    from mockserver.engine.app import MockApp
    from mockserver.standalone.control import control_routes, control_spec

    routes = [r for r in control_routes(MockApp()) if isinstance(r, Route)]
    served = {(r.name, r.path, frozenset(r.methods or ()) - {"HEAD"}) for r in routes}
    documented = {(op.operation_id, op.path, frozenset({op.method}))
                  for op in control_spec().operations}
    assert served == documented


# -- the planted break: another document, another order and filter ------------------------


def _mock_with(tmp_path: Path, change: Any) -> Any:
    """A client of a mock over a copy of the document that `change` edited in place."""
    from starlette.testclient import TestClient

    from mockserver.engine.app import Config, MockApp
    from mockserver.standalone.server import create_app

    document = copy.deepcopy(load_spec().document)
    change(document)
    tmp_path.mkdir()
    path = tmp_path / "openapi.yaml"
    path.write_text(json.dumps(document))  # JSON is YAML
    mock = MockApp(Config(spec_path=str(path), self_check=True, rate_limit=0))
    return TestClient(create_app(mock=mock), headers={"Authorization": "Bearer mock-write-token"})


def _items(client: Any, path: str, **query: Any) -> list[dict[str, Any]]:
    response = client.get(path, params={"workspace_id": "ws_harborview", "limit": 100, **query})
    assert response.status_code == 200, response.text
    return list(response.json()["data"])


@pytest.mark.parametrize("path", ["/v1/skills", "/v1/agents"],
                         ids=["declared list", "list with a handler"])
def test_another_x_order_in_the_document_changes_the_mocks_order(tmp_path: Path,
                                                                  path: str) -> None:
    """A declared list (`x-mock-list`) and a list a handler pages (`ctx.page` with no order
    given) both walk in the document's `x-order`."""
    def by_name(document: dict[str, Any]) -> None:
        document["paths"][path]["get"]["x-order"].update(by="name", direction="asc")

    stated = _items(_mock_with(tmp_path / "a", lambda d: None), path)
    changed = _items(_mock_with(tmp_path / "b", by_name), path)
    assert len(stated) >= 2
    assert [s["created_at"] for s in stated] == sorted((s["created_at"] for s in stated),
                                                       reverse=True)
    assert [s["name"] for s in changed] == sorted(s["name"] for s in stated)
    assert [s["id"] for s in changed] != [s["id"] for s in stated]


def test_another_x_mock_list_in_the_document_changes_what_the_list_pages(tmp_path: Path) -> None:
    """The declared list pages the partition its `x-mock-list` names: a contact's helpdesk
    tickets declared over the workspace (not the contact) answer the workspace's."""
    path = "/v1/contacts/{id}/helpdesk-tickets"

    def over_workspace(document: dict[str, Any]) -> None:
        document["paths"][path]["get"]["x-mock-list"] = {"table": "helpdesk_tickets"}

    stated_mock = _mock_with(tmp_path / "a", lambda d: None)
    everyone = _items(stated_mock, "/v1/helpdesk-tickets")
    contact = everyone[0]["contact_id"]
    stated = _items(stated_mock, path.format(id=contact))
    changed = _items(_mock_with(tmp_path / "b", over_workspace), path.format(id=contact))
    assert stated and {t["contact_id"] for t in stated} == {contact}
    assert len(stated) < len(everyone)
    assert [t["id"] for t in changed] == [t["id"] for t in everyone]


def test_a_list_without_declaration_or_handler_is_refused_at_start(tmp_path: Path) -> None:
    """A list is served only as declared: without its `x-mock-list` (and no handler), the
    mock does not start."""
    def undeclared(document: dict[str, Any]) -> None:
        del document["paths"]["/v1/skills"]["get"]["x-mock-list"]

    with pytest.raises(RuntimeError, match="without a handler: listSkills"):
        _mock_with(tmp_path / "a", undeclared)


def test_another_x_mock_transition_in_the_document_changes_the_state_machine(
        tmp_path: Path) -> None:
    """The ticket actions leave from and move to the states their `x-mock-transition`
    declares: declared closable from pending, a pending ticket closes."""
    def close_pending(document: dict[str, Any]) -> None:
        document["paths"]["/v1/tickets/{id}/close"]["post"]["x-mock-transition"]["from"] = [
            "resolved", "pending"]

    stated, changed = (_mock_with(tmp_path / name, change)
                       for name, change in (("a", lambda d: None), ("b", close_pending)))
    ticket = _items(stated, "/v1/tickets", status="pending")[0]["id"]
    refused = stated.post(f"/v1/tickets/{ticket}/close")
    assert refused.status_code == 400 and "'pending'" in refused.json()["error"]
    closed = changed.post(f"/v1/tickets/{ticket}/close")
    assert closed.status_code == 200 and closed.json()["data"]["status"] == "closed"


def test_another_x_filter_in_the_document_changes_the_mocks_filter(tmp_path: Path) -> None:
    def open_is_resolved(document: dict[str, Any]) -> None:
        for param in document["paths"]["/v1/tickets"]["get"]["parameters"]:
            if param.get("name") == "status":
                param["x-filter"]["values"] = {"open": ["resolved"]}

    stated = _items(_mock_with(tmp_path / "a", lambda d: None), "/v1/tickets", status="open")
    changed = _items(_mock_with(tmp_path / "b", open_is_resolved), "/v1/tickets", status="open")
    assert stated and {t["status"] for t in stated} <= {"new", "pending"}
    assert changed and {t["status"] for t in changed} == {"resolved"}
