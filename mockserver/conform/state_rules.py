"""State rules of the description that no schema can express (only with --allow-writes).

- a write is visible on the next read (PATCH a skill's description, then GET it);
- a knowledge-node scope change (entity_ids) must be sent alone: with another field it is 400
  and changes nothing; alone it applies;
- a custom tool's version moves exactly when its code changes;
- a ticket closes only when resolved (close new/pending -> 400; resolve then close -> closed,
  closed_at set);
- resolving an escalation records the reviewer (reviewed_at, reviewed_by, the status asked).

Each rule works on a record discovery found and puts back what it changed where the API allows
(a closed ticket and a resolved escalation stay so: both are final states).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .registry import Skip, declare, fail, routine

if TYPE_CHECKING:
    from .gate import Gate
    from .violations import Exchange

__all__ = ["custom_tool_version", "escalation_reviewer", "kb_scope_alone",
           "skill_write_visible", "ticket_close_only_resolved"]

MARKER = "conformance gate marker"


def _rule(name: str, what: str, defect: str, *more: tuple[str, str]) -> None:
    declare(name, family="state-rules", option="state", writes=True,
            proofs=[(what, defect), *more])


_rule("write_visible", "a PATCHed skill description is visible",
      "write not visible on the next read")
_rule("kb_scope_alone", "knowledge-node `entity_ids` alone is applied", "entity_ids alone ignored",
      ("knowledge-node `entity_ids` with another field → 400, nothing changes",
       "entity_ids with another field accepted"))
_rule("custom_tool_version", "a custom tool's version moves only with its code",
      "version bumped on a description change")
_rule("ticket_close_only_resolved", "only a resolved ticket closes", "a new ticket can be closed")
_rule("escalation_reviewer", "a resolved escalation records its reviewer",
      "escalation resolved without its reviewer")


def _data(exchange: Exchange) -> dict[str, Any]:
    body = exchange.json()
    data = body.get("data") if isinstance(body, dict) else None
    return data if isinstance(data, dict) else {}


def _call(gate: Gate, operation_id: str, path: dict[str, Any] | None = None,
          query: dict[str, Any] | None = None, body: Any = None) -> Exchange:
    return gate.call(gate.doc.op(operation_id), params=query, path_params=path, body=body)


def _selected(gate: Gate, *operation_ids: str) -> None:
    for operation_id in operation_ids:
        if not gate.select(gate.doc.op(operation_id)):
            raise Skip(f"{operation_id} is not selected")


def _first(gate: Gate, operation_id: str, query: dict[str, Any],
           accept: Callable[[dict[str, Any]], bool] = lambda item: True) -> dict[str, Any]:
    exchange = _call(gate, operation_id, query={"workspace_id": gate.workspace, "limit": 100, **query})
    body = exchange.json()
    items = body.get("data") if isinstance(body, dict) and exchange.status == 200 else None
    for item in items or []:
        if isinstance(item, dict) and accept(item):
            return item
    raise Skip(f"{operation_id} {query or ''} listed nothing to work on")


@routine("state", "skill_write_visible", order=1)
def skill_write_visible(gate: Gate) -> None:
    _selected(gate, "updateSkill", "getSkill")
    skill = _first(gate, "listSkills", {})
    path = {"id": skill["id"]}
    original = skill.get("description")
    patched = _call(gate, "updateSkill", path, body={"description": MARKER})
    if patched.status != 200:
        fail(gate, "write_visible", "updateSkill", f"PATCH answered {patched.status}", patched)
        return
    read = _call(gate, "getSkill", path)
    if _data(read).get("description") != MARKER:
        fail(gate, "write_visible", "updateSkill",
              f"a PATCHed description is not visible on the next GET "
              f"(got {_data(read).get('description')!r})", read)
    if isinstance(original, str):
        _call(gate, "updateSkill", path, body={"description": original})


@routine("state", "kb_scope_alone", order=2)
def kb_scope_alone(gate: Gate) -> None:
    _selected(gate, "updateKnowledgeNode", "getKnowledgeNode")
    node = _first(gate, "listKnowledgeNodes", {}, lambda item: item.get("is_directory") is False)
    path = {"node_id": node["id"]}
    query = {"workspace_id": gate.workspace}
    before = _call(gate, "getKnowledgeNode", path).json()
    scope = ["conform-entity-1"]
    mixed = _call(gate, "updateKnowledgeNode", path, query,
                  {"entity_ids": scope, "title": f"{MARKER} title"})
    if mixed.status != 400:
        fail(gate, "kb_scope_alone", "updateKnowledgeNode",
              f"entity_ids sent with another field answered {mixed.status}, expected 400", mixed)
    after = _call(gate, "getKnowledgeNode", path)
    if after.json() != before:
        fail(gate, "kb_scope_alone", "updateKnowledgeNode",
              "a refused scope change (entity_ids with another field) changed the node", after)
    alone = _call(gate, "updateKnowledgeNode", path, query, {"entity_ids": scope})
    read = _call(gate, "getKnowledgeNode", path)
    if alone.status != 200 or _data(read).get("entity_ids") != scope:
        fail(gate, "kb_scope_alone", "updateKnowledgeNode",
              f"entity_ids sent alone answered {alone.status} and the node reads "
              f"entity_ids={_data(read).get('entity_ids')!r}, expected {scope!r}", alone)
    original = (before or {}).get("data", {}).get("entity_ids") if isinstance(before, dict) else None
    if isinstance(original, list):
        _call(gate, "updateKnowledgeNode", path, query, {"entity_ids": original})


@routine("state", "custom_tool_version", order=3)
def custom_tool_version(gate: Gate) -> None:
    _selected(gate, "updateCustomTool", "getCustomTool")
    listed = _first(gate, "listCustomTools", {})
    path = {"id": listed["id"]}
    tool = _data(_call(gate, "getCustomTool", path))
    version, code, description = tool.get("version"), tool.get("code"), tool.get("description")
    if not isinstance(version, int | float) or not isinstance(code, str):
        raise Skip("the custom tool has no numeric version or no code")
    described = _call(gate, "updateCustomTool", path, body={"description": f"{MARKER}"})
    if described.status != 200 or _data(described).get("version") != version:
        fail(gate, "custom_tool_version", "updateCustomTool",
              f"a description change moved the version from {version!r} to "
              f"{_data(described).get('version')!r} (status {described.status}); only a code "
              "change moves it", described)
    comment = "// conform" if tool.get("language") == "javascript" else "# conform"
    recoded = _call(gate, "updateCustomTool", path, body={"code": f"{code}\n{comment}\n"})
    if recoded.status != 200 or _data(recoded).get("version") != version + 1:
        fail(gate, "custom_tool_version", "updateCustomTool",
              f"a code change moved the version from {version!r} to "
              f"{_data(recoded).get('version')!r} (status {recoded.status}), expected "
              f"{version + 1!r}", recoded)
    restore: dict[str, Any] = {"code": code}
    if isinstance(description, str):
        restore["description"] = description
    _call(gate, "updateCustomTool", path, body=restore)


@routine("state", "ticket_close_only_resolved", order=4)
def ticket_close_only_resolved(gate: Gate) -> None:
    _selected(gate, "closeTicket", "resolveTicket", "getTicket")
    # The states are the document's `x-mock-transition`, as the mock's handlers read them.
    close, resolve = gate.doc.op("closeTicket").transition, gate.doc.op("resolveTicket").transition
    if close is None or resolve is None:
        raise Skip("the document declares no ticket transition")
    ticket = None
    for status in (s for s in resolve.sources if not close.allows(s)):
        try:
            ticket = _first(gate, "listTickets", {"status": status}, _has_status(status))
            break
        except Skip:
            continue
    if ticket is None:
        raise Skip("no new or pending ticket")
    path = {"id": ticket["id"]}
    early = _call(gate, "closeTicket", path)
    if early.status != 400:
        fail(gate, "ticket_close_only_resolved", "closeTicket",
              f"closing a {ticket['status']} ticket answered {early.status}, expected 400", early)
        return
    read = _call(gate, "getTicket", path)
    if _data(read).get("status") != ticket["status"]:
        fail(gate, "ticket_close_only_resolved", "closeTicket",
              f"a refused close changed the status to {_data(read).get('status')!r}", read)
    resolved = _call(gate, "resolveTicket", path)
    if resolved.status != 200 or _data(resolved).get(resolve.field) != resolve.target:
        fail(gate, "ticket_close_only_resolved", "resolveTicket",
              f"resolving answered {resolved.status} with status "
              f"{_data(resolved).get('status')!r}", resolved)
        return
    closed = _call(gate, "closeTicket", path)
    data = _data(closed)
    if closed.status != 200 or data.get(close.field) != close.target or not data.get("closed_at"):
        fail(gate, "ticket_close_only_resolved", "closeTicket",
              f"closing a resolved ticket answered {closed.status} with status "
              f"{data.get('status')!r} and closed_at {data.get('closed_at')!r}", closed)


def _has_status(status: str) -> Callable[[dict[str, Any]], bool]:
    return lambda item: item.get("status") == status


@routine("state", "escalation_reviewer", order=5)
def escalation_reviewer(gate: Gate) -> None:
    _selected(gate, "resolveEscalation")
    escalation = _first(gate, "listEscalations", {"status": "pending"},
                        lambda item: item.get("status") == "pending")
    path = {"id": escalation["id"]}
    resolved = _call(gate, "resolveEscalation", path, body={"status": "dismissed"})
    data = _data(resolved)
    missing = [name for name in ("reviewed_at", "reviewed_by") if not data.get(name)]
    if resolved.status != 200 or data.get("status") != "dismissed" or missing:
        fail(gate, "escalation_reviewer", "resolveEscalation",
              f"resolving with status 'dismissed' answered {resolved.status}, status "
              f"{data.get('status')!r}; not recorded: {missing or 'none'}", resolved)
