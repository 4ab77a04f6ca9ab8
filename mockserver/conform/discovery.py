"""Find real parameter values by following the document's links from the workspace down.

Roots are the GET operations that need nothing but a workspace (its id in the path or the
`workspace_id` query); each is called once, and every link of its 200 response is evaluated
(`$response.body#/...`, `$request.path.x`, `$request.query.x`) to give the target operation
real parameters. Targets that are reads are called in turn (breadth first, once each), so a
ticket's notes are reached through a ticket. Targets that are writes only get their parameters.
Every id seen on the way is kept for the namespace check of the auth matrix.
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Any

from .discovered import Discovery
from .document import item_key

if TYPE_CHECKING:
    from ..openapi.spec import Operation, Parameter
    from .gate import Gate

__all__ = ["Discovery", "collect_ids", "discover", "fill_required", "sample_value"]


def sample_value(param: Parameter) -> Any:
    """A valid value for a required parameter the links do not provide (e.g. a search query)."""
    schema = param.schema
    if "default" in schema:
        return schema["default"]
    if schema.get("enum"):
        return schema["enum"][0]
    if schema.get("examples"):
        return schema["examples"][0]
    kind = schema.get("type")
    if kind == "integer":
        return schema.get("minimum", 1)
    if kind == "boolean":
        return False
    return "a"


def fill_required(op: Operation, found: dict[str, dict[str, Any]], workspace: str) -> None:
    for param in op.parameters:
        bucket = found.setdefault(param.location, {})
        if param.name in bucket:
            continue
        if param.location == "path" and param.name == "id" and op.workspace_source == "path":
            bucket["id"] = workspace
        elif param.location == "query" and param.name == "workspace_id" and param.required:
            bucket["workspace_id"] = workspace
        elif param.required and param.location == "query":
            bucket[param.name] = sample_value(param)


def collect_ids(body: Any, workspace: str, into: set[str]) -> None:
    """Keys of the records in `body` that belong to `workspace` (their `workspace_id` says so):
    what must never reach a token of another workspace. Global records (models, the built-in
    tool catalogue) carry no workspace and are not counted."""
    if isinstance(body, dict):
        if body.get("workspace_id") == workspace:
            key = item_key(body)
            if isinstance(key, str):
                into.add(key)
        for value in body.values():
            collect_ids(value, workspace, into)
    elif isinstance(body, list):
        for value in body:
            collect_ids(value, workspace, into)


def _pointer(body: Any, pointer: str) -> Any:
    node = body
    for raw in pointer.lstrip("/").split("/") if pointer else []:
        part = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, list):
            if not part.isdigit() or int(part) >= len(node):
                return None
            node = node[int(part)]
        elif isinstance(node, dict):
            if part not in node:
                return None
            node = node[part]
        else:
            return None
    return node


def evaluate(expression: Any, request: dict[str, dict[str, Any]], body: Any) -> Any:
    if not isinstance(expression, str) or not expression.startswith("$"):
        return expression
    if expression.startswith("$response.body#"):
        return _pointer(body, expression[len("$response.body#"):])
    if expression == "$response.body":
        return body
    for location in ("path", "query"):
        prefix = f"$request.{location}."
        if expression.startswith(prefix):
            return request.get(location, {}).get(expression[len(prefix):])
    return None


def _locate(target: Operation, name: str) -> tuple[str, str] | None:
    if "." in name:
        location, _, bare = name.partition(".")
        return location, bare
    for param in target.parameters:
        if param.name == name:
            return param.location, name
    return None


def discover(gate: Gate) -> Discovery:
    doc = gate.doc
    listing = gate.call(doc.op("listWorkspaces"))
    body = listing.json() if listing.status == 200 else None
    workspaces = [str(w["id"]) for w in (body or {}).get("data", [])
                  if isinstance(w, dict) and w.get("id")]
    workspace: str = gate.config.workspace or (workspaces[0] if workspaces else "")
    found = Discovery(workspace=workspace, workspaces=workspaces)
    if workspace:
        found.ids.add(workspace)
    roots = [op for op in doc.operations
             if op.method == "GET" and op.resource_table is None
             and all(not p.required or p.location == "query" or (
                 p.location == "path" and op.workspace_source == "path") for p in op.parameters)]
    found.roots = [op.operation_id for op in roots]
    queue: deque[Operation] = deque()
    for op in roots:
        params: dict[str, dict[str, Any]] = {}
        fill_required(op, params, workspace)
        found.params[op.operation_id] = params
        queue.append(op)
    done: set[str] = set()
    while queue:
        op = queue.popleft()
        if op.operation_id in done or not workspace:
            continue
        done.add(op.operation_id)
        params = found.params[op.operation_id]
        query = dict(params.get("query", {}))
        if any(p.name == "limit" for p in op.parameters):
            query.setdefault("limit", 5)
        exchange = gate.call(op, params=query, path_params=params.get("path"))
        if exchange.status != 200:
            continue
        body = exchange.json()
        found.bodies[op.operation_id] = body
        collect_ids(body, workspace, found.ids)
        for link in doc.links(op).values():
            target = doc.by_id.get(link.get("operationId", ""))
            if target is None or target.operation_id in found.params:
                continue
            values: dict[str, dict[str, Any]] = {}
            complete = True
            for name, expression in (link.get("parameters") or {}).items():
                where = _locate(target, name)
                value = evaluate(expression, params, body)
                if where is None or value is None:
                    complete = False
                    break
                values.setdefault(where[0], {})[where[1]] = value
            if not complete:
                continue
            fill_required(target, values, workspace)
            found.params[target.operation_id] = values
            if target.method == "GET":
                queue.append(target)
    return found
