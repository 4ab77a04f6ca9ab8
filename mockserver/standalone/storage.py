"""The storage service the upload URLs point at (outside /v1):

- `PUT /__storage__/upload/{token}` takes the raw bytes of a file and answers `{storageId}`
  (as the description says);
- `GET /__storage__/files/{storageId}` serves them back: the `url` of a message or note
  attachment points here.

The file's byte length, content type and workspace are recorded in table `uploads` (by
`MockState.accept_upload`: these routes only speak HTTP), so that ticket messages and notes can
check the metadata they are sent with. The bytes themselves are kept beside the store, bounded
in total (`mockserver.engine.storage.FileStore`), and dropped by reset() with the record.
Errors use the API's `{error}` shape.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from ..engine.app import MockApp
from ..engine.errors import ApiError, Forbidden, Unauthorized
from ..engine.responses import error_response, message_body

__all__ = ["MAX_UPLOAD_BYTES", "download", "upload"]

# Inferred: the description does not state a maximum upload size; 25 MiB.
MAX_UPLOAD_BYTES = 25 * 1024 * 1024


def _error(status: int, message: str) -> Response:
    return Response(message_body(message), status_code=status, media_type="application/json")


async def upload(request: Request) -> Response:
    """Store the PUT body as the file of a pending upload; answer `{"storageId": ...}`."""
    mock: MockApp = request.app.state.mock
    token = request.path_params["token"]
    size = 0
    chunks = []
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_UPLOAD_BYTES:
            return _error(413, f"upload is larger than {MAX_UPLOAD_BYTES} bytes")
        chunks.append(chunk)
    content_type = (request.headers.get("content-type") or "application/octet-stream")
    content_type = content_type.split(";")[0].strip().lower() or "application/octet-stream"
    state = mock.state_for(request.scope)
    try:
        mock.sessions.check_room(state, size)  # a session's files count to its memory cap
        content = b"".join(chunks)
        # in memory at once; a shared state's off the event loop (replication/); admitted on
        # what the sessions hold with it, the file and its records (else taken back, 507)
        storage_id = await state.off_loop(mock.sessions.admit, state, lambda: state.accept_upload(
            token, content, content_type, mock.services.storage), scope=request.scope)
    except ApiError as error:
        return error_response(error)
    return JSONResponse({"storageId": storage_id})


# What every file is served with (DECISIONS H14): a download, never a page of the mock's own
# origin (the control API is on it), whatever content type it was uploaded as.
INERT_HEADERS = {
    "Content-Disposition": "attachment",
    "X-Content-Type-Options": "nosniff",
    "Content-Security-Policy": "sandbox; default-src 'none'",
}


async def download(request: Request) -> Response:
    """The bytes of an uploaded file, with the content type recorded at upload, served inert
    (`INERT_HEADERS`).

    As an object store serves a private object: by its capability URL (the `url` the API
    hands out in attachments, signed with the server's secret over the session, the file's
    workspace and its id), or to a bearer token with access to the file's workspace. A token
    of another workspace is told nothing exists (404, as for a record of a workspace it cannot
    see); no credential at all is 401; a signature that is not this session's for this file,
    403 whether the file exists or not."""
    mock: MockApp = request.app.state.mock
    storage_id = request.path_params["storage_id"]
    state = mock.state_for(request.scope)
    signature = request.query_params.get("signature")
    authorization = request.headers.get("authorization")
    try:
        if signature is None:
            if authorization is None:
                raise Unauthorized("a file needs its signed url (as the API hands it out) or "
                                   "'Authorization: Bearer <token>' of its workspace")
            principal = state.tokens.authenticate(authorization)
        # what other workers changed first (replication/), off the event loop; nothing in memory
        await state.off_loop(state.sync, scope=request.scope)
        record = state.store.get("uploads", storage_id)
        if record is not None and record.get("kind") != "file":
            record = None
        if signature is not None:
            if record is None or not mock.services.storage.verify(
                    state.store.scope, str(record["workspace_id"]), storage_id, signature):
                raise Forbidden(f"query parameter 'signature': not the signature of file "
                                f"{storage_id!r} in this session (use the url the API "
                                f"handed out)")
        elif record is not None and record["workspace_id"] not in principal.workspace_ids:
            record = None
    except ApiError as error:
        return error_response(error)
    if record is None:
        return _error(404, f"file {storage_id!r} not found")
    content = state.files.get(storage_id)
    if content is None:
        return _error(404, f"file {storage_id!r}: its bytes are no longer kept (the mock keeps "
                           f"the last {state.files.limit} bytes of uploads)")
    return Response(content, media_type=record["content_type"], headers=INERT_HEADERS)
