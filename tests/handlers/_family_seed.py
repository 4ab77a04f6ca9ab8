"""Records the family tests add on top of the default fixtures (workspaces and tokens come
from there). Every record a test inserts has an id of its own (prefix `t_`), so it never
collides with the dataset, and tests assert on what they inserted or created."""

from __future__ import annotations

from typing import Any

from mockserver.data.fixtures import insert_checked
from mockserver.engine.app import MockApp

HARBOR, ALPINE, DESERT = "ws_harborview", "ws_alpine", "ws_desert"
WRITE = "mock-write-token"
READ = "mock-read-token"
OTHER = "mock-other-token"
COLLEAGUE = "mock-colleague-token"
T0 = "2026-01-01T00:00:00.000Z"


def auth(token: str = WRITE) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def token_user_id(mock: MockApp, token: str) -> str:
    return next(p.user_id for p in mock.tokens if p.token == token)


def user(mock: MockApp, key: str, workspaces: list[str], email: str, first: str = "Test",
         last: str = "User") -> dict[str, Any]:
    record = {"id": key, "email": email, "first_name": first, "last_name": last,
              "role": "Member", "picture_url": None, "_workspace_ids": workspaces}
    insert_checked(mock.store, mock.spec, "users", record)
    return record


def model(mock: MockApp, model_string: str) -> dict[str, Any]:
    provider, name = model_string.split(":")
    record = {"model_string": model_string, "provider": provider, "name": name,
              "context_window_tokens": 128000}
    insert_checked(mock.store, mock.spec, "models", record)
    return record


def connection(mock: MockApp, key: str, workspace: str) -> dict[str, Any]:
    record = {"id": key, "workspace_id": workspace, "provider": "hostaway", "name": key,
              "status": "connected",
              "tools": [{"name": "get_listing", "description": "Reads a listing", "enabled": True}]}
    insert_checked(mock.store, mock.spec, "agent_connections", record)
    return record


def builtin_tool(mock: MockApp, key: str, name: str, enabled: bool,
                 connection_required: bool = False) -> dict[str, Any]:
    record = {"id": key, "name": name, "source": "builtin", "description": f"{name} tool",
              "enabled": enabled, "domain": "messaging", "tags": ["t"], "language": None,
              "connection_required": connection_required}
    insert_checked(mock.store, mock.spec, "builtin_tools", record)
    return record


def _thread(mock: MockApp, workspace: str) -> str:
    """A conversation of the workspace whose contact exists (the same id): what a run or an
    escalation may point at."""
    return next(c["id"] for c in mock.store.all("conversations")
                if c["workspace_id"] == workspace and mock.store.get("contacts", c["id"]))


def agent_run(mock: MockApp, key: str, agent_id: str, workspace: str, status: str,
              created_at: str) -> dict[str, Any]:
    thread = _thread(mock, workspace)
    record = {"id": key, "run_id": f"rn_{key}", "agent_id": agent_id, "workspace_id": workspace,
              "status": status, "disposition": "resolved", "disposition_reason": "answered",
              "autopilot_sent": True, "proposal_outcome": None, "contact_id": thread,
              "conversation_id": thread, "trigger_id": "", "error": None, "duration_ms": 10,
              "token_usage": {"input": 1, "output": 2}, "total_cost": 0.01,
              "trace_id": "0" * 32, "created_at": created_at,
              "completed_at": None if status in ("accepted", "running") else created_at,
              "session_id": f"sess_{key}", "trigger_event_id": f"te_{key}",
              "response": "Done." if status == "completed" else None,
              "reflection": "Answered." if status == "completed" else None,
              "tool_trace": []}
    insert_checked(mock.store, mock.spec, "agent_runs", record)
    return record


def escalation(mock: MockApp, key: str, workspace: str, status: str = "pending",
               created_at: str = T0) -> dict[str, Any]:
    reviewed = status != "pending"
    # What it points at: a run of the workspace (its agent, contact and conversation).
    run = next(r for r in mock.store.all("agent_runs")
               if r["workspace_id"] == workspace and r["contact_id"])
    record = {"id": key, "workspace_id": workspace, "type": "chat",
              "conversation_id": run["conversation_id"], "contact_id": run["contact_id"],
              "agent_run_id": run["id"], "agent_id": run["agent_id"],
              "disposition": "escalated", "disposition_reason": "needs a human",
              "status": status, "created_at": created_at,
              "reviewed_at": created_at if reviewed else None,
              "reviewed_by": ({"user_id": "t_us_x", "name": "X", "email": "x@example.com",
                               "picture_url": None} if reviewed else None),
              "assignee": None, "guest_message": "Is the pool open?"}
    insert_checked(mock.store, mock.spec, "escalations", record)
    return record
