"""Reservations synced from property-management integrations, and Airbnb transactions."""

from __future__ import annotations

from typing import Any

from ..context import Context
from . import operation
from ._common import get_resource, where_equal


@operation("listReservations")
def list_reservations(ctx: Context) -> dict[str, Any]:
    return ctx.page("reservations", partition={"workspace_id": ctx.workspace_id},
                    order=("arrival_date",), descending=ctx.descending,
                    where=where_equal(ctx, "status", "listing_id"))


operation("getReservation")(get_resource)


@operation("listAirbnbTransactions")
def list_airbnb_transactions(ctx: Context) -> dict[str, Any]:
    return ctx.page("airbnb_transactions", partition={"workspace_id": ctx.workspace_id},
                    order=("date",), descending=ctx.descending,
                    where=where_equal(ctx, "reservation_id", "type"))
