"""The synchronous core of the request pipeline: one request's steps, in order,

    route (routing.py) -> authenticate and the header limit (auth.py) -> cache (cache.py)
    -> write access (auth.py) -> validate path, query, body (validation.py) -> session room
    (sessions.py) -> workspace and resource, 403/404 -> rate limit (ratelimit.py)
    -> `Prefer: code=N` -> handle (handlers/, over store.py) -> encode JSON -> self-check
    (selfcheck.py)

over an `Exchange` (exchange.py), whose answer it fills in. `Core.answer` is all a request
on a quiet in-memory state runs (app.py); the layers (layers.py: faults before, the journal
and request log after; replica.py: a shared state's view, reruns and round trip around) call
it and never reach into it. The replication layer plugs in at three points only, for a
request run on a shared state's view (`ex.view`): after routing, the handler step (one
transaction of the shared log) and a refusal (confirmed first), through the `SharedSteps`
the core is built with (replica.SharedSteps). Nothing here awaits.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

import orjson
from starlette.requests import ClientDisconnect

from ..data.tables import TABLES
from ..openapi.spec import Operation, Spec
from .auth import Principal
from .cache import CachedResponse
from .context import HEAVY_PAGE_BYTES, Context, Deferred, Services
from .errors import (
    ApiError,
    BadRequest,
    Forbidden,
    HeadersTooLarge,
    MethodNotAllowed,
    NotFound,
    StaleRead,
)
from .exchange import MAX_HEADER_BYTES, Exchange, header, json_headers, parse_query
from .requestlog import printable
from .responses import documented_error, error_body, internal_error_body
from .routing import Router
from .selfcheck import SelfCheck
from .sessions import SESSION_PREFIX
from .store import Record, Store
from .validation import RequestValidator

if TYPE_CHECKING:
    from .sessions import SessionRegistry
    from .state import MockState

__all__ = ["Core", "SharedSteps", "UnsupportedPreference"]

ERROR_LOGGER = logging.getLogger("mockserver.errors")
_JSON = (b"content-type", b"application/json")
Pure = tuple[int, str, str]  # (store version, rate-limit kind, ident) an answer may be kept at


class UnsupportedPreference(BadRequest):
    """`Prefer: code=N` naming a status the operation does not document (no self-check: the
    400 itself may be undocumented for that operation)."""


class SharedSteps(Protocol):
    """What the core calls of the replication layer (replica.SharedSteps) for a request run
    on a shared state's view (`ex.view` set); never called otherwise."""

    def routed(self, ex: Exchange) -> None: ...

    def transact(self, ex: Exchange, step: Callable[[], tuple[Any, Pure | None]]
                 ) -> tuple[Any, Pure | None]: ...

    def refused(self, ex: Exchange, error: ApiError) -> ApiError: ...


