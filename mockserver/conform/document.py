"""What the gate reads from the document: operations, write roles, provenance, statuses, links.

The gate never restates a shape: it asks the packaged `spec/openapi.yaml` (through the mock's
own loader, which only parses it) which operations exist, which need the `write` role, what is
documented for each, and which links join them.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any
from urllib.parse import urlsplit

from ..openapi.spec import Operation, Spec, data_dir, load_spec

__all__ = ["ITEM_KEYS", "Document", "OperationFilter", "item_key"]

# Keys that identify a list item, in the order they are tried (issue 6): most lists use `id`;
# executions, roles, WhatsApp templates, models and workflow summaries have their own.
# `workflow_id` comes last: an execution carries its workflow's id beside its own key.
ITEM_KEYS = ("id", "execution_id", "role_id", "content_sid", "model_string", "workflow_id")

# Read-only POSTs: searches whose security lists no `write` role. They are safe on a real
# server, so the read-only gate fuzzes them too.
SAFE_METHODS = ("GET", "HEAD", "OPTIONS")


def item_key(item: Any) -> Any:
    if isinstance(item, dict):
        for key in ITEM_KEYS:
            if key in item:
                return item[key]
    return None


class OperationFilter:
    """--include / --exclude: globs matched against the operationId and the path template.

    A pattern starting with `re:` is a regular expression (searched, not anchored) instead.
    An operation is selected when it matches some include (or none is given) and no exclude.
    """

    def __init__(self, include: Sequence[str] = (), exclude: Sequence[str] = ()) -> None:
        self.include = [self._compile(p) for p in include]
        self.exclude = [self._compile(p) for p in exclude]

    @staticmethod
    def _compile(pattern: str) -> re.Pattern[str]:
        if pattern.startswith("re:"):
            return re.compile(pattern[3:])
        return re.compile(fnmatch.translate(pattern))

    def _matches(self, patterns: Iterable[re.Pattern[str]], op: Operation) -> bool:
        return any(p.search(op.operation_id) or p.search(op.path) for p in patterns)

    def __call__(self, op: Operation) -> bool:
        if self.include and not self._matches(self.include, op):
            return False
        return not self._matches(self.exclude, op)


class Document:
    """The loaded document, with the questions the gate asks of it."""

    def __init__(self, path: str | None = None) -> None:
        self.path = path or str(data_dir("spec") / "openapi.yaml")
        self.spec: Spec = load_spec(path)
        self.operations: list[Operation] = self.spec.operations
        self.by_id: dict[str, Operation] = self.spec.by_id
        self._routes: list[tuple[Operation, re.Pattern[str]]] | None = None

    # -- operations ------------------------------------------------------------------------

    def op(self, operation_id: str) -> Operation:
        return self.by_id[operation_id]

    def is_write(self, op: Operation) -> bool:
        return op.requires_write

    def is_read(self, op: Operation) -> bool:
        """Safe on a real server: a GET, or a POST whose security has no `write` role."""
        return op.method in SAFE_METHODS or not op.requires_write

    def label(self, op: Operation) -> str:
        return f"{op.method} {op.path}"

    def by_label(self, label: str) -> Operation | None:
        method, _, path = label.partition(" ")
        for op in self.operations:
            if op.method == method and op.path == path:
                return op
        return None

    def documented_statuses(self, op: Operation) -> set[int]:
        return set(op.responses)

    def reader_of(self, op: Operation) -> Operation | None:
        """The GET that reads the resource a write addresses (same x-mock-resource, path prefix)."""
        if op.resource_table is None:
            return None
        best: Operation | None = None
        for candidate in self.operations:
            if (candidate.method == "GET" and candidate.resource_table == op.resource_table
                    and op.path.startswith(candidate.path)
                    and not any(p.name == "cursor" for p in candidate.parameters)
                    and (best is None or len(candidate.path) > len(best.path))):
                best = candidate
        return best

    def operation_at(self, method: str, url: str) -> Operation | None:
        """The operation a request addresses (literal path segments win over parameters)."""
        if self._routes is None:
            routes = [(op, re.compile("^" + re.sub(r"\\\{[^}]+\\\}", "[^/]+", re.escape(op.path))
                                      + "$")) for op in self.operations]
            routes.sort(key=lambda route: route[0].path.count("{"))
            self._routes = routes
        path = urlsplit(url).path
        method = method.upper()
        assert self._routes is not None
        return next((op for op, pattern in self._routes
                     if op.method == method and pattern.match(path)), None)

    def read_request_guard(self) -> Callable[[str, str], bool]:
        """(method, url) -> True when the request is safe: a GET/HEAD/OPTIONS, or a request
        to a read operation of the document (the read-only searches)."""
        patterns = [
            (op.method, re.compile(re.sub(r"\\\{[^}]+\\\}", "[^/]+", re.escape(op.path)) + "$"))
            for op in self.operations if self.is_read(op) and op.method not in SAFE_METHODS
        ]

        def allow(method: str, url: str) -> bool:
            method = method.upper()
            if method in SAFE_METHODS or method == "TRACE":  # safe methods (RFC 9110)
                return True
            path = urlsplit(url).path
            return any(method == m and pattern.search(path) for m, pattern in patterns)

        return allow

    def links(self, op: Operation) -> dict[str, dict[str, Any]]:
        """Links of the success response: name -> {operationId, parameters}."""
        response = op.responses.get(op.success_status, {})
        return {name: self.spec.resolve(link) for name, link in (response.get("links") or {}).items()}

    # -- provenance --------------------------------------------------------------------------

    def provenance(self, op: Operation) -> str:
        return op.provenance

    def parameter_provenance(self, op: Operation, name: str) -> str | None:
        for param in op.parameters:
            if param.name == name:
                return param.provenance or param.schema.get("x-provenance")
        return None

    def weakest(self, *provenances: str | None) -> str:
        """The least certain of several provenances (inferred < reference < documented)."""
        order = {"inferred": 0, "reference": 1, "documented": 2}
        known = [p for p in provenances if p in order]
        return min(known, key=order.__getitem__) if known else "documented"

    def response_provenance(self, op: Operation, status: int | None,
                            instance_path: Sequence[Any]) -> str:
        """Provenance of the deepest property on `instance_path` that declares one (else the
        operation's); a response property we inferred makes its failures warnings."""
        found: str | None = None
        if status is not None:
            response = op.responses.get(status, {})
            if response.get("x-provenance"):
                found = response["x-provenance"]
            schema = op.response_schema(status)
            found = self._walk(schema, instance_path) or found
        return self.weakest(op.provenance, found)

    def body_provenance(self, op: Operation, instance_path: Sequence[Any]) -> str:
        return self.weakest(op.provenance, self._walk(op.body_schema, instance_path))

    def _walk(self, schema: Any, path: Sequence[Any]) -> str | None:
        found: str | None = None
        node = self.spec.resolve(schema)
        for step in path:
            if not isinstance(node, dict):
                break
            node = self._step(node, step)
            if node is None:
                break
            node = self.spec.resolve(node)
            if isinstance(node, dict) and node.get("x-provenance"):
                found = node["x-provenance"]
        return found

    def _step(self, node: dict[str, Any], step: Any) -> Any:
        if isinstance(step, int) or (isinstance(step, str) and step.isdigit()):
            if "items" in node:
                return node["items"]
        elif step in node.get("properties", {}):
            return node["properties"][step]
        for combinator in ("allOf", "anyOf", "oneOf"):
            for option in node.get(combinator, []):
                option = self.spec.resolve(option)
                if isinstance(option, dict):
                    found = self._step(option, step)
                    if found is not None:
                        return found
        return None
