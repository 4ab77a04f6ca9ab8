"""What discovery found (`discovery.py` fills it): the workspace under test, real parameter
values per operation, and the keys of the workspace's records. Apart from `discovery.py` so
that `gate.py` can name it without importing discovery (which needs the gate)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..openapi.spec import Operation

__all__ = ["Discovery"]


@dataclass
class Discovery:
    workspace: str
    workspaces: list[str]
    # operationId -> {"path": {...}, "query": {...}}: values that reach a real resource.
    params: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    bodies: dict[str, Any] = field(default_factory=dict)  # operationId -> a 200 body seen
    ids: set[str] = field(default_factory=set)  # keys of the workspace's records seen
    roots: list[str] = field(default_factory=list)  # operations that need only a workspace

    def ready(self, op: Operation) -> dict[str, dict[str, Any]] | None:
        """Parameters for `op` with every required one filled, or None when not reachable."""
        found = self.params.get(op.operation_id)
        if found is None:
            return None
        for param in op.parameters:
            if param.required and param.name not in found.get(param.location, {}):
                return None
        return found
