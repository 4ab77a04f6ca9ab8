"""The store's tables: which document schema their records follow, their key, their id prefix,
and which fields point at other tables. Configuration only; the shapes live in the document.

Stored records are the API shape of their schema(s), plus internal fields whose names start
with `_` (never sent: responses are projected onto the schema's properties). `derived` fields
are required by the schema but computed at read time (an agent's `skills`), so fixtures and
the store do not hold them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["INTERNAL_FIELDS", "TABLES", "Kinds", "TableDef"]


@dataclass(frozen=True)
class Kinds:
    """A table whose records come in kinds the API treats apart (knowledge-base files and
    folders): which field tells them apart, and the fields only one kind may fill.

    `mock_api.add` copies a fixture record of the kind asked: the kind `field` names when it is
    given, else the kind whose own fields are given with content, else `default`; a field of
    another kind given with content is refused (a folder with a body is not a record the API
    would ever hold)."""

    field: str
    names: dict[object, str]  # the field's value -> the kind's name
    own: dict[str, tuple[str, ...]]  # kind -> fields only it may fill (non-empty)
    default: str

    def of(self, values: dict[str, object]) -> str:
        """The kind of a record made of these given values (ValueError when they mix)."""
        if self.field in values:
            given = values[self.field]
            kind = self.names.get(given) if isinstance(given, (str, int, float, bool)) else None
            if kind is None:
                raise ValueError(f"field '{self.field}': {values[self.field]!r} is not one of "
                                 f"{', '.join(map(repr, self.names))}")
        else:
            kind = next((k for k, fields in self.own.items()
                         if any(values.get(f) for f in fields)), self.default)
        for other, fields in self.own.items():
            filled = [f for f in fields if other != kind and values.get(f)]
            if filled:
                raise ValueError(f"field '{filled[0]}': only a {other} has one, and this "
                                 f"record is a {kind} ({self.field}="
                                 f"{next(v for v, k in self.names.items() if k == kind)!r})")
        return kind

    def value(self, kind: str) -> object:
        return next(v for v, k in self.names.items() if k == kind)


@dataclass(frozen=True)
class TableDef:
    name: str
    schemas: tuple[str, ...]  # component schemas the record validates against (projected)
    key: str = "id"
    prefix: str = ""
    workspace_field: str | None = "workspace_id"
    refs: dict[str, str] = field(default_factory=dict)  # field -> table its value is a key of
    derived: tuple[str, ...] = ()
    kinds: Kinds | None = None  # records of kinds the API treats apart (mock_api.add)


# The internal fields the engine reads, and the JSON shape each must have wherever a record
# carries it: fixtures, `mock_api.add` and `POST /__mock__/records` are refused (naming the
# field) a value the engine could not read (DECISIONS H28: `_workspace_ids: {"ws": 1}` was
# stored and every later read of the table answered 500). Other `_` fields stay free.
_ID: dict[str, object] = {"type": "string", "minLength": 1}
_IDS: dict[str, object] = {"type": "array", "items": _ID}
_TEXT: dict[str, object] = {"type": ["string", "null"]}
INTERNAL_FIELDS: dict[str, dict[str, object]] = {
    "_workspace_id": _ID,
    "_workspace_ids": _IDS,
    "_mention_user_ids": _IDS,
    "_rate_limit_per_minute": {"type": "integer", "minimum": 0},
    "_tool_states": {"type": "object", "additionalProperties": {"type": "boolean"}},
    "_sender_id": _TEXT,
    "_channel_node_id": _TEXT,
    "_subject": _TEXT,
    "_deleted_at": _TEXT,
    "_detached_triggers": {"type": "array"},
    # Progression (engine/progression.py): a record's start (epoch ms) and outcome, whether
    # robustness mode holds it, what caused it.
    "_progress": {"type": ["object", "null"], "additionalProperties": False, "properties": {
        "start": {"type": "integer", "minimum": -62135596800000, "maximum": 253402300799999},
        "held": {"type": "boolean"},
        "cause": {"type": "string"},
        "outcome": {"type": "object", "additionalProperties": False, "properties": {
            "status": {"type": "string"},
            "error": _TEXT, "error_summary": _TEXT, "response": _TEXT, "reflection": _TEXT,
            "proposal_outcome": _TEXT,
            "disposition": {"type": "string"}, "disposition_reason": {"type": "string"},
            "tool_trace": {"type": "array"},
            "token_usage": {"type": "object", "required": ["input", "output"],
                            "properties": {"input": {"type": "number", "minimum": 0},
                                           "output": {"type": "number", "minimum": 0}}},
            "duration_ms": {"type": "number", "minimum": 0},
            "total_cost": {"type": "number", "minimum": 0},
            "autopilot_sent": {"type": "boolean"}}}}},
}

_WS = {"workspace_id": "workspaces"}

TABLES: dict[str, TableDef] = {
    t.name: t
    for t in [
        TableDef("workspaces", ("Workspace",), prefix="ws", workspace_field="id"),
        TableDef("users", ("WorkspaceUser",), prefix="us", workspace_field=None),
        TableDef("roles", ("Role",), key="role_id", prefix="rl", workspace_field="_workspace_id",
                 refs={"_workspace_id": "workspaces"}),
        TableDef("senders", ("Sender",), refs=_WS),
        TableDef("whatsapp_templates", ("WhatsappTemplate",), key="content_sid", refs=_WS),
        TableDef("verification_rules", ("VerificationRule",), prefix="vr", refs=_WS),
        TableDef("workspace_settings", ("WorkspaceSettings",), key="_workspace_id",
                 workspace_field="_workspace_id", refs={"_workspace_id": "workspaces"}),
        TableDef("models", ("Model",), key="model_string", workspace_field=None),
        TableDef("builtin_tools", ("CatalogueTool",), prefix="bt", workspace_field=None),
        TableDef("agents", ("Agent",), prefix="ag", refs=_WS, derived=("skills",)),
        TableDef("deleted_agents", (), prefix="ag"),
        # A run as listed (AgentRun) and as read by id (AgentRunDetail: the list's fields and more).
        TableDef("agent_runs", ("AgentRun", "AgentRunDetail"), prefix="ar",
                 refs={**_WS, "agent_id": "agents", "contact_id": "contacts",
                       "conversation_id": "conversations"}),
        TableDef("agent_connections", ("AgentConnection",), prefix="cn", refs=_WS),
        TableDef("skills", ("Skill",), prefix="ks", refs=_WS),
        TableDef("custom_tools", ("CustomTool",), prefix="kg", refs=_WS),
        TableDef("escalations", ("Escalation",), prefix="es",
                 refs={**_WS, "contact_id": "contacts", "conversation_id": "conversations",
                       "agent_id": "agents", "agent_run_id": "agent_runs"}),
        TableDef("kb_nodes", ("KnowledgeNode",), refs={**_WS, "parent_id": "kb_nodes"},
                 kinds=Kinds("is_directory", {False: "file", True: "folder"},
                             {"file": ("body", "entity_ids")}, default="folder")),
        TableDef("contacts", ("Contact", "ContactListItem"), prefix="ph", refs=_WS),
        TableDef("conversations", ("Conversation",), prefix="ph",
                 refs={**_WS, "id": "contacts"}),
        TableDef("conversation_summaries", (), workspace_field=None,
                 refs={"id": "conversations"}),
        TableDef("messages", ("Message",), prefix="ms",
                 refs={**_WS, "conversation_id": "conversations", "ticket_id": "tickets"}),
        TableDef("tickets", ("Ticket",), prefix="xd",
                 refs={**_WS, "contact_id": "contacts", "conversation_id": "conversations"}),
        TableDef("ticket_notes", ("TicketNote",), prefix="nt",
                 refs={**_WS, "ticket_id": "tickets", "contact_id": "contacts"}),
        TableDef("conversation_tags", ("ConversationTag",), prefix="ct",
                 refs={**_WS, "parent_id": "conversation_tags"}),
        TableDef("calls", ("Call",), prefix="ce",
                 refs={**_WS, "contact_id": "contacts", "conversation_id": "conversations",
                       "ticket_id": "tickets"}),
        TableDef("reservations", ("Reservation",), prefix="rs",
                 refs={**_WS, "contact_id": "contacts"}),
        TableDef("airbnb_transactions", ("AirbnbTransaction",), prefix="at",
                 refs={**_WS, "reservation_id": "reservations"}),
        TableDef("appointments", ("Appointment",), prefix="ap",
                 refs={**_WS, "contact_id": "contacts"}),
        TableDef("helpdesk_tickets", ("HelpdeskTicket",), prefix="hd",
                 refs={**_WS, "contact_id": "contacts", "ticket_id": "tickets"}),
        TableDef("workflows", ("WorkflowSummary",), key="workflow_id", prefix="wf",
                 workspace_field="_workspace_id",
                 refs={"_workspace_id": "workspaces", "folder_id": "workflow_folders"}),
        TableDef("workflow_folders", ("WorkflowFolder",), prefix="wd", refs=_WS),
        TableDef("workflow_executions", ("WorkflowExecution",), key="execution_id", prefix="wx",
                 workspace_field="_workspace_id",
                 refs={"_workspace_id": "workspaces", "workflow_id": "workflows"}),
        TableDef("workflow_events", ("WorkflowExecutionEvent",), prefix="we",
                 workspace_field=None, refs={"execution_id": "workflow_executions"}),
        TableDef("uploads", (), prefix="st"),
    ]
}
