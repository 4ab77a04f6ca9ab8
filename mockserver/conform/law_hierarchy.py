"""The hierarchy law: a sub-resource addressed through a parent it does not belong to is 404
(reads always; writes too with --allow-writes)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from .bodies import patchable
from .document import item_key
from .law_walk import lists, query_for, walk
from .records import through_parents
from .registry import declare, fail, routine

if TYPE_CHECKING:
    from .gate import Gate

__all__ = ["check_hierarchy"]

declare("law_hierarchy", family="laws", option="laws", proofs=[
    ("a sub-resource through a parent it does not belong to is 404",
     "events read through another workflow"),
    ("the same for a record no link reached (found under one of the first parents listed)",
     "note edited through another ticket")])


@routine("laws", "hierarchy", order=5)
def check_hierarchy(gate: Gate) -> None:
    """A sub-resource addressed through a parent it does not belong to is 404."""
    assert gate.discovery is not None
    writes = gate.config.allow_writes
    for op in gate.operations(writes=None if writes else False):
        names = re.findall(r"\{([^}]+)\}", op.path)
        if len(names) < 2 or (op.workspace_source == "path" and names[0] == "id"
                              and op.path.startswith("/v1/workspaces/")):
            continue
        # A record no link reached (its first parent had none): one under another parent.
        params = gate.discovery.ready(op) or through_parents(gate, op)
        if params is None:
            continue
        parent = names[0]
        current = params["path"][parent]
        other = _other_parent(gate, op.path[: op.path.index("{" + parent + "}") - 1], current)
        if other is None:
            continue
        body = patchable(gate, op) if op.body_schema is not None else None
        wrong = gate.call(op, path_params={**params["path"], parent: other},
                          params=query_for(op, params), body=body or None)
        gate.count("laws")
        if wrong.status != 404:
            fail(gate, "law_hierarchy", op,
                  f"{names[-1]}={params['path'][names[-1]]!r} addressed through {parent}="
                  f"{other!r} (not its parent) answered {wrong.status}, expected 404", wrong)


def _other_parent(gate: Gate, prefix: str, current: Any) -> Any:
    """Another record of the parent's kind: from the list at `prefix`, else from a list whose
    path ends with the same collection name (workflows are listed under their workspace)."""
    last = prefix.rsplit("/", 1)[-1]
    for op, params in lists(gate, selected=False):
        if op.path == prefix or op.path.endswith("/" + last):
            items, _, _ = walk(gate, op, params, {}, max_pages=1)
            for item in items:
                key = item_key(item)
                if key is not None and key != current:
                    return key
    return None
