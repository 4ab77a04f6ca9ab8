"""Insights: the conversation automation rate."""

from __future__ import annotations

from typing import Any

from ..clock import MIN_MS, format_timestamp, parse_timestamp
from ..context import Context, progression_view
from ..errors import BadRequest
from . import operation
from ._common import data

DEFAULT_PERIOD_MS = 30 * 24 * 3_600_000


@operation("getConversationAutomationRate")
def get_conversation_automation_rate(ctx: Context) -> dict[str, Any]:
    ws = ctx.workspace_id
    end = ctx.query.get("end") or ctx.store.clock.now()
    # The parameters arrive normalised (validation.py). The default window starts no earlier
    # than the first instant a timestamp can show (DECISIONS B18): `end` may be in year 1.
    start = ctx.query.get("start") or format_timestamp(
        max(parse_timestamp(end) - DEFAULT_PERIOD_MS, MIN_MS))
    if parse_timestamp(start) >= parse_timestamp(end):
        raise BadRequest(f"query parameter 'start': {start} must be before end ({end})")

    def inside(at: str | None) -> bool:
        return at is not None and start <= at < end

    # Inferred rule: a conversation counts when it has activity in [start, end): it was created,
    # got a message, or had an agent run then. It is automated when an agent run in the period
    # sent an autopilot reply and no human (a message whose sender has a user_id) replied in
    # the period.
    mine = [c for c in ctx.store.all("conversations") if c["workspace_id"] == ws]
    conversations = {c["id"] for c in mine}
    active = {c["id"] for c in mine if inside(c["created_at"])}
    human: set[str] = set()
    for message in ctx.store.all("messages"):
        if message["workspace_id"] != ws or not inside(message["created_at"]):
            continue
        active.add(message["conversation_id"])
        if message["direction"] == "outbound" and message["sender"].get("user_id"):
            human.add(message["conversation_id"])
    autopilot: set[str] = set()
    now = progression_view(ctx.store, "agent_runs")  # runs count as they complete
    for run in ctx.store.all("agent_runs"):
        if run["workspace_id"] != ws or not inside(run["created_at"]):
            continue
        run = now(run)
        active.add(run["conversation_id"])
        if run.get("autopilot_sent"):
            autopilot.add(run["conversation_id"])
    total = active & conversations
    automated = (total & autopilot) - human
    return data(ctx, {
        "workspace_id": ws,
        "period_start": start,
        "period_end": end,
        "total_conversations": len(total),
        "automated_conversations": len(automated),
        "automation_rate": len(automated) / len(total) if total else 0,
    })
