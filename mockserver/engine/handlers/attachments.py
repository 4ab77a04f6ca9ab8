"""Attachments: upload URLs, and the check that ties an uploaded file to a message or note.

An upload goes through two records of table `uploads`:
- `POST /v1/attachments/upload-url` stores a pending upload keyed by a fresh upload token
  (`kind: "upload_url"`) and answers `{base_url}/__storage__/upload/{token}`;
- the PUT of the raw bytes to that address (`mockserver.standalone.storage.upload`, outside /v1) stores
  the file keyed by its storageId (`kind: "file"`, with `size` and `content_type`).
Ticket messages and notes then name the storageId as `attachment_id`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..clock import format_timestamp, parse_timestamp
from ..context import Context
from ..errors import BadRequest
from . import operation

__all__ = ["UPLOAD_URL_TTL_MS", "file_url", "resolve_attachments"]

# Inferred: the description does not say how long an upload URL lives; one hour.
UPLOAD_URL_TTL_MS = 3_600_000


@operation("createAttachmentUploadUrl")
def create_attachment_upload_url(ctx: Context) -> dict[str, Any]:
    now = ctx.now()
    # Unpredictable without the server's secret, and bound to the session and workspace:
    # nobody else fills this URL first (DECISIONS H2).
    store = ctx.store
    token = ctx.services.storage.sealed_id(
        "up", f"{store.scope}\x00{ctx.workspace_id}\x00{store.new_id('up')}")
    expires_at = format_timestamp(parse_timestamp(now) + UPLOAD_URL_TTL_MS)
    ctx.store.insert("uploads", {
        "id": token,
        "kind": "upload_url",
        "workspace_id": ctx.workspace_id,
        "created_at": now,
        "expires_at": expires_at,
        "storage_id": None,
    })
    base = ctx.base_url
    return {"data": {"upload_url": f"{base}/__storage__/upload/{token}", "expires_at": expires_at}}


def file_url(ctx: Context, storage_id: str) -> str:
    """Where an uploaded file is addressed in message and note attachments: a capability
    URL, signed with the server's secret over the session, the workspace and the id (a
    download without it needs a bearer token of the file's workspace)."""
    signature = ctx.services.storage.signature(ctx.store.scope, str(ctx.workspace_id),
                                               storage_id)
    return f"{ctx.base_url}/__storage__/files/{storage_id}?signature={signature}"


def resolve_attachments(ctx: Context, items: Sequence[dict[str, Any]] | None) -> list[dict[str, Any]]:
    """The `[{url, content_type, name}]` of the attachments of a message or note body.

    Each `attachment_id` must be the storageId of a file uploaded for the request's workspace,
    and the size and content type sent must be the ones recorded at upload (400 otherwise).
    """
    resolved = []
    for i, item in enumerate(items or ()):
        at = f"body field 'attachments/{i}"
        stored = ctx.store.get("uploads", item["attachment_id"])
        if (stored is None or stored.get("kind") != "file"
                or stored.get("workspace_id") != ctx.workspace_id):
            raise BadRequest(
                f"{at}/attachment_id': {item['attachment_id']!r} is not the storageId of a file "
                f"uploaded for workspace {ctx.workspace_id!r}"
            )
        if item["size"] != stored["size"]:
            raise BadRequest(
                f"{at}/size': {item['size']} does not match the uploaded file's "
                f"{stored['size']} bytes"
            )
        # Inferred: content types compare case-insensitively, without parameters (the upload's
        # `; charset=...` is dropped when it is recorded).
        if item["content_type"].lower() != stored["content_type"]:
            raise BadRequest(
                f"{at}/content_type': {item['content_type']!r} does not match the uploaded "
                f"file's {stored['content_type']!r}"
            )
        resolved.append({"url": file_url(ctx, stored["id"]),
                         "content_type": stored["content_type"], "name": item["filename"]})
    return resolved
