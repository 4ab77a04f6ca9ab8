"""Lists that only page a table, declared once; reads that only fetch the addressed resource,
taken from the document.

A list operation here is a `Listing`: which table, which partition (the request's workspace, or
the addressed resource), the sort fields, the direction (fixed, or the request's `order`), and
query parameters that must equal the record's field of the same name. What is sent is the
records projected onto the operation's response schema (`Operation.data_schema`).

The vocabulary follows the document's `x-order` (`by`, `direction`) and `x-filter` (`field`)
extensions; tests/test_single_source.py checks each declaration against them where the document
carries them.

Every GET operation with `x-mock-resource` and no handler of its own answers the addressed
resource (`handlers_from_document`): the document declares those.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...openapi.spec import Spec
from ..context import Context
from . import Handler, operation
from ._common import get_resource, where_equal

__all__ = ["LISTS", "Listing", "handlers_from_document"]


@dataclass(frozen=True)
class Listing:
    table: str
    by: tuple[str, ...]
    direction: str | None = None  # asc | desc; None: the request's `order` parameter
    partition: str = "workspace_id"  # the record field that selects the records
    of: str = "workspace"  # workspace: the request's workspace; resource: the addressed one
    filters: tuple[str, ...] = ()  # query parameters equal to the field of the same name


_NEWEST = ("created_at",)

LISTS: dict[str, Listing] = {
    # Inferred orders throughout (the description gives none); newest first where records
    # are created over time, by name or address where they are reference data.
    "listSkills": Listing("skills", _NEWEST, "desc"),
    "listCustomTools": Listing("custom_tools", _NEWEST, "desc"),
    "listEscalations": Listing("escalations", _NEWEST, "desc", filters=("status",)),
    "listAgentRuns": Listing("agent_runs", _NEWEST, "desc", partition="agent_id", of="resource",
                             filters=("status",)),
    "listWhatsappTemplates": Listing("whatsapp_templates", _NEWEST, "desc"),
    "listVerificationRules": Listing("verification_rules", _NEWEST, "desc"),
    # Users belong to several workspaces: the index partitions on the `_workspace_ids` list.
    "listWorkspaceUsers": Listing("users", ("email",), "asc", partition="_workspace_ids"),
    # By sender id (`<kind>:<address>`), which groups senders by kind.
    "listWorkspaceSenders": Listing("senders", ("id",), "asc"),
    "listConversationTags": Listing("conversation_tags", ("name",), "asc", filters=("kind",)),
    "listAppointments": Listing("appointments", ("start_at",), filters=("status",)),
    "listContactAppointments": Listing("appointments", ("start_at",), partition="contact_id",
                                       of="resource", filters=("status",)),
    "listHelpdeskTickets": Listing("helpdesk_tickets", ("last_external_update_at",),
                                   filters=("status", "channel", "connection_id")),
    "listContactHelpdeskTickets": Listing("helpdesk_tickets", ("last_external_update_at",),
                                          partition="contact_id", of="resource",
                                          filters=("status", "channel", "connection_id")),
    "listReservations": Listing("reservations", ("arrival_date",),
                                filters=("status", "listing_id")),
    "listAirbnbTransactions": Listing("airbnb_transactions", ("date",),
                                      filters=("reservation_id", "type")),
    "listCalls": Listing("calls", ("started_at",), filters=("contact_id", "direction")),
    "listContactMessages": Listing("messages", ("created_at",), partition="conversation_id",
                                   of="resource"),
    "listConversationMessages": Listing("messages", ("created_at",),
                                        partition="conversation_id", of="resource"),
    "listTicketMessages": Listing("messages", ("created_at",), partition="ticket_id",
                                  of="resource"),
    "listTicketNotes": Listing("ticket_notes", ("created_at",), partition="ticket_id",
                               of="resource"),
}


def list_handler(listing: Listing) -> Handler:
    """The handler paging `listing`'s table."""

    def handler(ctx: Context) -> dict[str, Any]:
        if listing.of == "resource":
            assert ctx.resource is not None
            scope = ctx.resource["id"]
        else:
            scope = ctx.workspace_id
        descending = (listing.direction == "desc" if listing.direction is not None
                      else ctx.descending)
        return ctx.page(listing.table, partition={listing.partition: scope}, order=listing.by,
                        descending=descending, where=where_equal(ctx, *listing.filters))

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
