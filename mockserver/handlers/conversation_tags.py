"""Conversation tags: labels, root topics and subtopics."""

from __future__ import annotations

from typing import Any

from ..context import Context
from . import operation
from ._common import get_resource, where_equal


@operation("listConversationTags")
def list_conversation_tags(ctx: Context) -> dict[str, Any]:
    # Inferred (document): sorted by name, ascending.
    return ctx.page("conversation_tags", partition={"workspace_id": ctx.workspace_id},
                    order=("name",), descending=False, where=where_equal(ctx, "kind"))


operation("getConversationTag")(get_resource)
