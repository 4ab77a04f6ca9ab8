"""Client code under test: a polling sync that picks up guest messages, and an escalation desk.

`InboxSync.poll` follows the documented polling rule: conversations sorted by
`last_message_at` (desc), with the highest `updated_at` seen carried as the lower bound
(`updated_since`); for each conversation returned, the inbound messages not seen before.
`EscalationDesk` takes each new pending escalation, assigns it to the operator on duty and
resolves it once answered.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import httpx


@dataclass
class InboxSync:
    client: httpx.Client
    workspace_id: str
    since: str | None = None  # the highest updated_at seen
    seen: set[str] = field(default_factory=set)

    def poll(self) -> list[dict[str, Any]]:
        """The guest messages written since the last poll, oldest first."""
        params: dict[str, Any] = {"workspace_id": self.workspace_id, "limit": 100,
                                  "sort_by": "last_message_at", "order": "desc"}
        if self.since is not None:
            params["updated_since"] = self.since
        answer = self.client.get("/v1/conversations", params=params)
        answer.raise_for_status()
        conversations = answer.json()["data"]
        found: list[dict[str, Any]] = []
        for conversation in conversations:
            messages = self.client.get(f"/v1/conversations/{conversation['id']}/messages",
                                       params={"workspace_id": self.workspace_id, "limit": 100})
            messages.raise_for_status()
            for message in messages.json()["data"]:
                if message["direction"] == "inbound" and message["id"] not in self.seen:
                    self.seen.add(message["id"])
                    found.append(message)
        if conversations:
            newest = max(c["updated_at"] for c in conversations)
            self.since = max(self.since or newest, newest)
        return sorted(found, key=lambda m: (m["created_at"], m["id"]))


@dataclass
class EscalationDesk:
    client: httpx.Client
    workspace_id: str
    operator_id: str
    handled: set[str] = field(default_factory=set)

    def new_pending(self) -> list[dict[str, Any]]:
        answer = self.client.get("/v1/escalations", params={
            "workspace_id": self.workspace_id, "status": "pending", "limit": 100})
        answer.raise_for_status()
        return [e for e in answer.json()["data"] if e["id"] not in self.handled]

    def take(self, escalation_id: str) -> dict[str, Any]:
        answer = self.client.post(f"/v1/escalations/{escalation_id}/assign",
                                  params={"workspace_id": self.workspace_id},
                                  json={"assignee_id": self.operator_id})
        answer.raise_for_status()
        self.handled.add(escalation_id)
        taken: dict[str, Any] = answer.json()["data"]
        return taken

    def resolve(self, escalation_id: str) -> dict[str, Any]:
        answer = self.client.post(f"/v1/escalations/{escalation_id}/resolve",
                                  params={"workspace_id": self.workspace_id},
                                  json={"status": "resolved"})
        answer.raise_for_status()
        resolved: dict[str, Any] = answer.json()["data"]
        return resolved
