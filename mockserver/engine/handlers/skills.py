"""Skills: workspace agent skills, attachable to agents (optionally to all of them on create)."""

from __future__ import annotations

from typing import Any

from ..context import Context
from ..errors import BadRequest
from . import operation
from ._common import name_taken

__all__: list[str] = []


def _check_name_free(ctx: Context, workspace_id: str, name: str, own_id: str | None) -> None:
    # Inferred: a skill name (slug-like, e.g. booking-policy) is unique within its workspace.
    # A taken name is an invalid body field (400), as for custom tools (DECISIONS B8).
    taken = name_taken(ctx, "skills", workspace_id, name, own_id)
    if taken is not None:
        raise BadRequest(f"body field 'name': a skill named {name!r} already exists in "
                         f"workspace {workspace_id!r} ({taken['id']})")


@operation("createSkill")
def create_skill(ctx: Context) -> dict[str, Any]:
    body: dict[str, Any] = ctx.body
    workspace_id = body["workspace_id"]
    _check_name_free(ctx, workspace_id, body["name"], None)
    now = ctx.now()
    skill = ctx.store.insert("skills", {
        "id": ctx.new_id("skills"),
        "workspace_id": workspace_id,
        "name": body["name"],
        # Omitted fields take the document's defaults (the validator fills them in); an
        # omitted allowed_tools is stored as null: no tool restriction.
        "display_name": body["display_name"],
        "description": body["description"],
        "body": body["body"],
        "allowed_tools": body.get("allowed_tools"),
        "tags": body["tags"],
        "enabled": body["enabled"],
        "created_at": now,
        "updated_at": now,
    })
    # Reference: external callers opt in explicitly; true attaches the new skill to every
    # existing V2 agent of the workspace (soft-deleted agents are gone and do not get it); false
    # or omitted (the document's default) to none (spec/DECISIONS.md E4).
    if body["auto_assign_to_existing_v2_agents"]:
        for agent in ctx.store.find("agents", lambda a: a["workspace_id"] == workspace_id):
            ctx.store.update("agents", agent["id"], {
                "skill_ids": [*agent.get("skill_ids", []), skill["id"]], "updated_at": now})
    return {"data": ctx.shape(skill)}


@operation("updateSkill")
def update_skill(ctx: Context) -> dict[str, Any]:
    skill = ctx.resource
    assert skill is not None
    body: dict[str, Any] = ctx.body
    if "name" in body:
        _check_name_free(ctx, skill["workspace_id"], body["name"], skill["id"])
    # Only supplied fields change (the validated body holds only SkillPatch fields); an
    # explicit null clears display_name, allowed_tools, tags.
    changes = {**body, "updated_at": ctx.now()}
    skill = ctx.store.update("skills", skill["id"], changes)
    return {"data": ctx.shape(skill)}
