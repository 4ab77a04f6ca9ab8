"""The request pipeline: one route for every API request, in this order,

    read the body (methods that carry one) -> faults (layers.py; faults.py's effects)
    -> the core (core.py: route -> authenticate -> cache -> write access -> validate
       -> workspace -> rate limit -> prefer -> handle -> encode -> self-check)
    -> journal and request log (layers.py) -> send

with a shared state's replication layer (replica.py: its view, reruns and one round trip
to Redis) around the core in place of the in-memory steps. One request is one `Exchange`
(exchange.py) from start to end; the ASGI scope carries only what crosses an ASGI boundary
(`mock.state`, `mock.prefix`, `mock.error`; see ARCHITECTURE.md).

`MockApp` is the pipeline over a `MockState` (state.py: store, tokens, limiter, clock,
journal, faults, cache, files), which it changes only through the state's methods;
`create_app` (standalone/server.py) wraps it in a Starlette application.
"""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio.to_thread
from starlette.types import Receive, Scope, Send

from ..data.fixtures import Dataset, load_dataset
from ..openapi.spec import Spec, load_spec
from .auth import TokenRegistry
from .cache import ResponseCache
from .clock import Clock
from .context import Services, ToolSettings
from .core import Core
from .exchange import Exchange, Scanned, read_body
from .faults import Faults, fault_target_problem
from .handlers import load_handlers
from .journal import MAX_JOURNAL_BYTES, Journal
from .layers import Layers
from .pagination import CursorCodec
from .ratelimit import RateLimiter
from .replica import Replica, shared_sessions, shared_state
from .routing import Router
from .selfcheck import SelfCheck
from .sessions import Sessions
from .state import MockState, Settings, StateSnapshot
from .storage import FileStore, StorageKeys
from .store import Store
from .toolexec import LIMITS, Limits
from .validation import RequestValidator

__all__ = ["Config", "MockApp"]

_BODY_METHODS = frozenset(("POST", "PUT", "PATCH", "DELETE"))  # read before the pipeline runs


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
    # -- custom tools' code (toolexec.py; DECISIONS T10-T12) ------------------------------------
    run_tool_code: bool = False  # run it (serve --run-tool-code); off: deterministic answers
    tool_code_dir: Path | None = None  # <name>.py / <name>.js, read on every run
    tool_limits: Limits = LIMITS
    # -- sessions (sessions.py) ---------------------------------------------------------------
    max_sessions: int = 10_000  # sessions at once (the default session not counted)
    max_session_memory: int = 512 * 1024 * 1024  # bytes the sessions' changes may hold
    session_idle_seconds: float = 3600.0  # a session without requests this long is deleted
    sessions_on_use: bool = False  # a request naming an unknown session creates it
    # -- shared state (shared.py): several workers and processes as one mock ------------------
    state: str | None = None  # redis://HOST:PORT/DB; None: in memory, this process only
    state_namespace: str = "mock"  # mocks sharing one Redis are apart by namespace


