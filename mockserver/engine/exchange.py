"""One API request as the pipeline carries it: the `Exchange`, built once per request.

It holds what the steps find out about the request (the state it addresses, its headers' one
pass, its body or why that could not be read, its operation and raw path parameters, the
unknown query parameters it carried, the fault that hit it, a shared state's view, the
variations of a robustness plan) and what is answered (status, body, headers). The core (core.py) and the layers around it
(layers.py, replica.py) read and fill it; nothing of it travels in the ASGI scope.

Also here: the raw ASGI helpers the pipeline and the standalone server share (the one header
pass, one header, JSON headers, the query split, reading and decoding a request body).
"""

from __future__ import annotations

import zlib
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl

from starlette.requests import ClientDisconnect
from starlette.types import Receive, Scope, Send

from .errors import BadRequest, PayloadTooLarge, UnsupportedMediaType

if TYPE_CHECKING:
    from ..openapi.spec import Operation
    from .faults import Effect
    from .state import MockState

__all__ = ["MAX_HEADER_BYTES", "Exchange", "RawHeaders", "decode_body", "header",
           "json_headers", "parse_query", "read_body", "scan_headers", "send_answer"]

RawHeaders = list[tuple[bytes, bytes]]
Scanned = tuple[str | None, str | None, int, str | None, int]
MAX_HEADER_BYTES = 16_384  # inferred: common server limits are 8-16 KiB
_JSON = (b"content-type", b"application/json")
SESSION_HEADER = b"x-mock-session"  # names a request's session (sessions.py)
_SCANNED = frozenset((b"authorization", b"prefer", SESSION_HEADER))  # scan_headers reads


class Exchange:
    """One request and its answer (see the module docstring). `status` is 0 until answered."""

    __slots__ = ("authorization", "body", "body_error", "counted", "deferred", "effect",
                 "fault", "header_bytes", "header_size", "headers", "ignored", "method",
                 "offload", "operation", "path", "prefer", "query_string", "raw_path", "response", "scope", "started",
                 "state", "status", "varied", "view")

    # Set once routed, once the core runs and once answered (with `status`), respectively.
    raw_path: dict[str, str]
    counted: bool  # charged to a rate-limit window in this run (Core.answer sets it)
    response: bytes
    headers: RawHeaders

    def __init__(self, scope: Scope, state: MockState, started: float,
                 scanned: Scanned | None = None) -> None:
        self.scope = scope
        self.state = state
        self.started = started  # time.perf_counter() when it came (latency)
        self.method: str = scope["method"]
        self.path: str = scope["path"]
        self.query_string: bytes = scope.get("query_string", b"")
        (self.authorization, self.prefer, self.header_size, _,
         self.header_bytes) = scanned or scan_headers(scope)
        self.body: bytes | None = None  # read before the pipeline runs (body methods)
        self.body_error: Exception | None = None  # why it could not be read (413, ...)
        self.operation: Operation | None = None  # once routed
        self.ignored: tuple[str, ...] | None = None  # once validated
        self.effect: Effect | None = None  # the fault that hit it (faults.py)
        self.fault: str | None = None  # and its description (journal, request log)
        self.view: Any = None  # a shared state's view of this run (replica.py)
        # the robustness plan's items that varied the answer (robust/runtime.py: journaled)
        self.varied: tuple[int, ...] = ()
        self.status = 0  # answered: `response` and `headers` are set with it
        # A handler's `context.Deferred` answer: run off the loop when `offload` (app.py sets
        # it where the pipeline awaits `Core.complete`), else in place by the core.
        self.offload = False
        self.deferred: Any = None

    def answer(self, status: int, body: bytes, headers: RawHeaders) -> None:
        self.status, self.response, self.headers = status, body, headers

    def read_body(self) -> bytes:
        """The request body `read_body` read, or the error reading it raised (raised here,
        where a step uses the body: a refusal before that is answered as if it were unread)."""
        if self.body is None:
            if self.body_error is None:
                raise RuntimeError("the request body was not read (exchange.read_body)")
            raise self.body_error
        return self.body


def scan_headers(scope: Scope) -> Scanned:
    """The one pass over the raw ASGI header list a request needs: its first `Authorization`
    and `Prefer`, its size as the pipeline limits it to MAX_HEADER_BYTES (names, values and
    4 bytes a line: uvicorn's httptools parser sets no limit of its own), its first
    `X-Mock-Session` (the served `Application` reads the session from it) and the bytes of
    its names and values (what the journal counts)."""
    headers = scope["headers"]
    authorization = prefer = session = None
    size = 0
    for key, value in headers:
        size += len(key) + len(value)
        if key in _SCANNED:  # one test for the other headers (most of them)
            if key == b"authorization":
                if authorization is None:
                    authorization = value
            elif key == b"prefer":
                if prefer is None:
                    prefer = value
            elif session is None:
                session = value
    return (None if authorization is None else authorization.decode("latin-1"),
            None if prefer is None else prefer.decode("latin-1"),
            size + 4 * len(headers),
            None if session is None else session.decode("latin-1"),
            size)


def header(scope: Scope, name: bytes) -> str | None:
    """One request header from the raw ASGI list (names arrive lower-cased)."""
    for key, value in scope["headers"]:
        if key == name:
            return value.decode("latin-1")
    return None


