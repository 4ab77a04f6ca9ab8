"""Calls: phone call records with their transcripts."""

from __future__ import annotations

from typing import Any

from ..context import Context
from . import operation
from ._common import get_resource, where_equal


@operation("listCalls")
def list_calls(ctx: Context) -> dict[str, Any]:
    partition = {"workspace_id": ctx.workspace_id}
    if ctx.query.get("contact_id") is not None:
        partition["contact_id"] = ctx.query["contact_id"]
    return ctx.page("calls", partition=partition, order=("started_at",),
                    descending=ctx.descending, where=where_equal(ctx, "direction"))


operation("getCall")(get_resource)
