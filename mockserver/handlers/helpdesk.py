"""Helpdesk tickets mirrored from external helpdesk integrations."""

from __future__ import annotations

from typing import Any

from ..context import Context
from . import operation
from ._common import get_resource, where_equal


@operation("listHelpdeskTickets")
def list_helpdesk_tickets(ctx: Context) -> dict[str, Any]:
    return ctx.page("helpdesk_tickets", partition={"workspace_id": ctx.workspace_id},
                    order=("last_external_update_at",), descending=ctx.descending,
                    where=where_equal(ctx, "status", "channel", "connection_id"))


operation("getHelpdeskTicket")(get_resource)
