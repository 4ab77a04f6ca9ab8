"""Chat escalations: listing, assignment to a workspace user, and the review transition."""

from __future__ import annotations

from typing import Any

from ..context import Context
from ..errors import BadRequest
from . import operation
from ._common import author, data, full_name, is_member

__all__: list[str] = []


@operation("assignEscalation")
def assign_escalation(ctx: Context) -> dict[str, Any]:
    escalation = ctx.resource
    assert escalation is not None
    assignee_id = ctx.body["assignee_id"]
    user = ctx.store.get("users", assignee_id)
    if user is None or not is_member(ctx, assignee_id, escalation["workspace_id"]):
        raise BadRequest(f"body field 'assignee_id': {assignee_id!r} is not a user of "
                         f"workspace {escalation['workspace_id']!r}")
    # Inferred: assignment is allowed in every status (a reviewed escalation can still be
    # handed to someone for follow-up) and does not change the status; re-assigning replaces.
    escalation = ctx.store.update("escalations", escalation["id"], {"assignee": {
        "id": user["id"], "name": full_name(user), "email": user["email"],
        "picture_url": user.get("picture_url"),
    }})
    return data(ctx, escalation)


@operation("resolveEscalation")
def resolve_escalation(ctx: Context) -> dict[str, Any]:
    escalation = ctx.resource
    assert escalation is not None
    status = ctx.body["status"]  # an omitted body or status: the document's default
    if escalation["status"] != "pending":
        # Inferred: reviewed, resolved and dismissed are terminal; only pending moves (the
        # description shows no other source state).
        raise BadRequest(f"body field 'status': escalation {escalation['id']!r} is already "
                         f"{escalation['status']}; only a pending escalation can be resolved")
    escalation = ctx.store.update("escalations", escalation["id"], {
        "status": status,
        "reviewed_at": ctx.now(),
        "reviewed_by": author(ctx),  # the calling token's user
    })
    return data(ctx, escalation)
