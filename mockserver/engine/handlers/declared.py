"""Lists that only page a table, declared once; reads that only fetch the addressed resource,
taken from the document.

A list operation here is a `Listing`: which table, and which partition (the request's
workspace, or the addressed resource). Its order and filters are the document's: `x-order`
(the sort fields, and the direction when the operation documents no `order`) and `x-filter`
on each filter parameter (spec/DECISIONS.md F1, F3), so the order the gate checks is the
order the mock walks. What is sent is the records projected onto the operation's response
schema (`Operation.data_schema`).

Every GET operation with `x-mock-resource` and no handler of its own answers the addressed
resource (`handlers_from_document`): the document declares those.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...openapi.spec import Spec
from ..context import Context
from . import Handler, operation
from ._common import get_resource, where_filtered

__all__ = ["LISTS", "Listing", "handlers_from_document"]


@dataclass(frozen=True)
class Listing:
    table: str
    partition: str = "workspace_id"  # the record field that selects the records
    of: str = "workspace"  # workspace: the request's workspace; resource: the addressed one


# Which table each list pages and over what. How it is sorted and filtered is the document's
# (`x-order`, `x-filter`), read per request through `ctx.ordering()` and `where_filtered`.
LISTS: dict[str, Listing] = {
    "listSkills": Listing("skills"),
    "listCustomTools": Listing("custom_tools"),
    "listEscalations": Listing("escalations"),
    "listAgentRuns": Listing("agent_runs", partition="agent_id", of="resource"),
    "listVerificationRules": Listing("verification_rules"),
    # Users belong to several workspaces: the index partitions on the `_workspace_ids` list.
    "listWorkspaceUsers": Listing("users", partition="_workspace_ids"),
    "listConversationTags": Listing("conversation_tags"),
    "listAppointments": Listing("appointments"),
    "listContactAppointments": Listing("appointments", partition="contact_id", of="resource"),
    "listHelpdeskTickets": Listing("helpdesk_tickets"),
    "listContactHelpdeskTickets": Listing("helpdesk_tickets", partition="contact_id",
                                          of="resource"),
    "listReservations": Listing("reservations"),
    "listAirbnbTransactions": Listing("airbnb_transactions"),
    "listCalls": Listing("calls"),
    "listContactMessages": Listing("messages", partition="conversation_id", of="resource"),
    "listConversationMessages": Listing("messages", partition="conversation_id", of="resource"),
    "listTicketMessages": Listing("messages", partition="ticket_id", of="resource"),
    "listTicketNotes": Listing("ticket_notes", partition="ticket_id", of="resource"),
}


def list_handler(listing: Listing) -> Handler:
    """The handler paging `listing`'s table in the document's order, with its filters."""

    def handler(ctx: Context) -> dict[str, Any]:
        if listing.of == "resource":
            assert ctx.resource is not None
            scope = ctx.resource["id"]
        else:
            scope = ctx.workspace_id
        order, descending = ctx.ordering()
        return ctx.page(listing.table, partition={listing.partition: scope}, order=order,
                        descending=descending, where=where_filtered(ctx))

    handler.__name__ = f"list_{listing.table}"
    return handler


for _operation_id, _listing in LISTS.items():
    operation(_operation_id)(list_handler(_listing))


def handlers_from_document(spec: Spec, handlers: dict[str, Handler]) -> dict[str, Handler]:
    """`handlers` plus, for each GET operation of the document that addresses a resource
    (`x-mock-resource`) and has no handler of its own, the handler answering that resource."""
    found = dict(handlers)
    for op in spec.operations:
        if (op.operation_id not in found and op.method == "GET" and op.resource_table
                and op.data_schema is not None):
            found[op.operation_id] = get_resource
    return found
