"""Routing compiled from the document's paths: no hand-written route list to drift from it.

Literal paths are looked up in a dict; templated paths are tried by segment count, literal
segments before templates (as OpenAPI matches `/v1/agents/tools` before `/v1/agents/{id}`).
"""

from __future__ import annotations

import re
from collections import defaultdict

from ..openapi.spec import Operation, Spec

__all__ = ["Router"]

_PARAM = re.compile(r"\{([^}/]+)\}")


class Router:
    def __init__(self, spec: Spec) -> None:
        by_path: dict[str, dict[str, Operation]] = defaultdict(dict)
        for op in spec.operations:
            by_path[op.path][op.method] = op
        self._literal: dict[str, dict[str, Operation]] = {}
        templated: dict[int, list[tuple[tuple[int, ...], re.Pattern[str], dict[str, Operation]]]]
        templated = defaultdict(list)
        for path, methods in by_path.items():
            if "{" not in path:
                self._literal[path] = methods
                continue
            segments = path.strip("/").split("/")
            rank = tuple(1 if "{" in s else 0 for s in segments)
            pattern = re.compile(
                "^" + _PARAM.sub(lambda m: f"(?P<{m.group(1)}>[^/]+)", re.escape(path).replace(r"\{", "{").replace(r"\}", "}")) + "$"
            )
            templated[len(segments)].append((rank, pattern, methods))
        self._templated = {n: [(p, m) for _, p, m in sorted(routes, key=lambda r: r[0])]
                           for n, routes in templated.items()}

    def match(self, path: str) -> tuple[dict[str, Operation], dict[str, str]] | None:
        """The operations of the path (by method) and its raw path parameters, or None."""
        if len(path) > 1 and path.endswith("/"):
            path = path[:-1]
        methods = self._literal.get(path)
        if methods is not None:
            return methods, {}
        for pattern, methods in self._templated.get(path.count("/"), ()):
            found = pattern.match(path)
            if found:
                return methods, found.groupdict()
        return None
