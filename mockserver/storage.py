"""The storage service the upload URLs point at (outside /v1): `PUT /__storage__/upload/{token}`.

The description says an upload URL takes a PUT of the raw file bytes and answers `{storageId}`.
The mock records the file's byte length, content type and workspace in table `uploads` (the
bytes themselves are not kept) so that ticket messages and notes can check the metadata they
are sent with. Errors use the API's `{error}` shape.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from starlette.requests import Request
from starlette.responses import JSONResponse

if TYPE_CHECKING:
    from .app import MockApp

__all__ = ["MAX_UPLOAD_BYTES", "upload"]

# Inferred: the description does not state a maximum upload size; 25 MiB.
MAX_UPLOAD_BYTES = 25 * 1024 * 1024


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


async def upload(request: Request) -> JSONResponse:
    """Store the PUT body as the file of a pending upload; answer `{"storageId": ...}`."""
    mock: MockApp = request.app.state.mock
    token = request.path_params["token"]
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_UPLOAD_BYTES:
            return _error(413, f"upload is larger than {MAX_UPLOAD_BYTES} bytes")
    content_type = (request.headers.get("content-type") or "application/octet-stream")
    content_type = content_type.split(";")[0].strip().lower() or "application/octet-stream"
    store = mock.store
    with store.lock:
        pending = store.get("uploads", token)
        if pending is None or pending.get("kind") != "upload_url":
            return _error(404, f"upload URL {token!r} not found")
        now = store.now()
        if now >= pending["expires_at"]:
            # Inferred: an expired signed URL is refused with 403, as object stores do.
            return _error(403, f"upload URL {token!r} expired at {pending['expires_at']}")
        if pending.get("storage_id") is not None:
            # Inferred: an upload URL takes one file.
            return _error(409, f"upload URL {token!r} was already used")
        storage_id = store.new_id("st")
        store.insert("uploads", {
            "id": storage_id,
            "kind": "file",
            "workspace_id": pending["workspace_id"],
            "size": size,
            "content_type": content_type,
            "created_at": now,
        })
        store.update("uploads", token, {"storage_id": storage_id})
    return JSONResponse({"storageId": storage_id})
