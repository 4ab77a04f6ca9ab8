"""The standalone server: the ASGI application that sends `/v1...` to the
engine's pipeline (MockApp) and mounts the control API, the docs and the
storage routes beside it."""

from __future__ import annotations

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from ..engine.app import MockApp
from ..engine.config import Config
from ..engine.errors import (
    ApiError,
    BadRequest,
    MethodNotAllowed,
    NotFound,
    PayloadTooLarge,
)
from ..engine.exchange import Scanned, header, json_headers, scan_headers
from ..engine.responses import error_body, error_response
from ..engine.sessions import SESSION_PREFIX, split_session_path
from .guard import allowed_host_names, check_browser, may_create_sessions
from .storage import MAX_UPLOAD_BYTES

__all__ = ["Application", "create_app"]


class Application:
    """The served ASGI application. API requests (/v1...) go straight into the pipeline, with
    no middleware stack in between; the control API, docs and storage go through Starlette."""

    def __init__(self, mock: MockApp, starlette: Starlette) -> None:
        self.mock = mock
        self.starlette = starlette
        self.state = starlette.state
        self.allowed_hosts = allowed_host_names(mock.config)  # guard.py
        # With a control token, only its holder creates sessions on use (DECISIONS H17).
        config = mock.config
        self.gated_creation = bool(config.sessions_on_use and config.control_token)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            # A session named by the path prefix (stripped here) or the header.
            path = scope["path"]
            name = None
            scanned: Scanned | None = None
            if path.startswith(SESSION_PREFIX):
                found = split_session_path(path)
                if found is not None:
                    name, path = found
                    scope["path"] = path or "/"
                    scope["mock.prefix"] = f"{SESSION_PREFIX}{name}"
            else:  # the pass that also reads what the pipeline needs (handed to it)
                scanned = scan_headers(scope)
                name = scanned[3]
            if name is not None:
                try:
                    create = not self.gated_creation or may_create_sessions(
                        self.mock.config, scope)
                    state = self.mock.sessions.resolve_on_loop(name, create)
                    if state is None:  # a look-up in Redis: off the event loop
                        state = await self.mock.state.off_loop(
                            self.mock.sessions.resolve, name, create, scope=scope)
                    scope["mock.state"] = state
                except ApiError as error:
                    body = error_body(error)
                    await send({"type": "http.response.start", "status": error.status_code,
                                "headers": json_headers(body)})
                    await send({"type": "http.response.body", "body": body})
                    return
            if path.startswith("/v1"):
                await self.mock.serve(scope, receive, send, scanned)
                return
            if not path.startswith("/__storage__/"):  # capability URLs: not a browser's page
                try:  # the Host it was reached by, a browser's write from another site
                    check_browser(self.mock.config, self.allowed_hosts, scope)
                except ApiError as error:
                    await _refuse(send, error)
                    return
            # The other routes' bodies (control API, storage) refused on their declared size
            # before a byte is read; what is streamed past it, by the routes as they read.
            limit = (MAX_UPLOAD_BYTES if path.startswith("/__storage__/upload/")
                     else self.mock.config.max_body_bytes)
            declared = header(scope, b"content-length")
            if declared is not None and declared.isdigit() and int(declared) > limit:
                body = error_body(PayloadTooLarge(f"request body is larger than {limit} bytes"))
                await send({"type": "http.response.start", "status": 413,
                            "headers": json_headers(body)})
                await send({"type": "http.response.body", "body": body})
                return
        elif scope["type"] == "websocket":  # no route speaks it (DECISIONS H22)
            await _refuse_websocket(scope, receive, send)
            return
        elif scope["type"] != "lifespan":
            return  # an ASGI scope this server does not know: nothing to answer it with
        await self.starlette(scope, receive, send)


async def _refuse(send: Send, error: ApiError) -> None:
    body = error_body(error)
    await send({"type": "http.response.start", "status": error.status_code,
                "headers": json_headers(body, error.headers)})
    await send({"type": "http.response.body", "body": body})


async def _refuse_websocket(scope: Scope, receive: Receive, send: Send) -> None:
    """A WebSocket upgrade: 400 `{"error"}` as an HTTP denial response where the server
    supports one (uvicorn does), else the handshake closed (the server answers 403)."""
    message = await receive()
    if message["type"] != "websocket.connect":
        return
    if "websocket.http.response" in (scope.get("extensions") or {}):
        body = error_body(BadRequest(
            "header 'Upgrade': this server does not speak WebSocket (HTTP only)"))
        await send({"type": "websocket.http.response.start", "status": 400,
                    "headers": json_headers(body)})
        await send({"type": "websocket.http.response.body", "body": body})
        return
    await send({"type": "websocket.close", "code": 1003})


def create_app(config: Config | None = None, *, mock: MockApp | None = None) -> Application:
    """The Starlette application serving one mock (built from `config` unless given):
    the API under /v1, the control API under /__mock__/, /docs and /openapi.json."""
    from . import storage
    from .control import control_routes
    from .docs import docs_routes

    mock = mock or MockApp(config)

    async def not_found(request: Request, exc: Exception) -> Response:
        return error_response(NotFound(f"No such path: {request.url.path}"))

    async def not_allowed(request: Request, exc: Exception) -> Response:
        return error_response(MethodNotAllowed(
            f"Method {request.method} is not allowed on {request.url.path}"))

    routes = [*control_routes(mock), *docs_routes(mock),
              Route("/__storage__/upload/{token}", storage.upload, methods=["PUT"]),
              Route("/__storage__/files/{storage_id}", storage.download, methods=["GET"])]
    async def api_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, ApiError)
        return error_response(exc)  # e.g. 503 from shared state, in the storage routes

    app = Starlette(routes=routes, exception_handlers={404: not_found, 405: not_allowed,
                                                       ApiError: api_error})
    app.state.mock = mock
    # Every other path goes through the pipeline too (it answers 404 naming the path).
    app.router.default = mock
    return Application(mock, app)
