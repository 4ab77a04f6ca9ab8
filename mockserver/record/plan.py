"""What to read to fill each table: the list operation, the detail read of each record, the
scoped lists under it, and the internal fields the loader needs that no answer carries
(a role's or workflow's `_workspace_id`, a user's `_workspace_ids`).

Tables with no document schema (`deleted_agents`, `uploads`) are the mock's own and are not
recorded; `conversation_summaries` is filled from the conversation detail, agents'
`_tool_states` from `listAgentTools`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["CHILDREN", "DETAIL", "ROOTS", "Source", "detail_path"]


@dataclass(frozen=True)
class Source:
    """A list (or single) read filling `table`; `scope`: how it is addressed."""

    op: str
    table: str
    scope: str = "query"  # query: ?workspace_id=; path: /workspaces/{id}; global; parent
    query: tuple[tuple[str, str], ...] = ()
    internal_ws: str | None = None  # internal field set to the workspace id
    single: bool = False  # the answer's data is one record, not a list


# Read once per recorded workspace, in this order (parents before what points at them).
ROOTS: tuple[Source, ...] = (
    Source("listWorkspaceRoles", "roles", scope="path", internal_ws="_workspace_id"),
    Source("listWorkspaceUsers", "users", scope="path"),
    Source("listWorkspaceSenders", "senders", scope="path"),
    Source("listWhatsappTemplates", "whatsapp_templates", scope="path"),
    Source("listVerificationRules", "verification_rules", scope="path"),
    Source("getWorkspaceSettings", "workspace_settings", scope="path",
           internal_ws="_workspace_id", single=True),
    Source("listToolCatalogue", "builtin_tools"),
    Source("listSkills", "skills"),
    Source("listCustomTools", "custom_tools"),
    Source("listAgents", "agents"),
    Source("listContacts", "contacts"),
    Source("listConversations", "conversations"),
    Source("listTickets", "tickets"),
    Source("listConversationTags", "conversation_tags"),
    Source("listKnowledgeNodes", "kb_nodes", query=(("include_body", "true"),)),
    Source("listEscalations", "escalations"),
    Source("listCalls", "calls"),
    Source("listReservations", "reservations"),
    Source("listAirbnbTransactions", "airbnb_transactions"),
    Source("listAppointments", "appointments"),
    Source("listHelpdeskTickets", "helpdesk_tickets"),
    Source("listWorkflowFolders", "workflow_folders", scope="path"),
    Source("listWorkflows", "workflows", scope="path", query=(("all_versions", "true"),),
           internal_ws="_workspace_id"),
)

# Each record of a table also read by id where the list shows less (or other fields).
DETAIL: dict[str, str] = {
    "agents": "getAgent",
    "agent_runs": "getAgentRun",  # the detail fields (session_id, response, tool_trace ...)
    "skills": "getSkill",
    "custom_tools": "getCustomTool",
    "escalations": "getEscalation",
    "kb_nodes": "getKnowledgeNode",
    "tickets": "getTicket",
    "contacts": "getContact",
    "conversations": "getConversation",
    "conversation_tags": "getConversationTag",
    "calls": "getCall",
    "reservations": "getReservation",
    "appointments": "getAppointment",
    "helpdesk_tickets": "getHelpdeskTicket",
}

# Lists scoped to a record: (operation, table filled, internal field copied from the workspace).
CHILDREN: dict[str, tuple[Source, ...]] = {
    "agents": (Source("listAgentRuns", "agent_runs", scope="parent"),
               Source("listAgentConnections", "agent_connections", scope="parent"),
               Source("listAgentTools", "agents", scope="parent")),
    "conversations": (Source("listConversationMessages", "messages", scope="parent"),),
    "tickets": (Source("listTicketNotes", "ticket_notes", scope="parent"),),
    "workflows": (Source("listWorkflowExecutions", "workflow_executions", scope="parent",
                         internal_ws="_workspace_id"),),
    "workflow_executions": (Source("listWorkflowExecutionEvents", "workflow_events",
                                   scope="parent"),),
}


def detail_path(table: str, key: str, record: dict[str, Any]) -> dict[str, str]:
    """The path parameters of the detail read (DETAIL) of the record `key` of `table`: a
    run is read through its agent (`/v1/agents/{id}/runs/{run_id}`), the rest by their id."""
    if table == "agent_runs":
        return {"id": str(record.get("agent_id")), "run_id": key}
    return {"id": key, "node_id": key}
