"""The request pipeline, in the order a request meets it:

    route (routing.py) -> authenticate (auth.py) -> write access (auth.py)
    -> validate path, query, body (validation.py) -> resolve workspace and resource, 403/404
    -> rate limit (ratelimit.py) -> handler (handlers/) over the store (store.py)
    -> JSON response (responses.py) -> self-check against the document (selfcheck.py)

`MockApp` is the pipeline over a `MockState` (state.py: store, tokens, limiter, clock, journal,
faults, cache, files), which it changes only through the state's methods; `create_app` wraps it
in a Starlette application.
"""

from __future__ import annotations

import logging
import secrets
import time
import zlib
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

import anyio
import orjson
from starlette.requests import ClientDisconnect
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from ..data.fixtures import Dataset, load_dataset
from ..data.tables import TABLES
from ..openapi.spec import Operation, Spec, load_spec
from .auth import Principal, TokenRegistry
from .cache import CachedResponse, ResponseCache
from .clock import Clock
from .context import Context, Services
from .errors import (
    ApiError,
    BadRequest,
    Forbidden,
    HeadersTooLarge,
    MethodNotAllowed,
    NotFound,
    PayloadTooLarge,
    StaleRead,
    UnsupportedMediaType,
)
from .faults import DropResponse, Faults, fault_response, fault_target_problem
from .handlers import load_handlers
from .journal import MAX_JOURNAL_BYTES, Journal
from .pagination import CursorCodec
from .ratelimit import RateLimiter
from .requestlog import REQUEST_LOGGER, log_request, printable
from .responses import error_body
from .routing import Router
from .selfcheck import SelfCheck
from .sessions import SESSION_HEADER, SESSION_PREFIX, Sessions
from .state import MockState, Settings, StateSnapshot
from .storage import FileStore, StorageKeys
from .store import Record, Store
from .validation import RequestValidator

__all__ = ["Config", "MockApp"]


@dataclass
class Config:
    """How the pipeline runs and a mock starts. What changes at run time lives in `MockState`
    (`rate_limit`, `seed` and `frozen_clock` here are only its initial settings)."""

    fixtures: list[Path] = field(default_factory=list)  # empty: the default fixtures
    seed: int = 0
    rate_limit: int = 120  # requests per minute per workspace; 0 turns limits off
    # apply the fixtures' per-workspace plan limits (`_rate_limit_per_minute`) over rate_limit;
    # `serve --rate-limit N` turns them off: N is then every workspace's limit
    workspace_limits: bool = True
    self_check: bool = False
    frozen_clock: str | None = None  # an ISO instant: start frozen there (tests)
    max_body_bytes: int = 1_048_576
    spec_path: str | None = None
    cursor_secret: bytes | None = None
    # Keys upload URLs, storage ids and file URLs' signatures (storage.py): random per server
    # unless pinned here (then the same seed and writes give the same URLs again).
    storage_secret: str | None = None
    base_url: str = "http://127.0.0.1:8080"
    # -- standalone features (control API, journal, faults, logging, docs) ------------------
    host: str = "127.0.0.1"  # the bound address: off loopback, control needs control_token
    # The bound sockets' addresses that are not loopback (serve sets them once bound; a
    # Unix socket counts): any, and control needs control_token. None: judged by `host`.
    exposed: tuple[str, ...] | None = None
    control_token: str | None = None  # X-Mock-Control-Token for /__mock__/ routes
    journal_size: int = 1000  # requests kept for GET /__mock__/requests; 0 turns it off
    journal_bytes: int = MAX_JOURNAL_BYTES  # and at most this many bytes of them in all
    request_log: bool = True  # one line per request on "mockserver.requests" (when enabled)
    prefer_header: bool = True  # `Prefer: code=404` answers that documented response
    response_cache: int = 256  # answers of repeated reads kept (cache.py); 0 turns it off
    # Unknown query parameters: ignored and reported (journal, request log) by default, as
    # the real service ignores them (decision B10); strict refuses them with 400.
    strict_params: bool = False
    # -- sessions (sessions.py) ---------------------------------------------------------------
    max_sessions: int = 10_000  # sessions at once (the default session not counted)
    max_session_memory: int = 512 * 1024 * 1024  # bytes the sessions' changes may hold
    session_idle_seconds: float = 3600.0  # a session without requests this long is deleted
    sessions_on_use: bool = False  # a request naming an unknown session creates it
    # -- shared state (shared.py): several workers and processes as one mock ------------------
    state: str | None = None  # redis://HOST:PORT/DB; None: in memory, this process only
    state_namespace: str = "mock"  # mocks sharing one Redis are apart by namespace