class MockApp:
    """The pipeline over one mock's state: the document and its core (router, validators,
    handlers, self-check: fixed while the server runs), the layers around the core, and
    `state` (state.py), the only mutable part.

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
        else:  # one worker of a mock shared through Redis (replica.py)
            self.state = shared_state(config, dataset=dataset, settings=settings,
                                      spec=self.spec)
        self.cursors = CursorCodec(config.cursor_secret or secrets.token_bytes(32))
        # A copy per mock: tests that swap a handler (a planted defect) touch only their mock.
        handlers = dict(load_handlers(self.spec))
        missing = sorted(set(self.spec.by_id) - set(handlers))
        if missing:
            raise RuntimeError(f"operations without a handler: {', '.join(missing)}")
        self._fields: dict[str, tuple[str, ...]] = {}
        secret = config.storage_secret
        self.services = Services(self.cursors, self.fields, self.spec.resource_paths,
                                 StorageKeys(None if secret is None else secret.encode()),
                                 ToolSettings(config.run_tool_code, config.tool_code_dir,
                                              config.tool_limits))
        self.started_at = datetime.now(UTC).isoformat(timespec="milliseconds").replace(
            "+00:00", "Z")  # wall time: when the default session was created
        caps: dict[str, Any] = {
            "max_sessions": config.max_sessions, "max_change_bytes": config.max_session_memory,
            "idle_seconds": config.session_idle_seconds, "create_on_use": config.sessions_on_use}
        self.sessions: Sessions
        if self.state.replicated:  # sessions and snapshots in Redis too
            self.sessions = shared_sessions(self.state, config, caps)
        else:
            self.sessions = Sessions(self.state, self._new_state, **caps)
        self.core = Core(self.spec, config, handlers, self.services, self.state, self.sessions)
        self.layers = Layers(self.core)
        self.replica: Replica | None = None
        if self.state.replicated:
            self.replica = Replica(self.core, self.layers, self.state, self.cursors,
                                   shared_cursors=config.cursor_secret is None)

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

    # -- the core's parts (fixed while the server runs; `handlers` may be swapped) -----------

    @property
    def handlers(self) -> dict[str, Any]:
        return self.core.handlers

    @handlers.setter
    def handlers(self, handlers: dict[str, Any]) -> None:
        self.core.handlers = handlers

    @property
    def router(self) -> Router:
        return self.core.router

    @property
    def validators(self) -> dict[str, RequestValidator]:
        return self.core.validators

    @property
    def selfcheck(self) -> SelfCheck | None:
        return self.core.selfcheck

    @property
    def base_url(self) -> str:
        return self.core.base_url

    def base_url_of(self, state: MockState) -> str:
        """Where a state is served (URLs handed out by handlers point there)."""
        return self.core.base_url_of(state)

    # -- the pipeline -----------------------------------------------------------------------
    #
    # The API path works on the raw ASGI scope: no Request or Response objects, headers read
    # from the scope's list in one pass, the answer sent as two ASGI messages. It is the
    # benchmarked path, and a bare Starlette app serving fixed bytes is the yardstick.
    #
    # Only a request body is awaited (besides a fault's delay, a shared state's round trip and
    # sending the answer): it is read first, for the methods that carry one, and the core is
    # synchronous. A read that failed (413, a disconnect) is kept and raised where the body is
    # used, so what is refused before that point (401, 403, 400 ...) is still answered first.

    async def serve(self, scope: Scope, receive: Receive, send: Send,
                    scanned: Scanned | None = None) -> None:
        """Answer one API request: the one route (module docstring). `scanned`: the header
        pass (exchange.scan_headers) when the caller made it already; the state addressed is
        the scope's `mock.state` (a session, set by the served `Application`) or the default."""
        state = scope.get("mock.state") or self.state
        ex = Exchange(scope, state, time.perf_counter(), scanned)
        if ex.method in _BODY_METHODS:
            await read_body(ex, receive, self.config.max_body_bytes)
        if state.replicated:
            await self.replica.serve(ex)  # type: ignore[union-attr]
        else:
            layers = self.layers
            if state.faults.rules:
                await layers.fault(ex)
            if ex.effect is None or not layers.injected(ex):
                if state.variations is None:
                    ex.offload = True
                    self.core.answer(ex)
                    if ex.deferred is not None:  # a custom tool's run, off the event loop
                        await anyio.to_thread.run_sync(self.core.complete, ex)
                else:  # robustness mode's layer (robust/runtime.py), in the core's place
                    await state.variations.answer(self, ex)
            logged = self.config.request_log
            if state.journal.enabled or logged:  # after: journal, log
                latency_ms = (time.perf_counter() - ex.started) * 1000
                entry = layers.observed(ex, latency_ms)
                if entry is not None:
                    state.record_request(entry, ex.varied)
                if logged:
                    layers.log(ex, latency_ms)
        if ex.effect is None:
            await send({"type": "http.response.start", "status": ex.status,
                        "headers": ex.headers})
            await send({"type": "http.response.body", "body": ex.response})
        else:  # as the fault's effect sends it (a dropped connection: half an answer)
            await ex.effect.send(ex.status, ex.response, ex.headers, send)

    __call__ = serve