class Core:
    """The steps above, over the document's fixed parts (router, validators, handlers,
    self-check) and the server's `services`; `handlers` may be swapped (a planted defect)."""

    def __init__(self, spec: Spec, config: Any, handlers: dict[str, Callable[[Context], Any]],
                 services: Services, default: MockState, sessions: SessionRegistry,
                 shared: SharedSteps) -> None:
        self.spec = spec
        self.config = config  # app.Config: strict_params, prefer_header read per request
        self.router = Router(spec)
        self.validators = {op.operation_id: RequestValidator(spec, op)
                           for op in spec.operations}
        self.selfcheck: SelfCheck | None = SelfCheck(spec) if config.self_check else None
        self.handlers = handlers
        self.services = services
        self.default = default
        self.sessions = sessions
        self.base_url: str = config.base_url.rstrip("/")
        self.shared = shared  # called for a request on a shared state's view only

    def base_url_of(self, state: MockState) -> str:
        """Where a state is served (URLs handed out by handlers point there)."""
        if state is self.default:
            return self.base_url
        return f"{self.base_url}{SESSION_PREFIX}{state.name}"

    # -- the core ---------------------------------------------------------------------------

    def answer(self, ex: Exchange) -> None:
        """Answer `ex` (its body read before, or the failure kept): a refusal as its 4xx,
        an unexpected exception (a handler bug, a self-check violation) as a logged 500."""
        try:
            operation: Operation | None = None
            check = True
            pure: Pure | None = None
            try:  # route, header limit, authenticate, cache, write access, validate, handle
                # route (404, 405)
                path = ex.path
                found = self.router.match(path)
                if found is None:
                    raise NotFound(f"No such path: {path}")
                methods, ex.raw_path = found
                operation = methods.get(ex.method)
                if operation is None:
                    allowed = ", ".join(sorted(methods))
                    raise MethodNotAllowed(f"Method {ex.method} is not allowed on {path}; "
                                           f"allowed: {allowed}", headers={"Allow": allowed})
                ex.operation = operation
                if ex.view is not None:
                    self.shared.routed(ex)
                if ex.header_size > MAX_HEADER_BYTES:
                    raise HeadersTooLarge(
                        f"request headers are larger than {MAX_HEADER_BYTES} bytes")
                state = ex.state
                principal = state.shared.tokens.authenticate(ex.authorization)  # state.tokens
                prefer = ex.prefer if self.config.prefer_header else None
                cache_key = None
                if operation.cacheable and prefer is None and state.cache.enabled:
                    if self.config.strict_params and ex.query_string:
                        # The cache is keyed by the query string, not the mode: refuse first.
                        self.validators[operation.operation_id].query_string(
                            ex.query_string, strict=True)
                    # The handler itself, not its name: a swapped handler (a planted defect
                    # in the conformance tests) never meets answers of the one it replaced.
                    cache_key = (self.handlers[operation.operation_id], ex.path,
                                 ex.query_string, principal)
                    hit = state.cache.get(cache_key, state.store.version)
                    if hit is not None:
                        state.count_request(hit.limit_kind, hit.limit_ident, ex.view)
                        # self-checked when first sent; kept only when it ignored no query
                        # parameter (below), so neither does this request (same operation
                        # and query string: the key's)
                        ex.status, ex.response, ex.headers = hit.status, hit.body, hit.headers
                        ex.ignored = ()
                        return
                # write access, validate, the session's room
                if operation.requires_write:
                    principal.check_write(operation.operation_id)
                validator = self.validators[operation.operation_id]
                params = validator.path(ex.raw_path) if ex.raw_path else {}  # literal: none
                unknown: list[str] = []
                query = validator.query_string(ex.query_string, unknown=unknown,
                                               strict=self.config.strict_params)
                ex.ignored = tuple(dict.fromkeys(unknown)) if unknown else ()
                body = None
                if operation.body_schema is not None:
                    body = validator.body(ex.read_body(), header(ex.scope, b"content-type"))
                # the handler step: under the store's lock, or as one transaction of a
                # shared log (which may run it again)
                ex.counted = False
                if ex.view is None:
                    with state.store.lock:
                        if ex.method != "GET" and (self.selfcheck is not None
                                                   or state is not self.default):
                            # one transaction: self-checked, a session's admitted (507)
                            payload, pure = self.checked_write(ex, operation, principal,
                                                               prefer, params, query, body)
                        else:
                            payload, pure = self.handle(ex, operation, principal, prefer,
                                                        params, query, body)
                else:
                    payload, pure = self.transact_shared(ex, operation, principal, prefer,
                                                         params, query, body)
                if isinstance(payload, Deferred):  # a custom tool's run: it takes time
                    if ex.offload:  # run off the loop, answered by `complete` (app.py)
                        ex.deferred = payload
                        return
                    payload = payload.run()  # in place: a worker thread, or a plan's layer
                status = operation.success_status
                body = orjson.dumps(payload)
                headers = [_JSON, (b"content-length", str(len(body)).encode())]
            except ApiError as error:
                status, body, headers, check = self.refusal(ex, error)
                cache_key = pure = None
            if self.selfcheck is not None and operation is not None and check:
                self.selfcheck.check(operation, status, body, {
                    k.decode("latin-1"): v.decode("latin-1") for k, v in headers})
            if cache_key is not None and pure is not None and not ex.ignored:
                version, kind, ident = pure
                ex.state.keep_response(cache_key, version,
                                       CachedResponse(kind, ident, status, body, headers))
            ex.status, ex.response, ex.headers = status, body, headers
        except (ClientDisconnect, StaleRead):
            raise
        except Exception as exc:
            self.failed(ex, exc)

    def transact_shared(self, ex: Exchange, operation: Operation, principal: Principal,
                        prefer: str | None, path: dict[str, Any], query: dict[str, Any],
                        body: Any) -> tuple[Any, Pure | None]:
        """The handler step of a request on a shared state's view: one transaction of the
        shared log, which may run it again. A write with the self-check on is checked inside
        it, before its append: an answer the self-check refuses appends nothing (H27,
        DECISIONS R23). (Its own method: `answer` makes no closure cells on every request.)"""
        if self.selfcheck is not None and ex.method != "GET":
            return self.shared.transact(
                ex, lambda: self.checked(ex, operation, principal, prefer, path, query, body))
        return self.shared.transact(
            ex, lambda: self.handle(ex, operation, principal, prefer, path, query, body))

    def checked_write(self, ex: Exchange, operation: Operation, principal: Principal,
                      prefer: str | None, path: dict[str, Any], query: dict[str, Any],
                      body: Any) -> tuple[Any, Pure | None]:
        """A write with the self-check on (tests), or a session's, as one transaction of the
        store: an answer the self-check refuses (or any exception) takes back what the write
        changed, so a 500 never leaves the state changed (DECISIONS H27); a session's write
        that leaves the sessions holding more than their memory cap is taken back and
        refused 507 (H37). The store's lock is held. (On a shared state the shared log's
        transaction takes it back: `checked` runs inside it.)"""
        state = ex.state
        check = None if state is self.default else (lambda: self._admit_changes(state))
        return state.all_or_nothing(
            lambda: self.checked(ex, operation, principal, prefer, path, query, body), check)

    def _admit_changes(self, state: MockState) -> None:
        """A session's write, once done: refused (507) past the memory cap, if it changed
        anything (H37)."""
        if state.store.pending:
            self.sessions.check_held(state)

    def checked(self, ex: Exchange, operation: Operation, principal: Principal,
                prefer: str | None, path: dict[str, Any], query: dict[str, Any],
                body: Any) -> tuple[Any, Pure | None]:
        """`handle`, and the self-check of the answer it makes (ResponseContractViolation:
        the caller's transaction takes the write back). A custom tool's run changed nothing:
        `Core.complete` self-checks its answer once it has run."""
        payload, pure = self.handle(ex, operation, principal, prefer, path, query, body)
        selfcheck = self.selfcheck
        if selfcheck is not None and not isinstance(payload, Deferred):
            encoded = orjson.dumps(payload)
            selfcheck.check(
                operation, operation.success_status, encoded,
                {"content-type": "application/json", "content-length": str(len(encoded))})
        return payload, pure

    def complete(self, ex: Exchange) -> None:
        """Answer `ex`'s deferred payload (`Core.answer` left it in `ex.deferred`): run it,
        encode and self-check the answer. Blocking: the pipeline calls it in a worker thread,
        outside the store's lock (the run reads no state)."""
        deferred, ex.deferred = ex.deferred, None
        operation = ex.operation
        assert deferred is not None and operation is not None
        try:
            status = operation.success_status
            body = deferred.body()  # its payload encoded (a heavy page: item by item, H38)
            if isinstance(body, bytearray) and len(body) <= HEAVY_PAGE_BYTES:
                body = bytes(body)  # sent whole (ASGI bodies are bytes); larger: in slices
            headers = [_JSON, (b"content-length", str(len(body)).encode())]
            if self.selfcheck is not None:
                self.selfcheck.check(operation, status, bytes(body), {
                    k.decode("latin-1"): v.decode("latin-1") for k, v in headers})
            ex.status, ex.response, ex.headers = status, body, headers
        except Exception as exc:
            self.failed(ex, exc)

    def failed(self, ex: Exchange, exc: Exception, doing: str = "answering") -> None:
        """500 `{"error": ...}`, logged on "mockserver.errors"; the exception is kept in the
        scope (`mock.error`: it crosses the ASGI boundary to embedders, the pytest plugin)."""
        ERROR_LOGGER.error("unexpected error %s %s %s", doing, ex.method, printable(ex.path),
                           exc_info=exc)
        ex.scope["mock.error"] = exc
        body = internal_error_body(exc)
        ex.answer(500, body, json_headers(body))

    def name_operation(self, ex: Exchange) -> None:
        """Set the operation `ex` addresses (when it addresses one) without answering it: a
        fault answers in the core's place, yet its journal entry names the operation."""
        found = self.router.match(ex.path)
        if found is not None:
            ex.operation = found[0].get(ex.method)

    def ignored(self, ex: Exchange) -> tuple[str, ...]:
        """The unknown query parameters the pipeline ignored for `ex` (the journal and the
        request log report them); none in strict mode, where they are refused."""
        if ex.ignored is not None:  # validated (unless answered from the cache or refused
            return ex.ignored  # before validation)
        operation = ex.operation
        if operation is None or not ex.query_string or self.config.strict_params:
            return ()
        return tuple(self.validators[operation.operation_id].ignored(
            parse_query(ex.query_string)))

    def refusal(self, ex: Exchange, error: ApiError
                ) -> tuple[int, bytes, list[tuple[bytes, bytes]], bool]:
        """The answer to a refused request, and whether the self-check judges it."""
        if ex.view is not None and error.status_code != 503:
            # Refused on a shared state's copy (an unknown token, record or path): first
            # confirm that copy was current, else run again (StaleRead).
            error = self.shared.refused(ex, error)
        body = error_body(error)
        # Not answers of the operation: a refused preference, shared state unreachable.
        check = not isinstance(error, UnsupportedPreference) and error.status_code != 503
        return error.status_code, body, json_headers(body, error.headers), check

    def handle(self, ex: Exchange, operation: Operation, principal: Principal,
               prefer: str | None, path: dict[str, Any], query: dict[str, Any], body: Any,
               ) -> tuple[Any, Pure | None]:
        """Workspace, rate limit (counted once, however often a shared write runs again),
        preference and the handler: its payload, and, when it neither wrote nor read the
        clock, the store version and rate-limit counter its answer may be kept under."""
        state = ex.state
        store, clock = state.store, state.clock
        if operation.workspace_source == "query":  # most reads (the other sources below)
            workspace_id, resource = query["workspace_id"], None
            if workspace_id not in principal.workspace_ids:
                principal.check_workspace(workspace_id)  # raises 403
        else:
            workspace_id, resource = resolve_workspace(store, operation, principal, path,
                                                       query, body)
        if workspace_id is not None:
            kind, ident = "workspace", workspace_id
        else:
            kind, ident = "token", principal.token
        if not ex.counted:
            state.count_request(kind, ident, ex.view)
            ex.counted = True
        if prefer is not None:
            apply_preference(operation, prefer)
        version, reads = store.version, clock.reads
        base_url = self.base_url if state is self.default else self.base_url_of(state)
        result = self.handlers[operation.operation_id](Context(
            self.services, store, base_url, operation, principal, path, query, body,
            workspace_id, resource, state.run_tool_code))
        if version == store.version and reads == clock.reads:
            return result, (version, kind, ident)
        return result, None