class UnsupportedPreference(BadRequest):
    """`Prefer: code=N` naming a status the operation does not document (no self-check: the
    400 itself may be undocumented for that operation)."""


class PreferredResponse(ApiError):
    """The documented error response a client asked for with `Prefer: code=N`."""

    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message, headers=headers)
        self.status_code = status


ERROR_LOGGER = logging.getLogger("mockserver.errors")
RawHeaders = list[tuple[bytes, bytes]]
MAX_RERUNS = 64  # runs of one request on a shared state's stale copy before it answers 503
_JSON = (b"content-type", b"application/json")
_BODY_METHODS = frozenset(("POST", "PUT", "PATCH", "DELETE"))  # read before the pipeline runs


def _json_headers(body: bytes, extra: dict[str, str] | None = None) -> RawHeaders:
    headers = [_JSON, (b"content-length", str(len(body)).encode())]
    if extra:
        headers += [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in extra.items()]
    return headers


MAX_HEADER_BYTES = 16_384  # inferred: common server limits are 8-16 KiB


def scan_headers(scope: Scope) -> tuple[str | None, str | None, int, str | None]:
    """The one pass over the raw ASGI header list a request needs: its first `Authorization`
    and `Prefer`, its size as `_respond` limits it to MAX_HEADER_BYTES (names, values and 4
    bytes a line: uvicorn's httptools parser sets no limit of its own) and its first
    `X-Mock-Session` (the served `Application` reads the session from it),
    kept in the scope (`mock.headers`) with the size the journal counts (`mock.header_bytes`)."""
    headers = scope["headers"]
    authorization = prefer = session = None
    size = 0
    for key, value in headers:
        size += len(key) + len(value)
        if key == b"authorization":
            if authorization is None:
                authorization = value
        elif key == b"prefer":
            if prefer is None:
                prefer = value
        elif key == SESSION_HEADER and session is None:
            session = value
    scope["mock.header_bytes"] = size
    found = scope["mock.headers"] = (
        None if authorization is None else authorization.decode("latin-1"),
        None if prefer is None else prefer.decode("latin-1"),
        size + 4 * len(headers),
        None if session is None else session.decode("latin-1"))
    return found


def _header(scope: Scope, name: bytes) -> str | None:
    """One request header from the raw ASGI list (names arrive lower-cased)."""
    for key, value in scope["headers"]:
        if key == name:
            return value.decode("latin-1")
    return None


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


_NOISE_PREFIXES = ("/favicon", "/apple-touch-icon", "/robots.txt", "/.well-known/")


def _body(scope: Scope) -> bytes:
    """The request body `MockApp._take_body` read, or the error reading it raised."""
    body = scope.get("mock.body")
    if body is None:
        error = scope.get("mock.body_error")
        if error is None:
            raise RuntimeError("the request body was not read (MockApp._take_body)")
        raise error
    return bytes(body)


def decode_body(body: bytes, encoding: str, limit: int) -> bytes:
    """A request body sent with `Content-Encoding`: identity as it is, gzip and deflate
    decoded (413 when the decoded body passes `limit`: no decompression bomb is held), any
    other coding refused with 415 naming it."""
    name = encoding.strip().lower()
    if name in ("", "identity"):
        return body
    if name not in ("gzip", "x-gzip", "deflate"):
        raise UnsupportedMediaType(f"header 'Content-Encoding': {encoding.strip()!r} is not "
                                   "supported; send identity, gzip or deflate")
    # wbits: 16+ reads a gzip member, a plain deflate stream is zlib-wrapped (RFC 9110 8.4.1.2)
    decoder = zlib.decompressobj(16 + zlib.MAX_WBITS if "gzip" in name else zlib.MAX_WBITS)
    try:
        decoded = decoder.decompress(body, limit + 1)
        complete = decoder.eof
    except zlib.error:
        complete = False
        decoded = b""
    if len(decoded) > limit:
        raise PayloadTooLarge(f"request body is larger than {limit} bytes once decoded")
    if not complete:
        raise BadRequest(f"header 'Content-Encoding': the body is not valid {name} data")
    return decoded


def _browser_noise(path: str) -> bool:
    """Requests a browser makes on its own (icons, robots, well-known probes): answered, but
    never journaled, so the inspector shows what clients sent (inlined in `_observed`)."""
    return path.startswith(_NOISE_PREFIXES)


