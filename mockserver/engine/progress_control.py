"""What a test sets about progression (engine/progression.py), without HTTP: the session's
modes, guarded transitions, scripted outcomes. The control API (standalone/progression.py:
`/__mock__/progression`, `/__mock__/records/{table}/{id}/transition`, `/__mock__/scripts…`)
and the pytest plugin's in-process control (`mock_api.progression`, `mock_api.transition`,
`mock_api.script_agent`, `mock_api.script_workflow`) both call these. Each checks everything
first, then writes once (`MockState.write`: one replicated write): nothing is half-applied.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..data.fixtures import record_check
from .context import public
from .errors import ApiError, BadRequest, Conflict, NotFound
from .progression import (
    KINDS,
    MOCK_TABLE,
    SCRIPT_KINDS,
    TRANSITION_FIELDS,
    Refused,
    clock_log,
    modes_of,
    script_key,
    scripts_of,
    set_modes,
    transition,
    view,
)

if TYPE_CHECKING:
    from .app import MockApp
    from .state import MockState
    from .store import Store

__all__ = ["get_progression", "list_scripts", "set_progression", "set_script",
           "transition_record"]

# What each table's records are shown as (the API's schema of a single read).
SHOWN_AS = {"agent_runs": "AgentRunDetail", "workflow_executions": "WorkflowExecution",
            "messages": "Message", "kb_nodes": "KnowledgeNode"}
MAX_OUTCOMES = 1000  # per script


def _api_error(refused: Refused) -> ApiError:
    kind = {400: BadRequest, 404: NotFound, 409: Conflict}[refused.status]
    return kind(str(refused), reason=refused.reason)


def get_progression(state: MockState) -> dict[str, Any]:
    """`{"kinds": {table: {mode, running_after, done_after}}, "caused": [...]}` of the
    session: its modes, and what the clock caused (cron dispatches, with their cause)."""
    return {"kinds": modes_of(state.store), "caused": clock_log(state.store)}


def set_progression(state: MockState, body: Mapping[str, Any]) -> dict[str, Any]:
    """Set the modes the body names (`{"kinds": {table: {...}}}`); the others are kept."""
    kinds = body.get("kinds")
    if not isinstance(kinds, Mapping):
        raise BadRequest("body field 'kinds': an object of kinds "
                         f"({', '.join(KINDS)}) to their mode and durations")
    try:
        modes = state.write(lambda store: set_modes(store, kinds))
    except Refused as refused:
        raise _api_error(refused) from None
    return {"kinds": modes}


def shown(mock: MockApp, store: Store, table: str, record: Any) -> dict[str, Any]:
    """A progressing record as the API shows it now (its single read's schema)."""
    fields = mock.services.fields(SHOWN_AS[table])
    now = view(store, table, record)
    return {f: now[f] for f in fields if f in now}


def transition_record(mock: MockApp, state: MockState, table: str, key: str,
                      body: Mapping[str, Any]) -> dict[str, Any]:
    """Move a record as a test asks: `{"status": ..., "error": ..., other outcome fields}`.
    200 the record as the API now shows it; 404 no such table/record; 409 not allowed from
    its state (named); 400 a field the document would not allow (named)."""
    if table not in KINDS:
        raise NotFound(f"no progression for table {table!r}; tables: {', '.join(KINDS)}",
                       reason="unknown_table")
    if "status" not in body:
        raise BadRequest("body field 'status' is required: the state to move to")
    fields = {k: v for k, v in body.items() if k != "status"}
    for name in ("error", "error_summary"):
        if name in fields and not (fields[name] is None or isinstance(fields[name], str)):
            raise BadRequest(f"body field {name!r}: a string or null")
    if table == "agent_runs" and fields:
        _check_run_fields(mock, state.store, fields, "body field")


    def move(store: Store) -> dict[str, Any]:
        record = transition(store, table, key, body["status"], fields)
        return shown(mock, store, table, record)

    try:
        result: dict[str, Any] = mock.sessions.admit(state, lambda: state.write(move))
    except Refused as refused:
        raise _api_error(refused) from None
    return {"data": result}


def _check_run_fields(mock: MockApp, store: Store, fields: Mapping[str, Any],
                      where: str) -> None:
    """Outcome fields of a run checked against the document (AgentRunDetail), 400 naming
    the field."""
    allowed = set(TRANSITION_FIELDS["agent_runs"]) | {"status"}
    for name in fields:
        if name not in allowed:
            raise BadRequest(f"{where} {name!r}: not a field an outcome sets "
                             f"({', '.join(sorted(allowed))})")
    if "status" in fields and fields["status"] not in ("completed", "failed"):
        raise BadRequest(f"{where} 'status': an outcome ends completed or failed, not "
                         f"{fields['status']!r}")
    template = next(iter(store.all("agent_runs")), None)
    sample = {**(public(template) if template else {}), **fields}
    problem = record_check(mock.spec).schema_problem("agent_runs", sample)
    if problem is not None:
        raise BadRequest(f"{where}: {problem}")


def _check_outcome(mock: MockApp, store: Store, kind: str, index: int, outcome: Any) -> dict[
        str, Any]:
    where = f"body field 'outcomes/{index}'"
    if not isinstance(outcome, Mapping):
        raise BadRequest(f"{where}: an outcome is an object of the record's fields")
    if kind == "agents":
        _check_run_fields(mock, store, outcome, where)
        return {"status": "completed", **outcome}
    allowed = {"status", "error_summary"}
    for name in outcome:
        if name not in allowed:
            raise BadRequest(f"{where} {name!r}: a workflow outcome sets status, error_summary")
    status = outcome.get("status", "SUCCESS")
    if status not in ("SUCCESS", "FAILED", "CANCELLED"):
        raise BadRequest(f"{where} 'status': SUCCESS, FAILED or CANCELLED, not {status!r}")
    summary = outcome.get("error_summary")
    if summary is not None and not isinstance(summary, str):
        raise BadRequest(f"{where} 'error_summary': a string or null")
    return {**outcome, "status": status}


def set_script(mock: MockApp, state: MockState, kind: str, target: str,
               body: Mapping[str, Any]) -> dict[str, Any]:
    """Script the next dispatches of an agent or workflow (`{"outcomes": [...]}`, consumed in
    order; replaces an earlier script and its count). 404 unknown agent/workflow."""
    if kind not in SCRIPT_KINDS:
        raise NotFound(f"no scripts for {kind!r}; scripts: {', '.join(SCRIPT_KINDS)}")
    store = state.store
    table, noun = ("agents", "agent") if kind == "agents" else ("workflows", "workflow")
    if store.get(table, target) is None:
        raise NotFound(f"{noun} {target!r} not found")
    outcomes = body.get("outcomes")
    if not isinstance(outcomes, list):
        raise BadRequest("body field 'outcomes': a list of outcomes, consumed in order")
    if len(outcomes) > MAX_OUTCOMES:
        raise BadRequest(f"body field 'outcomes': at most {MAX_OUTCOMES} outcomes")
    checked = [_check_outcome(mock, store, kind, i, o) for i, o in enumerate(outcomes)]
    record = {"id": script_key(kind, target), "outcomes": checked, "used": 0}
    mock.sessions.admit(state, lambda: state.write(lambda s: s.insert(MOCK_TABLE, record)))
    return {"data": {"id": target, "outcomes": checked, "consumed": 0,
                     "remaining": len(checked)}}


def list_scripts(state: MockState) -> dict[str, Any]:
    """Every script, what was consumed and what missed."""
    return {"data": scripts_of(state.store)}
