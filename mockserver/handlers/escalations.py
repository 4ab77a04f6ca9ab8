"""Chat escalations: listing, assignment to a workspace user, and the review transition."""

from __future__ import annotations

from typing import Any

from ..context import Context
from ..errors import BadRequest
from ..store import Record
from . import operation
from ._common import get_resource

__all__: list[str] = []


def _full_name(user: Record) -> str:
    return " ".join(p for p in (user.get("first_name"), user.get("last_name")) if p)


@operation("listEscalations")
def list_escalations(ctx: Context) -> dict[str, Any]:
    status = ctx.query.get("status")
    return ctx.page("escalations", partition={"workspace_id": ctx.workspace_id},
                    order=("created_at",), descending=True,
                    where=(lambda e: e["status"] == status) if status else None,
                    render="Escalation")


operation("getEscalation")(get_resource("Escalation"))


@operation("assignEscalation")
def assign_escalation(ctx: Context) -> dict[str, Any]:
    escalation = ctx.resource
    assert escalation is not None
    assignee_id = ctx.body["assignee_id"]
    user = ctx.store.get("users", assignee_id)
    if user is None or escalation["workspace_id"] not in user.get("_workspace_ids", ()):
        raise BadRequest(f"body field 'assignee_id': {assignee_id!r} is not a user of "
                         f"workspace {escalation['workspace_id']!r}")
    # Inferred: assignment is allowed in every status (a reviewed escalation can still be
    # handed to someone for follow-up) and does not change the status; re-assigning replaces.
    escalation = ctx.store.update("escalations", escalation["id"], {"assignee": {
        "id": user["id"], "name": _full_name(user), "email": user["email"],
        "picture_url": user.get("picture_url"),
    }})
    return {"data": ctx.shape(escalation, "Escalation")}


@operation("resolveEscalation")
def resolve_escalation(ctx: Context) -> dict[str, Any]:
    escalation = ctx.resource
    assert escalation is not None
    status = (ctx.body or {}).get("status", "resolved")  # documented default
    if escalation["status"] != "pending":
        # Inferred: reviewed, resolved and dismissed are terminal; only pending moves (the
        # description shows no other source state).
        raise BadRequest(f"body field 'status': escalation {escalation['id']!r} is already "
                         f"{escalation['status']}; only a pending escalation can be resolved")
    user = ctx.user()
    escalation = ctx.store.update("escalations", escalation["id"], {
        "status": status,
        "reviewed_at": ctx.now(),
        "reviewed_by": {"user_id": user["id"], "name": _full_name(user),
                        "email": user.get("email", ""), "picture_url": user.get("picture_url")},
    })
    return {"data": ctx.shape(escalation, "Escalation")}
