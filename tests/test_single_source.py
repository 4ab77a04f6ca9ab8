"""The document is the only source of field lists, defaults and response schema names.

Mechanical checks:

- the list declarations (handlers/declared.py) agree with the document: their operations are
  paginated GETs, their filters are documented query parameters, and where the document
  states an order (`x-order`) or a filter (`x-filter`) the declaration says the same;
- no handler module restates the document (an `ast` scan of mockserver/engine/handlers/): no string
  naming the operation's own response schema (it is `Operation.data_schema`), no `.get(name,
  default)` of a request field or query parameter that has a document default (the validator
  fills it), and no literal collection of three or more property names of a request body
  schema (a field list such as the former `_PATCHABLE`);
- the control API serves exactly the operations of spec/control-openapi.yaml, at their paths
  and methods (its success statuses are taken from there too).
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest

from mockserver.data.tables import TABLES
from mockserver.engine.handlers import load_handlers
from mockserver.engine.handlers.declared import LISTS
from mockserver.openapi.spec import Operation, Spec, load_spec

HANDLERS_DIR = Path(__file__).resolve().parent.parent / "mockserver" / "engine" / "handlers"


@pytest.fixture(scope="module")
def spec() -> Spec:
    return load_spec()


def _query(op: Operation) -> dict[str, Any]:
    return {p.name: p for p in op.parameters if p.location == "query"}


@pytest.mark.parametrize("operation_id", sorted(LISTS))
def test_declared_lists_agree_with_the_document(spec: Spec, operation_id: str) -> None:
    listing = LISTS[operation_id]
    op = spec.by_id[operation_id]
    assert op.method == "GET" and op.paginated
    assert listing.table in TABLES
    assert op.data_schema in TABLES[listing.table].schemas
    query = _query(op)
    raw_params = {p.get("name"): p for p in op.raw.get("parameters", [])}
    for name in listing.filters:
        assert name in query, f"{operation_id}: filter {name!r} is no query parameter"
        declared = raw_params.get(name, {}).get("x-filter")
        if declared is not None:
            assert declared.get("field") == name and not declared.get("values"), declared
    # Every filter the document states for the operation is applied.
    stated = {name for name, p in raw_params.items() if p.get("x-filter")}
    assert stated <= set(listing.filters), f"{operation_id}: filters {stated} not all declared"
    if listing.direction is None:
        assert "order" in query, f"{operation_id} follows `order` but documents none"
        direction = query["order"].default
    else:
        assert "order" not in query, f"{operation_id} documents `order` but ignores it"
        direction = listing.direction
    order = op.raw.get("x-order")
    if order is not None:  # the document's ordering facts, where it states them
        by = order.get("by")
        assert tuple([by] if isinstance(by, str) else by) == listing.by, order
        assert order.get("direction") == direction, order
    if listing.of == "resource":
        assert op.resource_table is not None, f"{operation_id} addresses no resource"


def test_every_operation_has_a_handler_and_reads_come_from_the_document(spec: Spec) -> None:
    handlers = load_handlers(spec)
    assert set(spec.by_id) <= set(handlers)
    explicit = load_handlers()
    for op in spec.operations:
        if op.operation_id not in explicit:
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
    for function in ast.walk(tree):
        ids = _operation_ids(function)
        sent = {spec.by_id[i].data_schema for i in ids if i in spec.by_id} - {None}
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
            constants = all(isinstance(v, ast.Constant | ast.List | ast.Dict) and not
                            (isinstance(v, ast.List | ast.Dict) and (getattr(v, "elts", None)
                                                                     or getattr(v, "keys", None)))
                            for v in node.values)
            if len(keys) == len(node.keys) >= 3 and constants and set(keys) <= body_names:
                found.append(f"line {node.lineno}: defaults of {keys}")
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
