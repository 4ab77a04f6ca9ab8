"""Workspaces: the token's workspaces, their roles, users, senders, WhatsApp templates,
verification rules and settings. Every `/v1/workspaces/{id}/...` operation has its workspace
resolved (and access-checked) by the engine from the path."""

from __future__ import annotations

from typing import Any

from ..context import Context
from ..errors import NotFound
from ..store import Record
from . import operation

__all__: list[str] = []


@operation("listWorkspaces")
def list_workspaces(ctx: Context) -> dict[str, Any]:
    # Inferred order: by name, then id (the description gives none for this data-only list).
    found = [ws for ws_id in ctx.principal.workspace_ids
             if (ws := ctx.store.get("workspaces", ws_id)) is not None]
    found.sort(key=lambda ws: (ws["name"], ws["id"]))
    return {"data": [ctx.shape(ws) for ws in found]}


@operation("listWorkspaceRoles")
def list_workspace_roles(ctx: Context) -> dict[str, Any]:
    # Inferred order: the default role first, then by name.
    roles = ctx.store.find("roles", lambda r: r.get("_workspace_id") == ctx.workspace_id)
    roles.sort(key=lambda r: (not r["is_default"], r["name"], r["role_id"]))
    return {"data": [ctx.shape(r) for r in roles]}


@operation("searchWorkspaceUsers")
def search_workspace_users(ctx: Context) -> dict[str, Any]:
    needle = ctx.query["query"].casefold()

    def matches(user: Record) -> bool:
        return any(needle in (user.get(f) or "").casefold()
                   for f in ("first_name", "last_name", "email"))

    return ctx.page(where=matches)


def _all_of_workspace(ctx: Context, table: str) -> list[dict[str, Any]]:
    """Every record of `table` in the request's workspace, in the document's `x-order`,
    projected onto the operation's schema: a data-only list (no paging)."""
    order, descending = ctx.ordering()
    key = ctx.store.key_fields[table]
    found = ctx.store.find(table, lambda r: r["workspace_id"] == ctx.workspace_id)
    found.sort(key=lambda r: (*(r[f] for f in order), r[key]), reverse=descending)
    return [ctx.shape(r) for r in found]


@operation("listWorkspaceSenders")
def list_workspace_senders(ctx: Context) -> dict[str, Any]:
    # Reference: `{data}` only, every sender of the workspace (spec/DECISIONS.md A23).
    return {"data": _all_of_workspace(ctx, "senders")}


@operation("listWhatsappTemplates")
def list_whatsapp_templates(ctx: Context) -> dict[str, Any]:
    # Reference: `{data}` only, every template of the workspace (spec/DECISIONS.md A24).
    return {"data": _all_of_workspace(ctx, "whatsapp_templates")}


@operation("getVerificationRule")
def get_verification_rule(ctx: Context) -> dict[str, Any]:
    rule = ctx.require("verification_rules", ctx.path["rule_id"], "verification rule")
    return {"data": ctx.shape(rule)}


@operation("getWorkspaceSettings")
def get_workspace_settings(ctx: Context) -> dict[str, Any]:
    settings = ctx.store.get("workspace_settings", ctx.workspace_id or "")
    if settings is None:
        # Inferred: a workspace whose dataset holds no settings record answers 404.
        raise NotFound(f"settings of workspace {ctx.workspace_id!r} not found")
    return {"data": ctx.shape(settings)}