def json_headers(body: bytes, extra: dict[str, str] | None = None) -> RawHeaders:
    headers = [_JSON, (b"content-length", str(len(body)).encode())]
    if extra:
        headers += [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in extra.items()]
    return headers


def parse_query(query_string: bytes) -> list[tuple[str, str]]:
    """Query items in order, repeats kept. The common case (nothing escaped) skips parse_qsl."""
    if not query_string:
        return []
    text = query_string.decode("latin-1")
    if "%" in text or "+" in text:
        return parse_qsl(query_string.decode("utf-8", "replace"), keep_blank_values=True)
    items = []
    for part in text.split("&"):
        if part:
            name, _, value = part.partition("=")
            items.append((name, value))
    return items


def decode_body(body: bytes, encoding: str, limit: int) -> bytes:
    """A request body sent with `Content-Encoding`: identity as it is, gzip and deflate
    decoded (413 when the decoded body passes `limit`: no decompression bomb is held), any
    other coding refused with 415 naming it. A list of codings (`gzip, identity`) is undone
    last first, and a gzip body of several members is all of them (RFC 9110 8.4, RFC 1952
    2.2; DECISIONS H30: only the first member was read, the rest silently dropped)."""
    codings = [c.strip().lower() for c in encoding.split(",")]
    if not all(c in _CODINGS for c in codings):
        raise UnsupportedMediaType(f"header 'Content-Encoding': {encoding.strip()!r} is not "
                                   "supported; send identity, gzip or deflate")
    for coding in reversed(codings):
        body = _decode_one(body, coding, limit)
    return body


_CODINGS = frozenset(("", "identity", "gzip", "x-gzip", "deflate"))


def _decode_one(body: bytes, encoding: str, limit: int) -> bytes:
    name = encoding
    if name in ("", "identity"):
        return body
    # wbits: 16+ reads a gzip member, a plain deflate stream is zlib-wrapped (RFC 9110 8.4.1.2)
    wbits = 16 + zlib.MAX_WBITS if "gzip" in name else zlib.MAX_WBITS
    parts: list[bytes] = []
    size = 0
    rest = body
    complete = False
    while rest:
        decoder = zlib.decompressobj(wbits)
        try:
            decoded = decoder.decompress(rest, limit + 1 - size)
            complete = decoder.eof
        except zlib.error:
            complete = False
            decoded = b""
        size += len(decoded)
        parts.append(decoded)
        if size > limit:
            raise PayloadTooLarge(f"request body is larger than {limit} bytes once decoded")
        if not complete or wbits == zlib.MAX_WBITS:
            break  # deflate is one stream
        rest = decoder.unused_data  # the next gzip member, if any
        if not rest.strip(b"\0"):
            break  # padding after the last member, as gzip(1) allows
    if not complete:
        raise BadRequest(f"header 'Content-Encoding': the body is not valid {name} data")
    return b"".join(parts)


async def read_body(ex: Exchange, receive: Receive, limit: int) -> None:
    """Read the request body before the pipeline runs (`ex.body`), refused with 413 past
    `limit` (declared or streamed), or keep why it could not be read (`ex.body_error`: 413,
    a disconnect ...), raised by `Exchange.read_body` where a step uses the body."""
    try:
        declared = header(ex.scope, b"content-length")
        if declared is not None:
            if not declared.isdigit():
                raise BadRequest("header 'Content-Length': not a number")
            if int(declared) > limit:
                raise PayloadTooLarge(f"request body is larger than {limit} bytes")
        chunks = []
        size = 0
        more = True
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                raise ClientDisconnect()
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                raise PayloadTooLarge(f"request body is larger than {limit} bytes")
            chunks.append(chunk)
            more = message.get("more_body", False)
        body = b"".join(chunks)
        encoding = header(ex.scope, b"content-encoding")
        if encoding is not None and body:
            body = decode_body(body, encoding, limit)
        ex.body = body
    except Exception as exc:
        ex.body_error = exc


BODY_METHODS = frozenset(("POST", "PUT", "PATCH", "DELETE"))  # bodies read before the layers run
SEND_SLICE = 1024 * 1024  # a body past this is sent in slices of it (H38)


async def send_slices(body: bytes | bytearray, send: Send) -> None:
    """Send a large body as `SEND_SLICE` slices (never a copy of the whole): the server writes
    each and waits for the client to drain it, the event loop serving others meanwhile."""
    view = memoryview(body)
    last = len(view) - SEND_SLICE
    for at in range(0, len(view), SEND_SLICE):
        await send({"type": "http.response.body", "body": bytes(view[at:at + SEND_SLICE]),
                    "more_body": at < last})


async def send_answer(ex: Exchange, send: Send) -> None:
    """Send `ex`'s answer as two ASGI messages (a body past `SEND_SLICE`: in slices), or as
    its fault's effect sends it (a dropped connection: half an answer). (`app.LocalRunner.serve`
    has these lines inline: the benchmarked path awaits nothing more.)"""
    if ex.effect is None:
        await send({"type": "http.response.start", "status": ex.status,
                    "headers": ex.headers})
        body = ex.response
        if len(body) <= SEND_SLICE:
            await send({"type": "http.response.body", "body": body})
        else:
            await send_slices(body, send)
    else:
        await ex.effect.send(ex.status, ex.response, ex.headers, send)
