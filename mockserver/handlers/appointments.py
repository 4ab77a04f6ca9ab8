"""Appointments held by the booking service."""

from __future__ import annotations

from typing import Any

from ..context import Context
from . import operation
from ._common import get_resource, where_equal


@operation("listAppointments")
def list_appointments(ctx: Context) -> dict[str, Any]:
    return ctx.page("appointments", partition={"workspace_id": ctx.workspace_id},
                    order=("start_at",), descending=ctx.descending,
                    where=where_equal(ctx, "status"))


operation("getAppointment")(get_resource)
