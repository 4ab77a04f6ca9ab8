"""The HTTP protocol `serve` runs: uvicorn's httptools protocol with the request head limited
before it is held, and its own refusals answered as `{"error": ...}`.

uvicorn's httptools parser sets no limit on the request line or the headers: a client sending
a 100 MB header had it buffered whole before the application could answer 431, and on routes
that never counted headers (the control API, /docs) it was not refused at all. Here the head
is counted as it arrives, on every route:

- the request target (path and query) past `MAX_URL_BYTES` is refused with 414;
- more than `MAX_HEADERS` header lines, or header names and values past `MAX_HEADER_BYTES`
  (counted as the pipeline counts them, 4 bytes a line for ": " and CRLF), with 431;
- raw bytes of a head that has not ended past `MAX_HEAD_BYTES` (one read more at most is
  held), with 431.

Bytes the parser refuses (0xFF in the request line, a malformed header ...) are answered
400 `{"error": "invalid HTTP request: ..."}` rather than uvicorn's text/plain. Each refusal
closes the connection, as uvicorn's own do: what the client still sends is dropped unheld
for `DRAIN_SECONDS` first, so that the client reads the answer rather than a reset.
"""

from __future__ import annotations

import asyncio
import http

import httptools
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from ..engine.exchange import MAX_HEADER_BYTES
from ..engine.responses import message_body

__all__ = ["MAX_HEADERS", "MAX_HEAD_BYTES", "MAX_URL_BYTES", "GuardedHttpToolsProtocol"]

# Inferred: common front ends allow 8-16 KiB of request target and ~100 header lines.
MAX_URL_BYTES = 16_384
MAX_HEADERS = 100
MAX_HEAD_BYTES = MAX_URL_BYTES + MAX_HEADER_BYTES + 4 * MAX_HEADERS + 1024  # + request line
DRAIN_SECONDS = 1.0  # a refused connection's bytes are dropped this long, then it is closed


class _Refused(Exception):
    """Raised from a parser callback: the head broke a limit (status, message)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class GuardedHttpToolsProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol, with the head limited as it arrives and JSON refusals."""

    _refusal: _Refused | None = None
    _answered = False  # refused: what still arrives is read and dropped until the close
    _in_head = True
    _head_bytes = 0
    _header_count = 0
    _header_bytes = 0

    def data_received(self, data: bytes) -> None:
        if self._answered:
            return
        if self._in_head:
            self._head_bytes += len(data)
        super().data_received(data)  # parser errors (and _Refused) end in send_400_response
        if self._in_head and self._head_bytes > MAX_HEAD_BYTES and not self._answered:
            # A head still not ended: a line or header value that goes on and on.
            self._answer(431, f"request headers are larger than {MAX_HEADER_BYTES} bytes")

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._in_head = True
        self._header_count = self._header_bytes = 0

    def on_url(self, url: bytes) -> None:
        super().on_url(url)
        if len(self.url) > MAX_URL_BYTES:
            self._refusal = _Refused(414, f"request target (path and query) is longer than "
                                          f"{MAX_URL_BYTES} bytes")
            raise self._refusal

    def on_header(self, name: bytes, value: bytes) -> None:
        self._header_count += 1
        self._header_bytes += len(name) + len(value) + 4
        if self._header_count > MAX_HEADERS:
            self._refusal = _Refused(431, f"more than {MAX_HEADERS} request headers")
            raise self._refusal
        if self._header_bytes > MAX_HEADER_BYTES:
            self._refusal = _Refused(431, f"request headers are larger than {MAX_HEADER_BYTES} "
                                          "bytes")
            raise self._refusal
        super().on_header(name, value)

    def on_headers_complete(self) -> None:
        self._in_head = False
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        super().on_message_complete()
        self._in_head = True  # what comes next on the connection is the next request's head
        self._head_bytes = 0

    def send_400_response(self, msg: str) -> None:
        """uvicorn's answer to what its parser refused: JSON, with the limit's status when a
        limit refused it."""
        refusal, self._refusal = self._refusal, None
        if refusal is not None:
            self._answer(refusal.status, str(refusal))
        else:
            self._answer(400, "invalid HTTP request: the request line or a header could not "
                              "be parsed")

    def _answer(self, status: int, message: str) -> None:
        body = message_body(message)
        reason = http.HTTPStatus(status).phrase.encode()
        head = [b"HTTP/1.1 %d %s\r\n" % (status, reason)]
        head += [name + b": " + value + b"\r\n" for name, value in
                 self.server_state.default_headers]
        head += [b"content-type: application/json\r\n",
                 b"content-length: %d\r\n" % len(body), b"connection: close\r\n\r\n"]
        transport: asyncio.Transport = self.transport
        transport.write(b"".join(head) + body)
        # Closed at once, a socket with unread bytes resets the connection, and the client
        # may lose the answer: what still comes is dropped unread for a moment first.
        self._answered = True
        asyncio.get_running_loop().call_later(DRAIN_SECONDS, transport.close)


# What `data_received` catches from the parser (a callback's _Refused arrives inside it).
assert issubclass(httptools.HttpParserCallbackError, httptools.HttpParserError)
