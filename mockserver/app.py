"""The request pipeline, in the order a request meets it:

    route (routing.py) -> authenticate (auth.py) -> write access (auth.py)
    -> validate path, query, body (validation.py) -> resolve workspace and resource, 403/404
    -> rate limit (ratelimit.py) -> handler (handlers/) over the store (store.py)
    -> JSON response (responses.py) -> self-check against the document (selfcheck.py)

`MockApp` holds the state of one mock (store, tokens, limiter, clock); `create_app` wraps it
in a Starlette application.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from .auth import Principal, TokenRegistry
from .clock import Clock
from .context import Context
from .errors import ApiError, BadRequest, MethodNotAllowed, NotFound, PayloadTooLarge
from .fixtures import Dataset, load_dataset
from .handlers import load_handlers
from .pagination import CursorCodec
from .ratelimit import RateLimiter
from .responses import error_response
from .routing import Router
from .selfcheck import SelfCheck
from .spec import Operation, Spec, load_spec
from .store import Record, Store
from .tables import TABLES
from .validation import RequestValidator

__all__ = ["Config", "MockApp", "create_app"]


@dataclass
class Config:
    fixtures: list[Path] = field(default_factory=list)  # empty: the default fixtures
    seed: int = 0
    rate_limit: int = 120  # requests per minute per workspace; 0 turns limits off
    self_check: bool = False
    frozen_clock: str | None = None  # an ISO instant: start frozen there (tests)
    max_body_bytes: int = 1_048_576
    spec_path: str | None = None
    cursor_secret: bytes | None = None
    base_url: str = "http://127.0.0.1:8080"


class MockApp:
    """One mock: document, store, tokens, limiter and clock, and the pipeline over them."""

    def __init__(self, config: Config | None = None, *, dataset: Dataset | None = None) -> None:
        self.config = config = config or Config()
        self.spec: Spec = load_spec(config.spec_path)
        self.clock = Clock(frozen_at=config.frozen_clock)
        if dataset is None:
            dataset = load_dataset(config.fixtures or None, spec=self.spec)
        self.dataset = dataset
        self.store = Store(
            dataset.tables, {name: t.key for name, t in TABLES.items()},
            clock=self.clock, seed=config.seed,
        )
        self.tokens = TokenRegistry(dataset.tokens)
        self.limiter = RateLimiter(self.clock, config.rate_limit)
        for ws in dataset.tables.get("workspaces", {}).values():
            if "_rate_limit_per_minute" in ws:
                self.limiter.set_workspace_limit(ws["id"], ws["_rate_limit_per_minute"])
        self.cursors = CursorCodec(config.cursor_secret or secrets.token_bytes(32))
        self.router = Router(self.spec)
        self.validators = {op.operation_id: RequestValidator(self.spec, op)
                           for op in self.spec.operations}
        self.selfcheck: SelfCheck | None = SelfCheck(self.spec) if config.self_check else None
        self.handlers = load_handlers()
        missing = sorted(set(self.spec.by_id) - set(self.handlers))
        if missing:
            raise RuntimeError(f"operations without a handler: {', '.join(missing)}")
        self._fields: dict[str, tuple[str, ...]] = {}

    # -- helpers the handlers use -----------------------------------------------------------

    def fields(self, schema: str) -> tuple[str, ...]:
        found = self._fields.get(schema)
        if found is None:
            found = self._fields[schema] = self.spec.schema_fields(schema)
        return found

    def reset(self) -> None:
        """Back to the fixtures: store, rate-limit windows, and a frozen clock's start."""
        self.store.reset()
        self.limiter.reset()
        if self.config.frozen_clock:
            self.clock.set(self.config.frozen_clock)

    # -- the pipeline -----------------------------------------------------------------------

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        response = await self.handle(request)
        await response(scope, receive, send)

    async def handle(self, request: Request) -> Response:
        operation: Operation | None = None
        try:
            operation = self._route(request)
            status, body = await self._run(request, operation)
            response = Response(orjson.dumps(body), status_code=status,
                                 media_type="application/json")
        except ApiError as error:
            response = error_response(error)
        if self.selfcheck is not None and operation is not None:
            self.selfcheck.check(operation, response.status_code, response.body,
                                 dict(response.headers))
        return response

    def _route(self, request: Request) -> Operation:
        path = request.url.path
        found = self.router.match(path)
        if found is None:
            raise NotFound(f"No such path: {path}")
        methods, raw_path = found
        operation = methods.get(request.method)
        if operation is None:
            allowed = ", ".join(sorted(methods))
            raise MethodNotAllowed(f"Method {request.method} is not allowed on {path}; "
                                   f"allowed: {allowed}", headers={"Allow": allowed})
        request.state.raw_path = raw_path
        return operation

    async def _run(self, request: Request, operation: Operation) -> tuple[int, Any]:
        principal = self.tokens.authenticate(request.headers.get("authorization"))
        if operation.requires_write:
            principal.check_write(operation.operation_id)
        validator = self.validators[operation.operation_id]
        path = validator.path(request.state.raw_path)
        query = validator.query(request.query_params.multi_items())
        body = None
        if operation.body_schema is not None:
            raw = await self._read_body(request)
            body = validator.body(raw, request.headers.get("content-type"))
        with self.store.lock:
            workspace_id, resource = self._resolve_workspace(operation, principal, path, query, body)
            if workspace_id is not None:
                self.limiter.hit("workspace", workspace_id)
            else:
                self.limiter.hit("token", principal.token)
            ctx = Context(self, operation, principal, path, query, body, workspace_id, resource)
            result = self.handlers[operation.operation_id](ctx)
        return operation.success_status, result

    async def _read_body(self, request: Request) -> bytes:
        limit = self.config.max_body_bytes
        declared = request.headers.get("content-length")
        if declared is not None:
            if not declared.isdigit():
                raise BadRequest("header 'Content-Length': not a number")
            if int(declared) > limit:
                raise PayloadTooLarge(f"request body is larger than {limit} bytes")
        chunks = []
        size = 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                raise PayloadTooLarge(f"request body is larger than {limit} bytes")
            chunks.append(chunk)
        return b"".join(chunks)

    def _resolve_workspace(
        self, operation: Operation, principal: Principal, path: dict[str, Any],
        query: dict[str, Any], body: Any,
    ) -> tuple[str | None, Record | None]:
        source = operation.workspace_source
        if source is None:
            return None, None
        if source == "path":
            workspace_id = path["id"]
            principal.check_workspace(workspace_id)
            return workspace_id, None
        if source == "query":
            workspace_id = query["workspace_id"]
            principal.check_workspace(workspace_id)
            return workspace_id, None
        if source == "body":
            workspace_id = body["workspace_id"]
            principal.check_workspace(workspace_id)
            return workspace_id, None
        # Addressed by a resource id: an explicit workspace_id (query, or body for
        # runCustomTool) must be accessible and must hold the resource (404 otherwise);
        # without one the resource's own workspace is resolved and checked (documented).
        table = TABLES[operation.resource_table or ""]
        key = path[operation.resource_param or "id"]
        explicit = query.get("workspace_id")
        if explicit is None and isinstance(body, dict):
            explicit = body.get("workspace_id")
        if explicit is not None:
            principal.check_workspace(explicit)
        record = self.store.get(table.name, key)
        noun = table.schemas[0] if table.schemas else table.name
        if record is None:
            raise NotFound(f"{noun} {key!r} not found")
        workspace_id = record.get(table.workspace_field or "workspace_id")
        if explicit is not None and workspace_id != explicit:
            raise NotFound(f"{noun} {key!r} not found in workspace {explicit!r}")
        principal.check_workspace(workspace_id)
        return workspace_id, record


def create_app(config: Config | None = None, *, mock: MockApp | None = None) -> Starlette:
    """The Starlette application serving one mock (built from `config` unless given)."""
    mock = mock or MockApp(config)

    async def not_found(request: Request, exc: Exception) -> Response:
        return error_response(NotFound(f"No such path: {request.url.path}"))

    app = Starlette(exception_handlers={404: not_found})
    app.state.mock = mock
    # Every path no other route claims (the whole /v1 surface) goes through the pipeline.
    app.router.default = mock
    return app
