"""Read-your-writes after a PATCH: every PATCH of the document, sent to a record discovery
reached (or one under a parent no link reached), shows each patched field on the next read;
its refusals leave no trace (`law_failed_writes.py`). Patched fields are put back. Only with
--allow-writes."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .bodies import patchable
from .law_failed_writes import check_refused
from .law_walk import query_for
from .records import read_record, target_key, through_parents
from .registry import declare, fail, routine

if TYPE_CHECKING:
    from .gate import Gate

__all__ = ["check_patches"]

declare("law_read_your_writes", family="laws", option="laws", writes=True, proofs=[
    ("after every PATCH the next read shows each patched field",
     "PATCH not visible on the next read"),
    ("a record a create answered with reads back through its GET, with the fields sent",
     "created record not kept")])


@routine("write-laws", "read-your-writes", order=1)
def check_patches(gate: Gate) -> None:
    assert gate.discovery is not None
    for op in gate.operations(writes=True):
        if op.method != "PATCH":
            continue
        params = gate.discovery.ready(op) or through_parents(gate, op)
        if params is None:
            gate.note(f"laws: read-your-writes and failed-write check skipped for "
                      f"{op.operation_id} (no record reached)")
            continue
        patch = patchable(gate, op)
        # Failed writes leave no trace: one valid field beside one of the wrong type, and a
        # valid field for a workspace the token cannot access.
        check_refused(gate, op, params, "a PATCH", dict(list(patch.items())[:1]))
        if not patch:
            gate.note(f"laws: read-your-writes skipped for {op.operation_id} "
                      "(no plain field to patch)")
            continue
        key = target_key(op, params)
        before = read_record(gate, op, params, key)
        if not isinstance(before, dict):
            gate.note(f"laws: read-your-writes skipped for {op.operation_id} (no read shows it)")
            continue
        query = query_for(op, params)
        patched = gate.call(op, path_params=params.get("path"), params=query, body=patch)
        gate.count("laws")
        if patched.status != op.success_status:
            gate.refused(op, patched, f"laws: read-your-writes on {op.operation_id}")
            continue
        after = read_record(gate, op, params, key)
        stale = {n: (after or {}).get(n) for n, v in patch.items()
                 if not isinstance(after, dict) or after.get(n) != v}
        if stale:
            fail(gate, "law_read_your_writes", op,
                  f"the next read does not show the patched field(s) {sorted(stale)} "
                  f"(reads {stale})", patched)
        restore = {n: before[n] for n in patch if isinstance(before.get(n), str)}
        if restore:
            gate.call(op, path_params=params.get("path"), params=query, body=restore)
