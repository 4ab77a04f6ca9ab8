"""A validating proxy: forward every request to a real server, check both directions against
the document, pass the upstream's answer through unchanged, and report what did not conform.

Requests are checked like the mock checks them (parameters and body, `RequestValidator`).
Responses are checked against the documented statuses, required headers and the *open*
schemas (`spec.components` as written: a real server may add fields). Each violation is logged
on "mockserver.proxy" and listed at GET /__proxy__/violations (newest last, bounded).

    app = create_proxy_app("https://api.example.com")      # python -m mockserver proxy ...
"""

from __future__ import annotations

import contextlib
import gzip
import itertools
import logging
import threading
import zlib
from collections import deque
from collections.abc import AsyncIterator
from typing import Any

import httpx
import orjson
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from .engine.errors import BadRequest
from .engine.responses import message_body
from .engine.routing import Router
from .engine.validation import RequestValidator
from .openapi.schemas import first_error, json_validator
from .openapi.spec import Operation, Spec, load_spec

__all__ = ["ProxyValidator", "create_proxy_app", "main"]

LOGGER = logging.getLogger("mockserver.proxy")

# Hop-by-hop headers (RFC 9110 7.6.1) belong to one connection, never forwarded.
_HOP = {"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te",
        "trailer", "transfer-encoding", "upgrade", "host"}


class ProxyValidator:
    """The document's checks for traffic the proxy sees; violations kept in a bounded list."""

    def __init__(self, spec: Spec, *, keep: int = 1000) -> None:
        self.spec = spec
        self.router = Router(spec)
        self.requests = {op.operation_id: RequestValidator(spec, op) for op in spec.operations}
        self._responses: dict[tuple[str, int], Any] = {}
        self.violations: deque[dict[str, Any]] = deque(maxlen=keep)
        self._seq = itertools.count(1)
        self._lock = threading.Lock()

    def match(self, method: str, path: str) -> tuple[Operation | None, dict[str, str], str | None]:
        found = self.router.match(path)
        if found is None:
            return None, {}, f"path {path} is not in the document"
        methods, raw_path = found
        operation = methods.get(method)
        if operation is None:
            return None, {}, f"method {method} is not documented for {path}"
        return operation, raw_path, None

    def check_request(self, operation: Operation, raw_path: dict[str, str],
                      query: list[tuple[str, str]], body: bytes,
                      content_type: str | None) -> list[str]:
        validator = self.requests[operation.operation_id]
        problems = []
        # Undocumented query parameters are reported (the mock ignores them, decision B10).
        for step in (lambda: validator.path(raw_path), lambda: validator.query(query, strict=True)):
            try:
                step()
            except BadRequest as exc:
                problems.append(exc.message)
        if operation.body_schema is not None:
            try:
                validator.body(body, content_type)
            except BadRequest as exc:
                problems.append(exc.message)
        return problems

    def _response_validator(self, operation: Operation, status: int) -> Any:
        key = (operation.operation_id, status)
        if key not in self._responses:
            schema = operation.response_schema(status)
            self._responses[key] = (None if schema is None
                                    else json_validator(schema, self.spec.components))
        return self._responses[key]

    def check_response(self, operation: Operation, status: int, headers: httpx.Headers,
                       body: bytes | None) -> list[str]:
        documented = operation.responses.get(status)
        if documented is None:
            listed = ", ".join(str(s) for s in sorted(operation.responses))
            return [f"status {status} is not documented (documented: {listed})"]
        problems = []
        for name in documented.get("headers", {}):
            if name not in headers:
                problems.append(f"header {name} is missing")
        validator = self._response_validator(operation, status)
        if validator is not None and body is not None:
            try:
                payload = orjson.loads(body)
            except orjson.JSONDecodeError as exc:
                return [*problems, f"body is not JSON: {exc}"]
            problem = first_error(validator, payload)
            if problem is not None:
                where, message = problem
                problems.append(f"body at '/{where}': {message}")
        return problems

    def report(self, direction: str, method: str, path: str, operation: Operation | None,
               status: int | None, problems: list[str]) -> None:
        for problem in problems:
            entry = {"method": method, "path": path, "direction": direction,
                     "operation_id": operation.operation_id if operation else None,
                     "status": status, "problem": problem}
            with self._lock:
                entry = {"seq": next(self._seq), **entry}
                self.violations.append(entry)
            LOGGER.warning("violation (%s) %s %s%s: %s", direction, method, path,
                           f" -> {status}" if status else "", problem)


def _decoded(body: bytes, encoding: str | None) -> bytes | None:
    """The body as JSON text for checking (None when its encoding cannot be undone here)."""
    if not encoding or encoding == "identity":
        return body
    try:
        if encoding == "gzip":
            return gzip.decompress(body)
        if encoding == "deflate":
            return zlib.decompress(body)
    except (OSError, zlib.error):
        return None
    return None


def _closing(client: httpx.AsyncClient) -> Any:
    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        yield
        await client.aclose()

    return lifespan


# What the proxy holds of one exchange (DECISIONS H34): a request body as `serve` allows one
# (413 past it, nothing forwarded), an upstream answer up to MAX_RESPONSE_BYTES (502 past it).
# Request heads are limited as `serve` limits them (its protocol, PROTOCOL below).
MAX_BODY_BYTES = 1_048_576
MAX_RESPONSE_BYTES = 64 * 1024 * 1024
PROTOCOL = "mockserver.standalone.protocol:GuardedHttpToolsProtocol"