def resolve_workspace(
    store: Store, operation: Operation, principal: Principal, path: dict[str, Any],
    query: dict[str, Any], body: Any,
) -> tuple[str | None, Record | None]:
    """The workspace a request acts in and the resource it addresses, when the workspace
    comes from the path, the body or the resource (`Core.handle` takes it from the query):
    403 without access, 404 when an explicit `workspace_id` does not hold the resource."""
    source = operation.workspace_source
    if source is None:
        return None, None
    if source == "path":
        workspace_id = path["id"]
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
    record = store.get(table.name, key)
    noun = table.schemas[0] if table.schemas else table.name
    if record is None:
        raise NotFound(f"{noun} {key!r} not found")
    workspace_id = str(record.get(table.workspace_field or "workspace_id"))
    if explicit is not None and workspace_id != explicit:
        raise NotFound(f"{noun} {key!r} not found in workspace {explicit!r}")
    if workspace_id not in principal.workspace_ids:
        # The resolved workspace is not named: a stranger learns nothing about who owns it.
        raise Forbidden(f"Token has no access to this {noun}")
    return workspace_id, record


def preferred_code(prefer: str) -> int | None:
    """`Prefer: code=404` (as Prism reads it); other preferences in the header are ignored."""
    for part in prefer.replace(";", ",").split(","):
        name, _, value = part.strip().partition("=")
        if name.strip().lower() == "code":
            value = value.strip().strip('"')
            # ASCII digits only: str.isdigit() also accepts "²" and other digits int() refuses.
            if not (len(value) == 3 and value.isascii() and value.isdigit()):
                raise UnsupportedPreference(f"header 'Prefer': code={value!r} is not a status code")
            return int(value)
    return None


def apply_preference(operation: Operation, prefer: str) -> None:
    """`Prefer: code=N` after authentication: the documented success status runs the
    operation as usual; a documented error status answers with its example (or a generated
    message); anything else is refused naming the documented statuses."""
    code = preferred_code(prefer)
    if code is None or code == operation.success_status:
        return
    documented = operation.responses.get(code)
    if documented is None or code < 400:
        listed = ", ".join(str(s) for s in sorted(operation.responses))
        raise UnsupportedPreference(
            f"header 'Prefer': code={code} is not a documented error response of "
            f"{operation.operation_id}; documented: {listed}"
        )
    raise documented_error(operation, code, f"Prefer: code={code}")
