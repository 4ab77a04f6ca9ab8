"""httpx transports that call the mock's ASGI application in-process (no socket).

`httpx.ASGITransport` is async-only; `SyncASGITransport` runs it on an anyio blocking portal
(one event-loop thread per transport, started on first use) so that code using a plain
`httpx.Client` can be pointed at the mock too. `DirectTransport` runs the app on the calling
thread's own event loop (`AsyncDirectTransport`: on the caller's loop) and hands the client
what the plugin's uvicorn server would have sent (what `mock_api.client()` and
`mock_api.async_client()` use: no socket, no HTTP parsing, no thread switch per request).
All turn an injected dropped connection into `httpx.RemoteProtocolError`, which is what a real
client sees when a server hangs up.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from email.utils import formatdate
from typing import Any

import httpx
from anyio.from_thread import BlockingPortal, start_blocking_portal

from ..engine.faults import ConnectionDropped

__all__ = ["AsyncASGITransport", "AsyncDirectTransport", "DirectTransport", "SyncASGITransport"]


class AsyncASGITransport(httpx.AsyncBaseTransport):
    def __init__(self, app: Any, *, raise_app_exceptions: bool = True) -> None:
        self._inner = httpx.ASGITransport(app=app, raise_app_exceptions=raise_app_exceptions)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        try:
            response = await self._inner.handle_async_request(request)
            await response.aread()
        except ConnectionDropped as exc:
            raise httpx.RemoteProtocolError(
                "Server disconnected without sending a complete response (injected fault)",
                request=request,
            ) from exc
        return response

    async def aclose(self) -> None:
        await self._inner.aclose()


class SyncASGITransport(httpx.BaseTransport):
    def __init__(self, app: Any, *, raise_app_exceptions: bool = True) -> None:
        self._async = AsyncASGITransport(app, raise_app_exceptions=raise_app_exceptions)
        self._stack = contextlib.ExitStack()
        self._portal: BlockingPortal | None = None
        self._lock = threading.Lock()

    def _get_portal(self) -> BlockingPortal:
        with self._lock:
            if self._portal is None:
                self._portal = self._stack.enter_context(start_blocking_portal())
            return self._portal

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        content = request.read()
        # A fresh request whose body stream is async-iterable (the sync one is not).
        inner = httpx.Request(request.method, request.url, headers=request.headers,
                              content=content, extensions=request.extensions)
        response = self._get_portal().call(self._async.handle_async_request, inner)
        return httpx.Response(response.status_code, headers=response.headers,
                              content=response.content, extensions=response.extensions,
                              request=request)

    def close(self) -> None:
        with self._lock:
            self._portal = None
            self._stack.close()


_DATE: list[Any] = [0, b""]


def _date_header() -> bytes:
    """The `date` header uvicorn sends (worked out once a second, as uvicorn does)."""
    now = int(time.time())
    if _DATE[0] != now:
        _DATE[:] = [now, formatdate(now, usegmt=True).encode()]
    return bytes(_DATE[1])


def _scope(request: httpx.Request, server: tuple[str, int]) -> dict[str, Any]:
    """The scope uvicorn would build for this request (header names in lower case, the path
    unquoted, the raw path and the query apart)."""
    url = request.url
    raw_path, _, query = url.raw_path.partition(b"?")
    return {
        "type": "http", "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": "1.1", "server": server, "client": ("127.0.0.1", 0),
        "scheme": "http", "method": request.method, "root_path": "",
        "path": url.path, "raw_path": raw_path, "query_string": query,
        "headers": [(name.lower(), value) for name, value in request.headers.raw],
        "state": {},
    }


async def _serve(app: Any, scope: dict[str, Any],
                 body: bytes) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
    """Status, headers and body of what uvicorn would send for this call of `app`: its
    `date` and `server` headers first, chunked when the app gives no length, no body for HEAD, its own 500 when the app answers nothing (or fails
    before answering); ConnectionDropped when the app fails half-way or drops on purpose
    (uvicorn closes the connection)."""
    received = False
    start: dict[str, Any] | None = None
    chunks: list[bytes] = []
    complete = False

    async def receive() -> dict[str, Any]:
        nonlocal received
        if received:
            return {"type": "http.disconnect"}
        received = True
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        nonlocal start, complete
        if message["type"] == "http.response.start":
            start = message
        elif message["type"] == "http.response.body":
            chunks.append(message.get("body", b""))
            complete = not message.get("more_body", False)

    head = scope["method"] == "HEAD"  # sent in full once its headers are
    try:
        await app(scope, receive, send)
    except ConnectionDropped:
        raise
    except Exception:  # uvicorn logs it; what the client gets is what was sent before
        pass
    if start is None:
        start, chunks, complete = _SERVER_ERROR, [b"Internal Server Error"], True
    if not complete and not head:  # uvicorn closes a half-sent response's connection
        raise ConnectionDropped()
    status = start["status"]
    headers = [(b"date", _date_header()), (b"server", b"uvicorn"), *start.get("headers", ())]
    if not head and status not in (204, 304) and not any(
            name.lower() in (b"content-length", b"transfer-encoding") for name, _ in headers):
        headers.append((b"transfer-encoding", b"chunked"))  # uvicorn streams it in chunks
    return status, headers, b"" if head else b"".join(chunks)


def _response(request: httpx.Request, task: asyncio.Future[Any]) -> httpx.Response:
    try:
        status, headers, content = task.result()
    except ConnectionDropped as exc:
        raise httpx.RemoteProtocolError(
            "Server disconnected without sending a complete response (injected fault)",
            request=request,
        ) from exc
    # A stream, not `content=`: httpx would add a Content-Length the server did not send.
    return httpx.Response(status, headers=headers, stream=httpx.ByteStream(content),
                          request=request, extensions={"http_version": b"HTTP/1.1"})


def _read_timeout(request: httpx.Request) -> float | None:
    timeout: float | None = (request.extensions.get("timeout") or {}).get("read")
    return timeout


class DirectTransport(httpx.BaseTransport):
    """A request to `origin` runs `app` on this thread's event loop (one per thread, made on
    first use and kept until `close`); the response is what uvicorn would send for it (the
    scope it would build, its `date` and `server` headers, its 500 when the app fails before
    answering, a closed connection, `RemoteProtocolError`, when it fails half-way). The
    client's read timeout holds as on a socket: past it `httpx.ReadTimeout`, and the request
    runs on (to its end at the next call, or at `drain`), as a server goes on with a request
    its client gave up on.

    Anything this cannot do as the socket would goes through `fallback` (a real HTTP
    transport): another origin, or a call from a thread whose event loop is running (code
    that blocks an async test's loop on a sync client; a loop cannot be run inside itself).
    """

    def __init__(self, app: Any, origin: httpx.URL, fallback: httpx.BaseTransport) -> None:
        self._app = app
        self._origin = (origin.scheme, origin.host, origin.port)
        self._server = (origin.host, origin.port or 80)
        self._fallback = fallback
        self._local = threading.local()
        self._loops: list[asyncio.AbstractEventLoop] = []
        self._lock = threading.Lock()

    def _loop(self) -> asyncio.AbstractEventLoop:
        loop: asyncio.AbstractEventLoop | None = getattr(self._local, "loop", None)
        if loop is None or loop.is_closed():
            loop = self._local.loop = asyncio.new_event_loop()
            with self._lock:
                self._loops.append(loop)
        return loop

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        url = request.url
        if (url.scheme, url.host, url.port) != self._origin or _loop_running():
            return self._fallback.handle_request(request)
        body = request.read()
        loop = self._loop()
        task = loop.create_task(_serve(self._app, _scope(request, self._server), body))
        timeout = _read_timeout(request)
        if timeout is None:
            loop.run_until_complete(task)
        else:
            loop.run_until_complete(asyncio.wait((task,), timeout=timeout))
            if not task.done():
                raise httpx.ReadTimeout("timed out", request=request)
        return _response(request, task)

    def drain(self, timeout: float = 2.0) -> None:
        """Let requests given up on by their clients (a read timeout) run to their end."""
        loop = getattr(self._local, "loop", None)
        if loop is None or loop.is_closed() or _loop_running():
            return
        pending = asyncio.all_tasks(loop)
        if pending:
            loop.run_until_complete(asyncio.wait(pending, timeout=timeout))

    def close(self) -> None:
        with self._lock:
            loops, self._loops = self._loops, []
        for loop in loops:
            if not loop.is_running():
                loop.close()
        self._fallback.close()


class AsyncDirectTransport(httpx.AsyncBaseTransport):
    """`DirectTransport` for async clients: a request to `origin` runs `app` as a task of the
    caller's event loop (asyncio; another async library goes through `fallback`). Past the
    client's read timeout: `httpx.ReadTimeout`, and the task runs on while the loop does."""

    def __init__(self, app: Any, origin: httpx.URL, fallback: httpx.AsyncBaseTransport) -> None:
        self._app = app
        self._origin = (origin.scheme, origin.host, origin.port)
        self._server = (origin.host, origin.port or 80)
        self._fallback = fallback

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        url = request.url
        if (url.scheme, url.host, url.port) != self._origin or not _loop_running():  # trio
            return await self._fallback.handle_async_request(request)
        body = await request.aread()
        task = asyncio.ensure_future(_serve(self._app, _scope(request, self._server), body))
        await asyncio.wait((task,), timeout=_read_timeout(request))
        if not task.done():
            raise httpx.ReadTimeout("timed out", request=request)
        return _response(request, task)

    async def aclose(self) -> None:
        await self._fallback.aclose()


# uvicorn's own answer when the app fails before it answers.
_SERVER_ERROR: dict[str, Any] = {
    "type": "http.response.start", "status": 500,
    "headers": [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", b"21"),
                (b"connection", b"close")]}


def _loop_running() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True