def _error(status: int, message: str) -> Response:
    return Response(message_body(message), status_code=status,
                    media_type="application/json")


def create_proxy_app(upstream: str, *, spec_path: str | None = None,
                     transport: httpx.AsyncBaseTransport | None = None,
                     timeout: float = 30.0, keep: int = 1000,
                     max_body_bytes: int = MAX_BODY_BYTES,
                     max_response_bytes: int = MAX_RESPONSE_BYTES) -> Starlette:
    """A Starlette app forwarding everything to `upstream` and validating it (see module doc).
    `transport` replaces the network (tests pass an in-process ASGI transport)."""
    validator = ProxyValidator(load_spec(spec_path), keep=keep)
    client = httpx.AsyncClient(base_url=upstream.rstrip("/"), transport=transport,
                               timeout=timeout, follow_redirects=False)

    async def violations(request: Request) -> Response:
        return Response(orjson.dumps({"data": list(validator.violations)}),
                        media_type="application/json")

    async def clear(request: Request) -> Response:
        count = len(validator.violations)
        validator.violations.clear()
        return Response(orjson.dumps({"cleared": count}), media_type="application/json")

    async def forward(request: Request) -> Response:
        method, path = request.method, request.url.path
        declared = request.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > max_body_bytes:
            return _error(413, f"request body is larger than {max_body_bytes} bytes")
        chunks, size = [], 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > max_body_bytes:
                return _error(413, f"request body is larger than {max_body_bytes} bytes")
            chunks.append(chunk)
        body = b"".join(chunks)
        operation, raw_path, unknown = validator.match(method, path)
        if unknown is not None:
            validator.report("request", method, path, None, None, [unknown])
        else:
            assert operation is not None
            validator.report("request", method, path, operation, None, validator.check_request(
                operation, raw_path, request.query_params.multi_items(), body,
                request.headers.get("content-type")))
        headers = [(k, v) for k, v in request.headers.items() if k.lower() not in _HOP]
        outgoing = client.build_request(method, path, params=request.url.query or None,
                                        headers=headers, content=body)
        try:
            upstream_response = await client.send(outgoing, stream=True)
            parts, held = [], 0
            try:
                async for part in upstream_response.aiter_raw():
                    held += len(part)
                    if held > max_response_bytes:
                        validator.report("upstream", method, path, operation, None,
                                         [f"answer larger than {max_response_bytes} bytes"])
                        return _error(502, f"proxy: the upstream answer is larger than "
                                           f"{max_response_bytes} bytes")
                    parts.append(part)
            finally:
                await upstream_response.aclose()
            raw = b"".join(parts)
        except httpx.HTTPError as exc:
            validator.report("upstream", method, path, operation, None,
                             [f"upstream unreachable: {exc!r}"])
            return Response(message_body(f"proxy: upstream failed: {exc}"),
                            status_code=502, media_type="application/json")
        status = upstream_response.status_code
        if operation is not None:
            content_type = upstream_response.headers.get("content-type", "")
            decoded = _decoded(raw, upstream_response.headers.get("content-encoding"))
            checked = decoded if decoded and "json" in content_type else None
            if decoded and "json" not in content_type:
                validator.report("response", method, path, operation, status,
                                 [f"content type {content_type!r} is not JSON"])
            validator.report("response", method, path, operation, status,
                             validator.check_response(operation, status,
                                                      upstream_response.headers, checked))
        passed = [(k, v) for k, v in upstream_response.headers.multi_items()
                  if k.lower() not in _HOP]
        response = Response(raw, status_code=status)
        response.raw_headers = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in passed]
        return response

    methods = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"]
    app = Starlette(routes=[
        Route("/__proxy__/violations", violations, methods=["GET"]),
        Route("/__proxy__/violations", clear, methods=["DELETE"]),
        Route("/{path:path}", forward, methods=methods),
    ], lifespan=_closing(client))
    app.state.validator = validator
    return app


def main(argv: list[str] | None = None, prog: str = "python -m mockserver proxy") -> int:
    """`python -m mockserver proxy --upstream URL [--host H] [--port P] [--log-format F]`
    (`prog`: how the user called it, for the usage line)."""
    import argparse

    import uvicorn

    from .engine.requestlog import configure_logging

    parser = argparse.ArgumentParser(prog=prog,
                                     description="Validate traffic to a real server against "
                                                 "the document; violations at /__proxy__/violations")
    parser.add_argument("--upstream", required=True, help="the real server's base URL")
    parser.add_argument("--host", default="127.0.0.1", help="bind address (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8081, help="port to listen on (default 8081)")
    parser.add_argument("--spec", default=None,
                        help="another OpenAPI document (default: the package's spec/openapi.yaml)")
    parser.add_argument("--log-format", choices=("text", "json"), default="text",
                        help="one line per request and violation, as text or JSON "
                        "(default text)")
    args = parser.parse_args(argv)
    configure_logging(args.log_format)
    app = create_proxy_app(args.upstream, spec_path=args.spec)
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning", http=PROTOCOL)
    return 0
