"""One successful call of every operation of the document, for the generated-client drives.

`CASES[operationId]` takes a `Seeds` (raw httpx calls on the test's mock session, to find or
make the records a call needs) and returns the `Call`: path and query parameters and the JSON
body. The drives (test_generated_python.py, test_generated_typescript.py) fail, naming it, for
an operation of the document that has no case here. Adding one is a few lines:

    "getThing": lambda s: Call(path={"id": s.first("/v1/things")["id"]}),

Each case makes what it destroys or moves (a deleted agent, a closed ticket) so that the cases
can run one after another on one session, in the document's order.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx

HARBOR = "ws_harborview"


@dataclass
class Call:
    """The parameters and body of one request (names as in the document)."""

    path: dict[str, str] = field(default_factory=dict)
    query: dict[str, Any] = field(default_factory=dict)
    body: Any = None


class Seeds:
    """Reads and writes a case makes before its call (on the same session, write token)."""

    def __init__(self, client: httpx.Client) -> None:
        self.client = client
        self._made = 0

    def get(self, path: str, **query: Any) -> Any:
        response = self.client.get(path, params=query)
        assert response.status_code == 200, (path, response.text)
        return response.json()["data"]

    def first(self, path: str, **query: Any) -> dict[str, Any]:
        """The first item of a list of the primary workspace."""
        if not path.startswith("/v1/workspaces/") and not path.startswith("/v1/agents/"):
            query.setdefault("workspace_id", HARBOR)
        items = self.get(path, **query)
        assert items, f"{path} {query}: nothing listed"
        return dict(items[0])

    def post(self, path: str, body: Any = None, **query: Any) -> Any:
        response = self.client.post(path, json=body, params=query)
        assert response.status_code in (200, 201), (path, response.text)
        return response.json()["data"]

    def unique(self, stem: str) -> str:
        self._made += 1
        return f"{stem}-{self._made}"

    # -- records a case makes ------------------------------------------------------------------

    def agent(self) -> dict[str, Any]:
        return dict(self.post("/v1/agents", {
            "workspace_id": HARBOR, "name": self.unique("Driver"),
            "triggers": [{"name": "Nightly", "type": "cron", "config": {"schedule": "0 3 * * *"}}],
        }))

    def skill(self) -> dict[str, Any]:
        return dict(self.post("/v1/skills", SKILL | {"name": self.unique("driven-skill")}))

    def custom_tool(self) -> dict[str, Any]:
        return dict(self.post("/v1/custom-tools", TOOL | {"name": self.unique("driven-tool")}))

    def node(self) -> dict[str, Any]:
        return dict(self.post("/v1/kb/nodes", {"title": self.unique("Driven page"),
                                               "body": "Check-in is at 3 pm."},
                              workspace_id=HARBOR))

    def ticket(self, status: str = "open") -> dict[str, Any]:
        return self.first("/v1/tickets", status=status)

    def resolved_ticket(self) -> dict[str, Any]:
        ticket = self.ticket()
        return dict(self.post(f"/v1/tickets/{ticket['id']}/resolve"))

    def contact(self) -> dict[str, Any]:
        return self.first("/v1/contacts")

    def escalation(self) -> dict[str, Any]:
        return self.first("/v1/escalations", status="pending")

    def user(self) -> dict[str, Any]:
        return self.first(f"/v1/workspaces/{HARBOR}/users")

    def workflow(self) -> dict[str, Any]:
        return self.first(f"/v1/workspaces/{HARBOR}/workflows")

    def execution(self) -> tuple[str, str]:
        for workflow in self.get(f"/v1/workspaces/{HARBOR}/workflows", limit=100):
            executions = self.get(f"/v1/workflows/{workflow['workflow_id']}/executions")
            if executions:
                return workflow["workflow_id"], executions[0]["execution_id"]
        raise AssertionError("no workflow of the fixtures has an execution")

    def note(self) -> tuple[str, str]:
        ticket = self.ticket()
        note = self.post(f"/v1/tickets/{ticket['id']}/notes", {"body": "Driven note"})
        return ticket["id"], note["id"]


SKILL = {"workspace_id": HARBOR, "name": "driven-skill", "description": "Late check-out policy",
         "body": "Late check-out is free until noon.", "auto_assign_to_existing_v2_agents": False}
TOOL = {"workspace_id": HARBOR, "name": "driven-tool", "description": "Adds two numbers",
        "language": "python", "code": "def main(a, b):\n    return {'sum': a + b}\n",
        "parameters": {"a": {"type": "number", "required": True, "description": "first"},
                       "b": {"type": "number", "required": True, "description": "second"}}}


def _ws(**query: Any) -> Callable[[Seeds], Call]:
    return lambda s: Call(query={"workspace_id": HARBOR, **query})


def _harbor(**query: Any) -> Callable[[Seeds], Call]:
    return lambda s: Call(path={"id": HARBOR}, query=query)


def _by_id(find: Callable[[Seeds], dict[str, Any]], key: str = "id", **query: Any
           ) -> Callable[[Seeds], Call]:
    return lambda s: Call(path={"id": find(s)[key]}, query=query)


def _first(path: str) -> Callable[[Seeds], dict[str, Any]]:
    return lambda s: s.first(path)


def _poll(s: Seeds) -> Call:
    # What a generated client does: the `updated_at` it parsed goes back as `updated_since`
    # (the Python client writes it with isoformat(): `…+00:00`).
    seen = s.first("/v1/conversations")
    return Call(query={"workspace_id": HARBOR, "updated_since": seen["updated_at"]})


def _contact_message(s: Seeds) -> Call:
    contact = s.get(f"/v1/contacts/{s.contact()['id']}")
    return Call(path={"id": contact["id"]},
                body={"channel_node_id": contact["channels"][0]["id"], "body": "Welcome!"})


def _execution_events(s: Seeds) -> Call:
    workflow_id, execution_id = s.execution()
    return Call(path={"id": workflow_id, "execution_id": execution_id})


def _note_update(s: Seeds) -> Call:
    ticket_id, note_id = s.note()
    return Call(path={"id": ticket_id, "note_id": note_id}, body={"body": "Edited note"})


def _move_workflow(s: Seeds) -> Call:
    folder = s.first(f"/v1/workspaces/{HARBOR}/workflow-folders")
    return Call(path={"id": s.workflow()["workflow_id"]}, body={"folder_id": folder["id"]})


def _run_agent(s: Seeds) -> Call:
    agent = s.agent()
    return Call(path={"id": agent["id"]}, body={"trigger_id": agent["triggers"][0]["id"]})


CASES: dict[str, Callable[[Seeds], Call]] = {
    # meta and workspaces
    "getApiIndex": lambda s: Call(),
    "listModels": lambda s: Call(),
    "listWorkspaces": lambda s: Call(),
    "listWorkspaceRoles": _harbor(),
    "listWorkspaceUsers": _harbor(),
    "searchWorkspaceUsers": _harbor(query="a"),
    "listWorkspaceSenders": _harbor(),
    "listWhatsappTemplates": _harbor(),
    "listVerificationRules": _harbor(),
    "getVerificationRule": lambda s: Call(path={
        "id": HARBOR, "rule_id": s.first(f"/v1/workspaces/{HARBOR}/verification-rules")["id"]}),
    "getWorkspaceSettings": _harbor(),
    # agents
    "listAgents": _ws(),
    "createAgent": lambda s: Call(body={"workspace_id": HARBOR, "name": "Night desk",
                                        "autopilot_schedule": None}),
    "listToolCatalogue": _ws(),
    "getAgent": _by_id(_first("/v1/agents")),
    "updateAgent": lambda s: Call(path={"id": s.agent()["id"]}, body={"autopilot_schedule": {
        "timezone": "Europe/Lisbon",
        "days": [{"day": "monday", "enabled": True,
                  "ranges": [{"start": "09:00 AM", "end": "05:00 PM"}]}]}}),
    "deleteAgent": _by_id(lambda s: s.agent()),
    "runAgent": _run_agent,
    "listAgentTools": _by_id(_first("/v1/agents")),
    "listAgentRuns": _by_id(_first("/v1/agents")),
    "getAgentRun": lambda s: Call(path={
        "id": "ag_harbor_concierge",
        "run_id": s.first("/v1/agents/ag_harbor_concierge/runs")["id"]}),
    "setAgentTool": lambda s: Call(path={"id": "ag_harbor_concierge"}, body={
        "tool_name": "schedule_cleaning", "source": "builtin", "enabled": True}),
    "listAgentConnections": _by_id(_first("/v1/agents")),
    # skills and custom tools
    "listSkills": _ws(),
    "createSkill": lambda s: Call(body=SKILL),
    "getSkill": _by_id(_first("/v1/skills")),
    "updateSkill": lambda s: Call(path={"id": s.skill()["id"]}, body={"enabled": False}),
    "listCustomTools": _ws(),
    "createCustomTool": lambda s: Call(body=TOOL),
    "listCustomToolRuntimes": lambda s: Call(),
    "getCustomTool": _by_id(_first("/v1/custom-tools")),
    "updateCustomTool": lambda s: Call(path={"id": s.custom_tool()["id"]},
                                       body={"description": "Adds two numbers, exactly"}),
    "runCustomTool": lambda s: Call(path={"id": s.custom_tool()["id"]},
                                    body={"parameters": {"a": 1, "b": 2}}),
    "deleteCustomTool": lambda s: Call(path={"id": s.custom_tool()["id"]}),
    # escalations
    "listEscalations": _ws(),
    "getEscalation": _by_id(_first("/v1/escalations")),
    "assignEscalation": lambda s: Call(path={"id": s.escalation()["id"]},
                                       body={"assignee_id": s.user()["id"]}),
    "resolveEscalation": _by_id(lambda s: s.escalation()),
    # knowledge base
    "listKnowledgeNodes": _ws(),
    "createKnowledgeNode": lambda s: Call(query={"workspace_id": HARBOR},
                                          body={"title": "Parking", "body": "Free on site."}),
    "searchKnowledgeNodes": lambda s: Call(query={"workspace_id": HARBOR},
                                           body={"filters": {"enabled": True}}),
    "searchKnowledgeBase": lambda s: Call(query={"workspace_id": HARBOR},
                                          body={"query": "check-in time"}),
    "getKnowledgeNode": lambda s: Call(path={"node_id": s.first("/v1/kb/nodes")["id"]}),
    "updateKnowledgeNode": lambda s: Call(path={"node_id": s.node()["id"]},
                                          query={"workspace_id": HARBOR}, body={"enabled": False}),
    "deleteKnowledgeNode": lambda s: Call(path={"node_id": s.node()["id"]}),
    # tickets
    "listTickets": _ws(),
    "searchTickets": _ws(query="check"),
    "getTicket": _by_id(lambda s: s.ticket()),
    "listTicketMessages": _by_id(lambda s: s.ticket()),
    "sendTicketMessage": lambda s: Call(path={"id": s.ticket()["id"]},
                                        body={"body": "We are on it."}),
    "listTicketNotes": _by_id(lambda s: s.ticket()),
    "createTicketNote": lambda s: Call(path={"id": s.ticket()["id"]}, body={"body": "Called"}),
    "updateTicketNote": _note_update,
    "resolveTicket": _by_id(lambda s: s.ticket()),
    "reopenTicket": _by_id(lambda s: s.resolved_ticket()),
    "closeTicket": _by_id(lambda s: s.resolved_ticket()),
    # contacts
    "listContactTickets": _by_id(lambda s: s.contact()),
    "listContacts": _ws(),
    "searchContacts": _ws(query="a"),
    "getContact": _by_id(lambda s: s.contact()),
    "listContactMessages": _by_id(lambda s: s.contact()),
    "sendContactMessage": _contact_message,
    "pauseContactAi": _by_id(lambda s: s.contact()),
    "resumeContactAi": _by_id(lambda s: s.contact()),
    "listContactReservations": _by_id(lambda s: s.contact()),
    "listContactHelpdeskTickets": _by_id(lambda s: s.contact()),
    "listContactAppointments": _by_id(lambda s: s.contact()),
    # conversations
    "listConversations": _poll,
    "searchConversations": _ws(query="a"),
    "getConversation": _by_id(_first("/v1/conversations")),
    "listConversationMessages": _by_id(_first("/v1/conversations")),
    "sendConversationMessage": lambda s: Call(path={"id": s.first("/v1/conversations")["id"]},
                                              body={"body": "Thanks for writing!"}),
    "listConversationTags": _ws(),
    "getConversationTag": _by_id(_first("/v1/conversation-tags")),
    # calls, bookings, helpdesk
    "listCalls": _ws(),
    "getCall": _by_id(_first("/v1/calls")),
    "listReservations": _ws(),
    "getReservation": _by_id(_first("/v1/reservations")),
    "listAirbnbTransactions": _ws(),
    "listAppointments": _ws(),
    "getAppointment": _by_id(_first("/v1/appointments")),
    "listHelpdeskTickets": _ws(),
    "getHelpdeskTicket": _by_id(_first("/v1/helpdesk-tickets")),
    # workflows
    "listWorkflows": _harbor(),
    "listWorkflowFolders": _harbor(),
    "listWorkflowExecutions": lambda s: Call(path={"id": s.execution()[0]},
                                             query={"started_after": "2020-01-01T00:00:00Z"}),
    "listWorkflowExecutionEvents": _execution_events,
    "moveWorkflowToFolder": _move_workflow,
    # attachments and insights
    "createAttachmentUploadUrl": lambda s: Call(body={"workspace_id": HARBOR}),
    "getConversationAutomationRate": _ws(end="2026-11-01T12:00:00+00:00"),
}