def _preferred_code(prefer: str) -> int | None:
    # `Prefer: code=404` (as Prism reads it); other preferences in the header are ignored.
    for part in prefer.replace(";", ",").split(","):
        name, _, value = part.strip().partition("=")
        if name.strip().lower() == "code":
            value = value.strip().strip('"')
            # ASCII digits only: str.isdigit() also accepts "²" and other digits int() refuses.
            if not (len(value) == 3 and value.isascii() and value.isdigit()):
                raise UnsupportedPreference(f"header 'Prefer': code={value!r} is not a status code")
            return int(value)
    return None


class MockApp:
    """The pipeline over one mock's state: the document, its router, validators, handlers and
    self-check (fixed while the server runs), and `state` (state.py), the only mutable part.

    The pipeline reads the state's parts and changes them only through its methods. The
    read-only shortcuts below (`store`, `clock`, `journal` ...) name the parts of `state`.
    """

    def __init__(self, config: Config | None = None, *, dataset: Dataset | None = None) -> None:
        self.config = config = config or Config()
        self.spec: Spec = load_spec(config.spec_path)
        if dataset is None:
            dataset = load_dataset(config.fixtures or None, spec=self.spec)
        settings = Settings(seed=config.seed, rate_limit=config.rate_limit,
                            frozen_clock=config.frozen_clock,
                            workspace_limits=config.workspace_limits)
        self.state: MockState
        if config.state is None:
            self.state = MockState(dataset, settings, journal_size=config.journal_size,
                                   journal_bytes=config.journal_bytes,
                                   response_cache=config.response_cache)
        else:  # one worker of a mock shared through Redis (imports redis-py)
            from .replication import shared_state

            self.state = shared_state(
                config.state, namespace=config.state_namespace, dataset=dataset,
                settings=settings, fixtures=config.fixtures, spec=self.spec,
                journal_size=config.journal_size, journal_bytes=config.journal_bytes,
                response_cache=config.response_cache)
        self.cursors = CursorCodec(config.cursor_secret or secrets.token_bytes(32))
        if config.cursor_secret is None and self.state.replicated:
            # Signed with the namespace's secret, kept in Redis: good on every worker.
            self.state.use_cursors(self.cursors)  # type: ignore[attr-defined]
        self.router = Router(self.spec)
        self.validators = {op.operation_id: RequestValidator(self.spec, op)
                           for op in self.spec.operations}
        self.selfcheck: SelfCheck | None = SelfCheck(self.spec) if config.self_check else None
        # A copy per mock: tests that swap a handler (a planted defect) touch only their mock.
        self.handlers = dict(load_handlers(self.spec))
        missing = sorted(set(self.spec.by_id) - set(self.handlers))
        if missing:
            raise RuntimeError(f"operations without a handler: {', '.join(missing)}")
        self._fields: dict[str, tuple[str, ...]] = {}
        secret = config.storage_secret
        self.services = Services(self.cursors, self.fields, self.spec.resource_paths,
                                 StorageKeys(None if secret is None else secret.encode()))
        self.base_url = config.base_url.rstrip("/")
        self.started_at = datetime.now(UTC).isoformat(timespec="milliseconds").replace(
            "+00:00", "Z")  # wall time: when the default session was created
        caps: dict[str, Any] = {
            "max_sessions": config.max_sessions, "max_change_bytes": config.max_session_memory,
            "idle_seconds": config.session_idle_seconds, "create_on_use": config.sessions_on_use}
        self.sessions: Sessions
        if self.state.replicated:  # sessions and snapshots in Redis too (shared_sessions.py)
            from .replication.sessions import SharedSessions

            self.sessions = SharedSessions(
                self.state, journal_size=config.journal_size,  # type: ignore[arg-type]
                journal_bytes=config.journal_bytes, response_cache=config.response_cache,
                **caps)
        else:
            self.sessions = Sessions(self.state, self._new_state, **caps)

    def _new_state(self, name: str, settings: Settings | None,
                   snapshot: StateSnapshot | None) -> MockState:
        """A session's state: over the default state's dataset and settings, or forked from
        a snapshot (its records, ids and settings)."""
        if snapshot is not None:
            return MockState(snapshot.shared, settings or snapshot.settings, name=name,
                             base=snapshot.base, journal_size=self.config.journal_size,
                             journal_bytes=self.config.journal_bytes,
                             response_cache=self.config.response_cache)
        return MockState(self.state.shared, settings or self.state.settings, name=name,
                         journal_size=self.config.journal_size,
                         journal_bytes=self.config.journal_bytes,
                         response_cache=self.config.response_cache)

    # -- helpers the handlers use -----------------------------------------------------------

    def fields(self, schema: str) -> tuple[str, ...]:
        found = self._fields.get(schema)
        if found is None:
            found = self._fields[schema] = self.spec.schema_fields(schema)
        return found

    def reset(self) -> None:
        """The state back to its dataset (`MockState.reset`)."""
        self.state.reset()

    # -- read-only shortcuts to the state's parts (change them through `state`'s methods) ---

    @property
    def store(self) -> Store:
        return self.state.store

    @property
    def clock(self) -> Clock:
        return self.state.clock

    @property
    def journal(self) -> Journal:
        return self.state.journal

    @property
    def faults(self) -> Faults:
        return self.state.faults

    @property
    def limiter(self) -> RateLimiter:
        return self.state.limiter

    @property
    def tokens(self) -> TokenRegistry:
        return self.state.tokens

    @property
    def dataset(self) -> Dataset:
        return self.state.dataset

    @property
    def cache(self) -> ResponseCache:
        return self.state.cache

    @property
    def files(self) -> FileStore:
        return self.state.files

    def check_fault(self, method: str | None, path: str | None) -> None:
        """ValueError naming the field when a fault rule with this method and path could
        never fire on the document's operations (faults.fault_target_problem)."""
        problem = fault_target_problem(
            ((op.method, op.path) for op in self.spec.operations), method, path)
        if problem is not None:
            field_name, message = problem
            raise ValueError(f"field '{field_name}': {message}")

    def state_for(self, scope: Scope) -> MockState:
        """The state a request addresses: its session's (set by `Application`), or the
        default."""
        return scope.get("mock.state") or self.state

    def base_url_of(self, state: MockState) -> str:
        """Where a state is served (URLs handed out by handlers point there)."""
        if state is self.state:
            return self.base_url
        return f"{self.base_url}{SESSION_PREFIX}{state.name}"

    # -- the pipeline -----------------------------------------------------------------------
    #
    # The API path works on the raw ASGI scope: no Request or Response objects, headers read
    # from the scope's list, the answer sent as two ASGI messages. It is the benchmarked path,
    # and a bare Starlette app serving fixed bytes is the yardstick.
    #
    # Only a request body is awaited (besides a fault's delay, a shared state's round trip and
    # sending the answer): it is read first, for the methods that carry one (`_take_body`),
    # and the pipeline itself is synchronous (`_answer` -> `_respond` -> `_run`). A read that
    # failed (413, a disconnect) is kept and raised where the body is used (`_body`), so what
    # is refused before that point (401, 403, 400 ...) is still answered first.

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        started = time.perf_counter()
        state = scope.get("mock.state") or self.state  # state_for, inlined
        method = scope["method"]
        if method in _BODY_METHODS and "mock.body" not in scope:
            await self._take_body(scope, receive)
        if state.replicated or state.faults.rules or (
            self.config.request_log and REQUEST_LOGGER.isEnabledFor(20)
        ):
            scope.setdefault("mock.started", started)
            await self._served(state, scope, receive, send)
            return
        # In memory, no faults, no request log (the common case): nothing awaited but the
        # sending, the journal entry recorded here (what `_observed` records).
        try:  # `_answer`, inlined
            status, body, headers = self._respond(scope, state)
        except (ClientDisconnect, StaleRead):
            raise
        except Exception as exc:
            status, body, headers = self._failed(scope, exc)
        if state.journal.enabled:
            path = scope["path"]
            if not path.startswith(_NOISE_PREFIXES):  # _browser_noise
                latency_ms = (time.perf_counter() - started) * 1000
                ignored = scope.get("mock.ignored")
                if ignored is None:
                    ignored = self._ignored_params(scope)
                state.record_request(
                    state.clock.now_ms(), method, path, scope.get("query_string", b""),
                    scope.get("headers", ()), scope.get("mock.body"), status, body, latency_ms,
                    scope.get("mock.operation"), None, ignored, scope.get("mock.header_bytes"))
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    async def _served(self, state: MockState, scope: Scope, receive: Receive,
                      send: Send) -> None:
        """The pipeline where something may wait: a shared state (its round trip, reruns),
        injected faults, the request log (with the journal, in `_observed`)."""
        reruns = 0
        while True:
            try:
                if state.journal.enabled or state.faults.rules or (
                    self.config.request_log and REQUEST_LOGGER.isEnabledFor(20)
                ):
                    await self._observed(state, scope, receive, send)
                    return
                if state.replicated:
                    status, body, headers = await state.run(  # type: ignore[attr-defined]
                        self._viewed, scope, state, scope=scope,
                        inline=scope["method"] == "GET")
                    status, body, headers = await self._settle(state, scope, None) or (
                        status, body, headers)
                else:
                    status, body, headers = self._answer(scope, state)
            except StaleRead:
                reruns += 1
                if reruns < MAX_RERUNS:
                    continue
                # Other workers kept appending first (or a read kept writing): answered, not
                # run for ever.
                body = orjson.dumps({"error": f"shared state busy: the request ran {reruns} "
                                              "times on a copy other writes had moved; retry"})
                status, headers = 503, _json_headers(body, {"Retry-After": "1"})
            break
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    def _viewed(self, scope: Scope, state: MockState) -> tuple[int, bytes, RawHeaders]:
        """`_answer` on a worker's copy of a shared state (shared.py), run so that the event
        loop never waits for Redis (`SharedMockState.run`: a read on the loop, which calls
        Redis only in its round trip, else in one of the worker's threads). The request
        reads the copy as it is (`mock.view`: where the worker is in the log), and confirms
        in its one round trip to Redis (with the rate-limit hit) that no other worker
        appended since; when one did, the worker has caught up and the request runs again
        (StaleRead), nothing of it answered or kept."""
        scope["mock.view"] = state.view()  # type: ignore[attr-defined]
        return self._answer(scope, state)

    def _answer(self, scope: Scope, state: MockState) -> tuple[int, bytes, RawHeaders]:
        """`_respond`, with any unexpected exception (a handler bug, a self-check violation)
        answered 500 `{"error": ...}` and logged on "mockserver.errors"; the exception is
        kept in the scope (`mock.error`) for embedders such as the pytest plugin."""
        try:
            return self._respond(scope, state)
        except (ClientDisconnect, StaleRead):
            raise
        except Exception as exc:
            return self._failed(scope, exc)

    def _failed(self, scope: Scope, exc: Exception) -> tuple[int, bytes, RawHeaders]:
        ERROR_LOGGER.error("unexpected error answering %s %s", scope["method"],
                           printable(scope["path"]), exc_info=exc)
        scope["mock.error"] = exc
        body = orjson.dumps({"error": f"internal error: {type(exc).__name__}: {exc}"})
        return 500, body, _json_headers(body)

    async def respond(self, scope: Scope, receive: Receive,
                      state: MockState | None = None) -> tuple[int, bytes, RawHeaders]:
        """Status, body and headers of the answer to one API request (self-checked when on);
        an unexpected exception is raised (the served pipeline answers it 500)."""
        if state is None:
            state = self.state_for(scope)
        if scope["method"] in _BODY_METHODS and "mock.body" not in scope:
            await self._take_body(scope, receive)
        return self._respond(scope, state)

    def _respond(self, scope: Scope, state: MockState) -> tuple[int, bytes, RawHeaders]:
        """`respond` once the request body is read (or its failure kept): synchronous."""
        operation: Operation | None = None
        check = True
        try:
            found = self.router.match(scope["path"])  # `_route`, inlined but for refusals
            operation = found[0].get(scope["method"]) if found is not None else None
            if operation is None:
                operation, raw_path = self._route(scope)  # raises 404 or 405
            raw_path = found[1]  # type: ignore[index]
            scope["mock.operation"] = operation.operation_id
            if state.replicated and "mock.view" in scope:
                # Its round trip to Redis waits: for a write's append, else for its answer
                # (with its journal entry).
                scope["mock.view"].deferrable = True
            # The header limit (431), on the one pass over the headers
            authorization, prefer, size, _ = scope.get("mock.headers") or scan_headers(scope)
            if size > MAX_HEADER_BYTES:
                raise HeadersTooLarge(f"request headers are larger than {MAX_HEADER_BYTES} bytes")
            principal = state.shared.tokens.authenticate(authorization)  # state.tokens
            if not self.config.prefer_header:
                prefer = None
            cache_key = None
            if operation.cacheable and prefer is None and state.cache.enabled:
                if self.config.strict_params and scope.get("query_string"):
                    # The cache is keyed by the query string, not the mode: refuse first.
                    self.validators[operation.operation_id].query_string(
                        scope["query_string"], strict=True)
                cache_key = state.cache.key(self.handlers[operation.operation_id], scope["path"],
                                            scope.get("query_string", b""), principal)
                hit = state.cached_response(cache_key)
                if hit is not None:
                    state.count_request(hit.limit_kind, hit.limit_ident, scope.get("mock.view"))
                    return hit.status, hit.body, hit.headers  # self-checked when first sent
            status, payload, pure = self._run(state, scope, operation, raw_path, principal,
                                              prefer)
            body = orjson.dumps(payload)
            headers = [_JSON, (b"content-length", str(len(body)).encode())]  # _json_headers
        except ApiError as error:
            view = scope.get("mock.view")
            if view is not None and error.status_code != 503:
                # Refused on a shared state's copy (an unknown token, record or path): first
                # confirm that copy was current (one round trip), else run again (StaleRead).
                try:
                    state.confirm(view)  # type: ignore[attr-defined]
                except ApiError as unavailable:
                    error = unavailable
            status, body = error.status_code, error_body(error)
            headers = _json_headers(body, error.headers)
            # Not answers of the operation: a refused preference, shared state unreachable.
            check = not isinstance(error, UnsupportedPreference) and error.status_code != 503
            cache_key = pure = None
        if self.selfcheck is not None and operation is not None and check:
            self.selfcheck.check(operation, status, body,
                                 {k.decode("latin-1"): v.decode("latin-1") for k, v in headers})
        if cache_key is not None and pure is not None:
            version, kind, ident = pure
            state.keep_response(cache_key, version,
                                CachedResponse(kind, ident, status, body, headers))
        return status, body, headers

    async def _observed(self, state: MockState, scope: Scope, receive: Receive,
                        send: Send) -> None:
        """The pipeline plus injected faults, the journal and the request log."""
        started = scope.setdefault("mock.started", time.perf_counter())  # kept over a rerun
        method, path = scope["method"], scope["path"]
        rerun = "mock.fault" in scope
        if rerun:  # fired (and waited for) on a first run of this request (shared state)
            rule = scope["mock.fault"]
        elif not state.faults.rules:
            rule = None
        elif state.replicated:
            # Fired or drawn (a probability) through the shared log, which this worker has
            # applied up to it: a rerun (StaleRead) must not draw again (each draw would
            # append another entry, and make the rerun stale in turn), and reads from there
            # on (`_viewed`).
            rule = scope["mock.fault"] = await state.off_loop(  # type: ignore[attr-defined]
                state.take_fault, method, path, scope=scope)
        else:
            rule = state.take_fault(method, path)
        injected: Response | None = None
        if rule is not None:
            if rule.delay_ms and not rerun:
                await anyio.sleep(rule.delay_ms / 1000)
            if rule.drop:
                injected = DropResponse()
            elif rule.status is not None:
                injected = fault_response(rule)  # injected on purpose: never self-checked
        if injected is None:
            if state.replicated:
                status, body, headers = await state.run(  # type: ignore[attr-defined]
                    self._viewed, scope, state, scope=scope, inline=method == "GET")
            else:
                status, body, headers = self._answer(scope, state)
        else:
            status, body, headers = injected.status_code, bytes(injected.body), injected.raw_headers
            self._name_operation(scope)  # the journal's row names what the fault answered for
        latency_ms = (time.perf_counter() - started) * 1000
        fault = rule.describe() if rule is not None else None
        ignored = self._ignored_params(scope)
        entry: tuple[Any, ...] | None = None
        if state.journal.enabled and not path.startswith(_NOISE_PREFIXES):  # _browser_noise
            entry = (  # positional: `Journal.record`'s order (every request); the body read
                # first (`_take_body`), None when that failed (too large, a disconnect)
                state.clock.now_ms(), method, path, scope.get("query_string", b""),
                scope.get("headers", ()), scope.get("mock.body"), status, body, latency_ms,
                scope.get("mock.operation"), fault, ignored, scope.get("mock.header_bytes"))
        view = scope.get("mock.view") if state.replicated else None
        if view is not None and view.pending:  # a read on a shared state: its round trip
            refused = await self._settle(state, scope, entry)  # records it, unless refused
            if refused is not None:
                status, body, headers = refused
                if entry is not None:
                    entry = (*entry[:6], status, body, *entry[8:])
                    await state.off_loop(  # type: ignore[attr-defined]
                        state.record_request, *entry, scope=scope)
        elif entry is not None:
            if state.replicated:
                await state.off_loop(  # type: ignore[attr-defined]
                    state.record_request, *entry, scope=scope)
            else:
                state.record_request(*entry)
        if self.config.request_log and REQUEST_LOGGER.isEnabledFor(20):
            log_request(method, path, status, latency_ms,
                        _header(scope, b"authorization"), fault=fault, ignored=ignored)
        if isinstance(injected, DropResponse):
            await injected(scope, receive, send)
            return
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    async def _settle(self, state: MockState, scope: Scope,
                entry: tuple[Any, ...] | None) -> tuple[int, bytes, RawHeaders] | None:
        """A read on a shared state, answered from the worker's copy: its one round trip to
        Redis (shared.py), which confirms the copy was current (else StaleRead: the request
        runs again), counts it and records its journal `entry` (`Journal.record`'s fields);
        None, or the answer to send instead: the 429 when the count is over the limit, the 503
        when Redis is unreachable (the entry not recorded by the round trip)."""
        view = scope.get("mock.view")
        if view is None or not view.pending:
            return None
        try:
            over: ApiError | None = await state.settle(view, entry)  # type: ignore[attr-defined]
        except StaleRead:
            raise
        except ApiError as unavailable:  # Redis unreachable: 503, as any request answers
            over = unavailable
        except Exception as exc:  # a bug: answered as `_answer` answers one
            ERROR_LOGGER.error("unexpected error settling %s %s", scope["method"],
                               printable(scope["path"]), exc_info=exc)
            scope["mock.error"] = exc
            body = orjson.dumps({"error": f"internal error: {type(exc).__name__}: {exc}"})
            return 500, body, _json_headers(body)
        if over is None:
            return None
        body = error_body(over)
        headers = _json_headers(body, over.headers)
        operation = self.spec.by_id.get(scope.get("mock.operation") or "")
        if self.selfcheck is not None and operation is not None and over.status_code != 503:
            self.selfcheck.check(operation, over.status_code, body,
                                 {k.decode("latin-1"): v.decode("latin-1") for k, v in headers})
        return over.status_code, body, headers

    def _ignored_params(self, scope: Scope) -> tuple[str, ...]:
        """The unknown query parameters the pipeline ignored for this request (reported in the
        journal and the request log); none in strict mode, where they are refused."""
        found = scope.get("mock.ignored")  # validated (unless answered from the cache or
        if found is not None:  # refused before validation)
            return found
        operation_id = scope.get("mock.operation")
        query_string = scope.get("query_string", b"")
        if operation_id is None or not query_string or self.config.strict_params:
            return ()
        return tuple(self.validators[operation_id].ignored(parse_query(query_string)))

    def _name_operation(self, scope: Scope) -> None:
        """Set the operation a request addresses (when it addresses one) without answering
        it: an injected fault answers before routing, yet its journal entry names it."""
        found = self.router.match(scope["path"])
        operation = found[0].get(scope["method"]) if found is not None else None
        if operation is not None:
            scope["mock.operation"] = operation.operation_id

    def _route(self, scope: Scope) -> tuple[Operation, dict[str, str]]:
        path = scope["path"]
        found = self.router.match(path)
        if found is None:
            raise NotFound(f"No such path: {path}")
        methods, raw_path = found
        method = scope["method"]
        operation = methods.get(method)
        if operation is None:
            allowed = ", ".join(sorted(methods))
            raise MethodNotAllowed(f"Method {method} is not allowed on {path}; "
                                   f"allowed: {allowed}", headers={"Allow": allowed})
        scope["mock.operation"] = operation.operation_id
        return operation, raw_path

    def _run(
        self, state: MockState, scope: Scope, operation: Operation, raw_path: dict[str, str],
        principal: Principal,
        prefer: str | None = None,
    ) -> tuple[int, Any, tuple[int, str, str] | None]:
        """Status and payload from the handler, and, when the handler neither wrote nor read
        the clock, (store version, rate-limit kind, ident) under which its answer may be kept.
        `Prefer: code=N` is answered only once authentication, write access, validation,
        workspace access and the rate limit have passed (the request is counted)."""
        if operation.requires_write:
            principal.check_write(operation.operation_id)
        validator = self.validators[operation.operation_id]
        path = validator.path(raw_path) if raw_path else {}  # a literal path: none to check
        unknown: list[str] = []
        query = validator.query_string(scope.get("query_string", b""),
                                       strict=self.config.strict_params, unknown=unknown)
        # What the journal and the request log report as ignored (found while validating).
        scope["mock.ignored"] = tuple(dict.fromkeys(unknown)) if unknown else ()
        body = None
        if operation.body_schema is not None:
            body = validator.body(_body(scope), _header(scope, b"content-type"))
        if state is not self.state and scope["method"] != "GET":
            # A session's write: refused (507) before it takes the sessions past their cap.
            self.sessions.check_room(state, self.sessions.record_bytes)
        store, clock = state.store, state.clock
        if state.replicated:
            return self._run_shared(state, scope, operation, principal, prefer, path, query,
                                    body)
        with store.lock:  # what `_run_shared`'s `handle` does, inlined (every request)
            if operation.workspace_source == "query":  # most reads: `_resolve_workspace`'s
                workspace_id, resource = query["workspace_id"], None
                if workspace_id not in principal.workspace_ids:
                    principal.check_workspace(workspace_id)  # raises 403
            else:
                workspace_id, resource = self._resolve_workspace(store, operation, principal,
                                                                 path, query, body)
            if workspace_id is not None:
                kind, ident = "workspace", workspace_id
            else:
                kind, ident = "token", principal.token
            state.count_request(kind, ident, scope.get("mock.view"))
            if prefer is not None:
                self._apply_preference(operation, prefer)
            version, reads = store.version, clock.reads
            result = self.handlers[operation.operation_id](Context(
                self.services, store,
                self.base_url if state is self.state else self.base_url_of(state),
                operation, principal, path, query, body, workspace_id, resource))
            pure = version == store.version and reads == clock.reads
        return operation.success_status, result, (version, kind, ident) if pure else None

    def _run_shared(
        self, state: MockState, scope: Scope, operation: Operation, principal: Principal,
        prefer: str | None, path: dict[str, Any], query: dict[str, Any], body: Any,
    ) -> tuple[int, Any, tuple[int, str, str] | None]:
        """`_run`'s handler step on a shared state: one entry of the shared log (caught up at
        the request's start), which may run `handle` again; the request counted once."""
        store, clock = state.store, state.clock
        counted = False

        def handle() -> tuple[Any, str, str, int, bool]:
            nonlocal counted
            workspace_id, resource = self._resolve_workspace(store, operation, principal, path,
                                                             query, body)
            if workspace_id is not None:
                kind, ident = "workspace", workspace_id
            else:
                kind, ident = "token", principal.token
            if not counted:  # once, however often a shared write runs again
                state.count_request(kind, ident, scope.get("mock.view"))
                counted = True
            if prefer is not None:
                self._apply_preference(operation, prefer)
            version, reads = store.version, clock.reads
            ctx = Context(self.services, store,
                          self.base_url if state is self.state else self.base_url_of(state),
                          operation, principal, path, query, body, workspace_id, resource)
            result = self.handlers[operation.operation_id](ctx)
            return (result, kind, ident, version,
                    version == store.version and reads == clock.reads)

        result, kind, ident, version, pure = state.transaction(  # type: ignore[attr-defined]
            handle, fresh=False, view=scope.get("mock.view"))
        return operation.success_status, result, (version, kind, ident) if pure else None

    def _apply_preference(self, operation: Operation, prefer: str) -> None:
        """`Prefer: code=N` after authentication: the documented success status runs the
        operation as usual; a documented error status answers with its example (or a
        generated message); anything else is refused naming the documented statuses."""
        code = _preferred_code(prefer)
        if code is None or code == operation.success_status:
            return
        documented = operation.responses.get(code)
        if documented is None or code < 400:
            listed = ", ".join(str(s) for s in sorted(operation.responses))
            raise UnsupportedPreference(
                f"header 'Prefer': code={code} is not a documented error response of "
                f"{operation.operation_id}; documented: {listed}"
            )
        example = documented.get("content", {}).get("application/json", {}).get("example")
        if isinstance(example, dict) and isinstance(example.get("error"), str):
            message = example["error"]
        else:
            message = f"{documented.get('description', 'error').strip()} (Prefer: code={code})"
        headers = {"Retry-After": "1"} if code == 429 else None
        raise PreferredResponse(code, message, headers)

    async def _take_body(self, scope: Scope, receive: Receive) -> None:
        """Read the request body before the pipeline runs (`mock.body`), or keep why it could
        not be read (`mock.body_error`: 413, a disconnect ...), raised by `_body` where the
        pipeline uses it: a request refused before that is answered as if it were unread."""
        try:
            await self._read_body(scope, receive)
        except Exception as exc:
            scope["mock.body_error"] = exc

    async def _read_body(self, scope: Scope, receive: Receive) -> bytes:
        """The request body, refused with 413 past the limit (declared or streamed)."""
        if "mock.body" in scope:
            return bytes(scope["mock.body"])
        limit = self.config.max_body_bytes
        declared = _header(scope, b"content-length")
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
        encoding = _header(scope, b"content-encoding")
        if encoding is not None and body:
            body = decode_body(body, encoding, limit)
        scope["mock.body"] = body
        return body

    def _resolve_workspace(
        self, store: Store, operation: Operation, principal: Principal, path: dict[str, Any],
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
