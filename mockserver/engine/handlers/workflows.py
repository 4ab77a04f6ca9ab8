"""Workflows: versioned summaries, folders, executions and their event timelines.

`{id}` of the workflow endpoints is one version's workflow_id; versions of a workflow share
its master_id and the newest carries is_latest.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..context import Context, progression_view
from ..errors import NotFound
from ..pagination import fingerprint, walk
from ..progression import events_of
from ..store import Record
from . import operation
from ._common import data, where_filtered

MAX_EVENTS = 10_000  # a moving execution's stored timeline, read whole (a handful)


@operation("listWorkflows")
def list_workflows(ctx: Context) -> dict[str, Any]:
    partition: dict[str, Any] = {"_workspace_id": ctx.workspace_id}
    if not ctx.query["all_versions"]:
        partition["is_latest"] = True
    return ctx.page("workflows", partition=partition)


@operation("listWorkflowFolders")
def list_workflow_folders(ctx: Context) -> dict[str, Any]:
    workflows = ctx.store.all("workflows")

    def render(folder: Record) -> dict[str, Any]:
        # Inferred: workflow_count is derived at read time (latest versions in the folder), so
        # it follows every move without bookkeeping.
        count = sum(1 for w in workflows if w.get("folder_id") == folder["id"] and w.get("is_latest"))
        return ctx.shape({**folder, "workflow_count": count})

    return ctx.page(render=render)


@operation("listWorkflowExecutions")
def list_workflow_executions(ctx: Context) -> dict[str, Any]:
    assert ctx.resource is not None
    tests: list[Callable[[Record], bool]] = []
    after = ctx.query.get("started_after")
    if after is not None:  # documented: inclusive
        tests.append(lambda x: x["started_at"] >= after)
    before = ctx.query.get("started_before")
    if before is not None:  # documented: exclusive
        tests.append(lambda x: x["started_at"] < before)
    return ctx.page("workflow_executions", partition={"workflow_id": ctx.resource["workflow_id"]},
                    where=where_filtered(ctx, *tests))


@operation("listWorkflowExecutionEvents")
def list_workflow_execution_events(ctx: Context) -> dict[str, Any]:
    workflow = ctx.resource
    assert workflow is not None
    execution_id = ctx.path["execution_id"]
    execution = ctx.store.get("workflow_executions", execution_id)
    if execution is None or execution["workflow_id"] != workflow["workflow_id"]:
        raise NotFound(f"execution {execution_id!r} not found for workflow "
                       f"{workflow['workflow_id']!r}")
    now_view = progression_view(ctx.store, "workflow_executions")
    if now_view(execution) is execution:  # settled: its stored timeline
        return ctx.page("workflow_events", partition={"execution_id": execution_id})
    # Still moving (progression.py): the stored events, then those its progress reached,
    # paged in sequence order (a timeline is a handful of events).
    index = ctx.store.index("workflow_events", ("execution_id",), ("sequence",))
    stored = walk(ctx.store, "workflow_events", index, (execution_id,), limit=MAX_EVENTS,
                  after=None, descending=False, where=None).items
    events = events_of(ctx.store, execution, stored)
    fp = fingerprint(ctx.operation.operation_id, ctx.path, ctx.query, None)
    cursor = ctx.query.get("cursor")
    after = ctx.services.cursors.decode(cursor, fp) if cursor else None
    if after is not None:  # the index's sort key: ((0, sequence), id)
        events = [e for e in events if ((0, e["sequence"]), e["id"]) > after]
    limit = ctx.query["limit"]
    page = events[:limit]
    more = len(events) > limit
    next_cursor = ctx.services.cursors.encode(
        fp, ((0, page[-1]["sequence"]), page[-1]["id"])) if more else None
    return {"data": [ctx.shape(e) for e in page], "next_cursor": next_cursor,
            "has_more": more}


@operation("moveWorkflowToFolder")
def move_workflow_to_folder(ctx: Context) -> dict[str, Any]:
    workflow = ctx.resource
    assert workflow is not None
    folder_id = ctx.body["folder_id"]  # null removes; "" is refused by the document (minLength 1)
    if folder_id is not None:
        folder = ctx.store.get("workflow_folders", folder_id)
        if folder is None or folder["workspace_id"] != ctx.workspace_id:
            raise NotFound(f"body field 'folder_id': folder {folder_id!r} not found in workspace "
                           f"{ctx.workspace_id!r}")
    # Inferred: folders group workflows, not versions, so every version (same master_id) moves;
    # updated_at moves on each version whose folder changes.
    master_id = workflow["master_id"]
    now = ctx.now()
    for version in ctx.store.find("workflows", lambda w: w["master_id"] == master_id
                                  and w["_workspace_id"] == ctx.workspace_id):
        if version.get("folder_id") != folder_id:
            ctx.store.update("workflows", version["workflow_id"],
                             {"folder_id": folder_id, "updated_at": now})
    moved = {"workflow_id": workflow["workflow_id"], "master_id": master_id, "folder_id": folder_id}
    return data(ctx, moved)
