"""What the document declares, answered without a handler of its own: lists that only page a
table, and reads that only fetch the addressed resource.

A list is declared by its operation's `x-mock-list` (`Operation.listing`): which table it
pages, and which partition (the request's workspace, or the resource the path addresses).
Its order and filters are the document's too: `x-order` (the sort fields, and the direction
when the operation documents no `order`) and `x-filter` on each filter parameter
(spec/DECISIONS.md F1, F3), so the order the gate checks is the order the mock walks. What is
sent is the records projected onto the operation's response schema (`Operation.data_schema`).

Every GET operation with `x-mock-resource` and no handler of its own answers the addressed
resource. A handler registered for an operation (`@operation`) is its behaviour and takes
precedence: the document declares the rest (`handlers_from_document`).
"""

from __future__ import annotations

from typing import Any

from ...openapi.spec import Listing, Spec
from ..context import Context
from . import Handler
from ._common import get_resource, where_filtered

__all__ = ["handlers_from_document", "list_handler"]


def list_handler(listing: Listing) -> Handler:
    """The handler paging `listing`'s table (`ctx.page` reads the declaration) in the
    document's order, with its filters."""

    def handler(ctx: Context) -> dict[str, Any]:
        return ctx.page(where=where_filtered(ctx))

    handler.__name__ = f"list_{listing.table}"
    return handler


def handlers_from_document(spec: Spec, handlers: dict[str, Handler]) -> dict[str, Handler]:
    """`handlers` plus, for each operation of the document without a handler of its own, the
    one its declaration makes: a list (`x-mock-list`) pages its table; a GET that addresses a
    resource (`x-mock-resource`) answers that resource."""
    found = dict(handlers)
    for op in spec.operations:
        if op.operation_id in found:
            continue
        if op.listing is not None:
            found[op.operation_id] = list_handler(op.listing)
        elif (op.method == "GET" and op.resource_table and op.data_schema is not None):
            found[op.operation_id] = get_resource
    return found
