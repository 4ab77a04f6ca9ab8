"""httpx transports that call the mock's ASGI application in-process (no socket).

`httpx.ASGITransport` is async-only; `SyncASGITransport` runs it on an anyio blocking portal
(one event-loop thread per transport, started on first use) so that code using a plain
`httpx.Client` can be pointed at the mock too. Both turn an injected dropped connection into
`httpx.RemoteProtocolError`, which is what a real client sees when a server hangs up.
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any

import httpx
from anyio.from_thread import BlockingPortal, start_blocking_portal

from ..engine.faults import ConnectionDropped

__all__ = ["AsyncASGITransport", "SyncASGITransport"]


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
