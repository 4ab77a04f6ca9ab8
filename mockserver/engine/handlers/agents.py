"""V2 chat agents: CRUD (soft delete), manual dispatch, tools, runs and connections.

Stored agents hold their triggers inline; `skills` is derived at read time from `skill_ids`
(each id that names an existing skill of the agent's workspace becomes an AgentSkillSummary).
Per-agent tool switches live in the internal `_tool_states` mapping (tool id or name → bool);
PATCH /v1/agents/{id}/tools writes them by tool id, and deleting a custom tool removes its own.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..context import Context
from ..errors import BadRequest, NotFound
from ..progression import new_run, timezone_problem, view
from ..store import Record
from . import operation

__all__: list[str] = []

# Omitted fields of a created agent have their defaults in the document (AgentCreate); the
# validator fills them in.


# -- rendering -------------------------------------------------------------------------------


def render_agent(ctx: Context, agent: Record) -> dict[str, Any]:
    """The agent as every read returns it: the record plus its derived skill summaries."""
    skills = []
    for skill_id in agent.get("skill_ids", ()):
        skill = ctx.store.get("skills", skill_id)
        if skill is not None and skill["workspace_id"] == agent["workspace_id"]:
            skills.append(ctx.shape(skill, "AgentSkillSummary"))
    return {**ctx.shape(agent), "skills": skills}  # the operation's Agent


# -- checks shared by create and patch ------------------------------------------------------


def _check_model(ctx: Context, model: str) -> None:
    if model != "default" and ctx.store.get("models", model) is None:
        raise BadRequest(f"body field 'model': {model!r} is not a supported model_string "
                         "(see GET /v1/models) nor 'default'")


def _existing_ids(ctx: Context, table: str, field: str, noun: str, workspace_id: str,
                  ids: Iterable[str]) -> list[str]:
    """`ids` without duplicates (first occurrence kept), each one a record of the workspace."""
    result: list[str] = []
    for key in ids:
        record = ctx.store.get(table, key)
        if record is None or record.get("workspace_id") != workspace_id:
            raise BadRequest(f"body field '{field}': {noun} {key!r} does not exist in "
                             f"workspace {workspace_id!r}")
        if key not in result:
            result.append(key)
    return result


def _guardrails(ctx: Context, inputs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    # Guardrail ids are optional on input and always present on output: generated when missing.
    return [{"id": g.get("id") or ctx.store.new_id("gr"), "title": g["title"],
             "knowledge": g["knowledge"]} for g in inputs]


def _triggers(ctx: Context, workspace_id: str, inputs: list[dict[str, Any]],
              now: str) -> list[dict[str, Any]]:
    # Trigger inputs carry no id: every write of `triggers` creates them afresh (they replace).
    return [{"id": ctx.store.new_id("tr"), "workspace_id": workspace_id, "name": t["name"],
             "description": t.get("description"), "type": t["type"],
             "config": t.get("config", {}), "enabled": t["enabled"],
             "created_at": now, "updated_at": now} for t in inputs]


def _checked_changes(ctx: Context, workspace_id: str, body: dict[str, Any],
                     now: str) -> dict[str, Any]:
    """The checked and normalised values of the model, skill, connection, guardrail and
    trigger fields present in `body`."""
    changes: dict[str, Any] = {}
    schedule = body.get("autopilot_schedule")
    if isinstance(schedule, dict) and "timezone" in schedule:
        # The schedule is read in its IANA timezone at the mock's clock (progression.py's
        # in_schedule): one that names no timezone is refused (spec/DECISIONS.md P17).
        problem = timezone_problem(schedule["timezone"])
        if problem is not None:
            raise BadRequest(f"body field 'autopilot_schedule.timezone': {problem}")
    if "model" in body:
        _check_model(ctx, body["model"])
        changes["model"] = body["model"]
    if "skill_ids" in body:
        changes["skill_ids"] = _existing_ids(ctx, "skills", "skill_ids", "skill", workspace_id,
                                             body["skill_ids"])
    if "connection_ids" in body:
        changes["connection_ids"] = _existing_ids(ctx, "agent_connections", "connection_ids",
                                                  "connection", workspace_id,
                                                  body["connection_ids"])
    if "guardrails" in body:
        changes["guardrails"] = _guardrails(ctx, body["guardrails"])
    if "triggers" in body:
        changes["triggers"] = _triggers(ctx, workspace_id, body["triggers"], now)
    return changes


# -- agents ---------------------------------------------------------------------------------


@operation("listAgents")
def list_agents(ctx: Context) -> dict[str, Any]:
    return ctx.page(render=lambda agent: render_agent(ctx, agent))


@operation("getAgent")
def get_agent(ctx: Context) -> dict[str, Any]:
    assert ctx.resource is not None
    return {"data": render_agent(ctx, ctx.resource)}


@operation("createAgent")
def create_agent(ctx: Context) -> dict[str, Any]:
    body: dict[str, Any] = ctx.body
    workspace_id = body["workspace_id"]
    now = ctx.now()
    record = {
        **body,  # every AgentCreate field, omitted ones at the document's defaults
        **_checked_changes(ctx, workspace_id, body, now),
        "id": ctx.new_id("agents"),
        "workspace_id": workspace_id,
        "version": "v2",  # documented: V2 chat agents are the only agents of the API
        "enabled": True,
        "created_at": now,
        "updated_at": now,
    }
    return {"data": render_agent(ctx, ctx.store.insert("agents", record))}


@operation("updateAgent")
def update_agent(ctx: Context) -> dict[str, Any]:
    agent = ctx.resource
    assert agent is not None
    body: dict[str, Any] = ctx.body
    now = ctx.now()
    # The validated body holds only AgentPatch fields; the checked ones are replaced by their
    # checked values. Documented: skill_ids and triggers, when sent, replace the old wholesale.
    changes = {**body, **_checked_changes(ctx, agent["workspace_id"], body, now)}
    changes["updated_at"] = now
    agent = ctx.store.update("agents", agent["id"], changes)
    return {"data": render_agent(ctx, agent)}


@operation("deleteAgent")
def delete_agent(ctx: Context) -> dict[str, Any]:
    agent = ctx.resource
    assert agent is not None
    # Soft delete (reference): the record moves to `deleted_agents`, detached from its
    # triggers; reads and lists answer as if it never existed (404, not listed). Its runs and
    # escalations keep pointing at it.
    ctx.store.delete("agents", agent["id"])
    ctx.store.insert("deleted_agents", {**agent, "triggers": [], "_deleted_at": ctx.now(),
                                        "_detached_triggers": agent.get("triggers", [])})
    return {"data": {"id": agent["id"], "deleted": True}}


@operation("runAgent")
def run_agent(ctx: Context) -> dict[str, Any]:
    agent = ctx.resource
    assert agent is not None
    body: dict[str, Any] = ctx.body or {}
    triggers = agent.get("triggers", [])
    trigger_id = body.get("trigger_id")
    if trigger_id is None:
        if not triggers:
            # Inferred: an agent without triggers has nothing to dispatch.
            raise BadRequest(f"body field 'trigger_id': agent {agent['id']!r} has no triggers "
                             "to dispatch")
        if len(triggers) > 1:
            ids = ", ".join(t["id"] for t in triggers)
            raise BadRequest(f"body field 'trigger_id' is required: agent {agent['id']!r} has "
                             f"{len(triggers)} triggers ({ids})")
        trigger = triggers[0]
    else:
        found = [t for t in triggers if t["id"] == trigger_id]
        if not found:
            raise BadRequest(f"body field 'trigger_id': {trigger_id!r} is not a trigger of "
                             f"agent {agent['id']!r}")
        trigger = found[0]
    if trigger["type"] == "message":
        # Reference: channel/message triggers are not supported by a manual dispatch; the
        # status (400 naming trigger_id, no run recorded) is inferred (spec/DECISIONS.md E22).
        raise BadRequest(f"body field 'trigger_id': trigger {trigger['id']!r} of agent "
                         f"{agent['id']!r} is a message trigger; channel/message triggers "
                         "cannot be dispatched manually (cron, webhook, workflow and event "
                         "triggers can)")
    # Inferred: a manual dispatch of a disabled agent, an agent in operation_mode inactive or
    # a disabled trigger is accepted (200) but not dispatched: `dispatched` is false, no run
    # is recorded and run_id is null. The mode governs whether the agent acts at all.
    if not (agent.get("enabled", True) and agent["operation_mode"] != "inactive"
            and trigger.get("enabled", True)):
        return {"data": {"dispatched": False, "trigger_id": trigger["id"],
                         "trigger_type": trigger["type"], "run_id": None}}
    payload = body.get("payload")
    if payload is None or trigger["type"] == "cron":
        payload = {}  # reference: defaults to {}; ignored for cron triggers
    context = payload if isinstance(payload, dict) else {}
    run = new_run(ctx.store, agent, trigger, payload,
                  contact_id=_string(context.get("contact_id")),
                  conversation_id=_string(context.get("conversation_id")
                                          or context.get("contact_id")))
    return {"data": {"dispatched": True, "trigger_id": trigger["id"],
                     "trigger_type": trigger["type"], "run_id": run["run_id"]}}


def _string(value: Any) -> str:
    return value if isinstance(value, str) else ""


# -- tools, runs, connections --------------------------------------------------------------


def _builtin_tools(ctx: Context) -> list[Record]:
    return sorted(ctx.store.all("builtin_tools"), key=lambda t: (t["name"], t["id"]))


@operation("listToolCatalogue")
def list_tool_catalogue(ctx: Context) -> dict[str, Any]:
    # Documented: each entry's `enabled` is the default a new agent inherits. Inferred order:
    # by name (the catalogue is global to the service, so the same for every workspace).
    return {"data": [ctx.shape(t) for t in _builtin_tools(ctx)]}


def _agent_tools(ctx: Context, agent: Record, source: str | None) -> list[dict[str, Any]]:
    """The tools the agent resolves (the operation's AgentTool), with its per-agent enabled
    state: the agent's `_tool_states` switch (by tool id, or by name), else the tool's default
    (a built-in's catalogue `enabled`, a custom tool's `enable_globally`)."""
    states: dict[str, bool] = agent.get("_tool_states") or {}

    def enabled(tool: Record, default: bool) -> bool:
        for key in (tool["id"], tool["name"]):
            if key in states:
                return bool(states[key])
        return default

    tools: list[dict[str, Any]] = []
    # Inferred order: built-in tools by name, then custom tools by name.
    if source in (None, "builtin"):
        tools += [{**ctx.shape(t), "enabled": enabled(t, t["enabled"])}
                  for t in _builtin_tools(ctx)]
    if source in (None, "custom"):
        custom = ctx.store.find("custom_tools",
                                lambda t: t["workspace_id"] == agent["workspace_id"])
        custom.sort(key=lambda t: (t["name"], t["id"]))
        tools += [{"id": t["id"], "name": t["name"], "source": "custom",
                   "description": t["description"],
                   "enabled": enabled(t, t["enable_globally"]),
                   "domain": None, "tags": [], "language": t["language"]} for t in custom]
    return tools


@operation("listAgentTools")
def list_agent_tools(ctx: Context) -> dict[str, Any]:
    agent = ctx.resource
    assert agent is not None
    return {"data": _agent_tools(ctx, agent, ctx.query.get("source"))}


@operation("setAgentTool")
def set_agent_tool(ctx: Context) -> dict[str, Any]:
    agent = ctx.resource
    assert agent is not None
    body: dict[str, Any] = ctx.body
    source, name = body["source"], body["tool_name"]
    found = [t for t in _agent_tools(ctx, agent, source) if t["name"] == name]
    if not found:
        # Inferred: a tool the agent cannot resolve is an invalid body field (400), as an
        # unknown skill id is on create (spec/DECISIONS.md E24).
        raise BadRequest(f"body field 'tool_name': agent {agent['id']!r} has no {source} tool "
                         f"named {name!r} (see GET /v1/agents/{agent['id']}/tools)")
    tool = found[0]
    # Reference: the (tool_name, source) pair identifies the tool; the switch is kept by the
    # tool's id, so a built-in and a custom tool of the same name never share one (an id's
    # switch is read before a name's).
    states = {**(agent.get("_tool_states") or {}), tool["id"]: body["enabled"]}
    ctx.store.update("agents", agent["id"], {"_tool_states": states})
    return {"data": {**tool, "enabled": body["enabled"]}}


@operation("getAgentRun")
def get_agent_run(ctx: Context) -> dict[str, Any]:
    agent = ctx.resource
    assert agent is not None
    run = ctx.require("agent_runs", ctx.path["run_id"], "agent run")
    if run["agent_id"] != agent["id"]:
        # Inferred: a run is addressed through its own agent only.
        raise NotFound(f"agent run {ctx.path['run_id']!r} not found for agent {agent['id']!r}")
    return {"data": ctx.shape(view(ctx.store, "agent_runs", run))}


@operation("listAgentConnections")
def list_agent_connections(ctx: Context) -> dict[str, Any]:
    agent = ctx.resource
    assert agent is not None
    found = [c for cid in agent.get("connection_ids", ())
             if (c := ctx.store.get("agent_connections", cid)) is not None]
    return {"data": [ctx.shape(c) for c in found]}
