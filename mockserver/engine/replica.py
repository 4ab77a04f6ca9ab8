"""The pipeline's replication layer: a request on a state shared through Redis (replication/),
around the same core (core.py) an in-memory request runs.

`Replica` is the runner (layers.Runner) of a mock whose state is shared; `app.LocalRunner` is
the in-memory one; `MockApp.serve` is the runner's `serve`, chosen once when the mock is
built. Every call the pipeline makes of a shared state is through the state's replication
port (ports.Replication: `view`, `confirm`, `transaction`, `settle`, `run`, `off_loop`,
declared by `MockState` with its in-memory behaviour), `take_fault` and `record_request`;
the core calls `SharedSteps` at three points for a request run on a view (`routed`,
`transact`, `refused`: passed to the `Core` when it is built), and nothing else of the
pipeline knows Redis. Around the core:

    fault (drawn through the shared log, once per request, whatever reruns)
      -> core on the worker's copy (`view`: where the worker is in the log), on the event
         loop for a read, else in one of the worker's threads (`SharedMockState.run`)
      -> the read's one round trip (`settle`: confirms the copy, counts the request, records
         its journal entry) or the journal entry recorded off the loop
      -> on StaleRead (another worker appended since): caught up, run again (at most
         MAX_RERUNS times, then 503); nothing of a stale run answered or kept

The ASGI scope is handed to the shared state as the request's ticket holder: `mock.ticket`
(the connection's failures when the request came, so a request queued behind a Redis that
does not answer fails once) is set there by the session look-up in the served
`Application` and by this layer's calls alike, and `mock.off_loop` keeps a read that had to
leave the loop off it on its reruns (both replication/log.py's).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from starlette.types import Receive, Scope, Send

from .core import Core, Pure
from .errors import ApiError, StaleRead
from .exchange import BODY_METHODS, Exchange, Scanned, json_headers, read_body, send_answer
from .journal import Observed
from .layers import Layers
from .responses import error_body, message_body

if TYPE_CHECKING:
    from .sessions import SessionRegistry
    from .state import MockState
    from .storage import StorageKeys

__all__ = ["MAX_RERUNS", "Replica", "SharedSteps", "shared_sessions", "shared_state"]

MAX_RERUNS = 64  # runs of one request on a shared state's stale copy before it answers 503


def shared_state(config: Any, **parts: Any) -> MockState:
    """One worker's copy of the mock shared through Redis at `config.state` (imports
    redis-py)."""
    from .replication import shared_state as make

    state: MockState = make(config.state, namespace=config.state_namespace,
                            fixtures=config.fixtures, journal_size=config.journal_size,
                            journal_bytes=config.journal_bytes,
                            response_cache=config.response_cache, **parts)
    return state


def shared_sessions(state: MockState, config: Any, caps: dict[str, Any],
                    keys: StorageKeys) -> SessionRegistry:
    """The sessions and snapshots of a shared mock, kept in Redis too (replication/sessions.py);
    `keys` seal each session's ids and file URLs."""
    from .replication.sessions import SharedSessions
    from .replication.state import SharedMockState

    assert isinstance(state, SharedMockState)  # made by `shared_state` above
    return SharedSessions(state, storage_keys=keys, journal_size=config.journal_size,
                          journal_bytes=config.journal_bytes,
                          response_cache=config.response_cache, **caps)


class SharedSteps:
    """What the core calls for a request run on a shared state's view (`ex.view` set;
    core.SharedSteps): passed to the `Core` when it is built, never called in memory."""

    def routed(self, ex: Exchange) -> None:
        """Its round trip to Redis waits: for a write's append, else for its answer (with
        its journal entry)."""
        ex.view.deferrable = True

    def transact(self, ex: Exchange, step: Callable[[], tuple[Any, Pure | None]]
                 ) -> tuple[Any, Pure | None]:
        """The handler step as one entry of the shared log (caught up at the request's
        start), which may run `step` again."""
        return ex.state.transaction(step, fresh=False, view=ex.view)

    def refused(self, ex: Exchange, error: ApiError) -> ApiError:
        """A refusal on the worker's copy (an unknown token, record or path): that copy
        confirmed current first (one round trip; else StaleRead), or the 503 of an
        unreachable Redis."""
        try:
            ex.state.confirm(ex.view)
        except ApiError as unavailable:
            return unavailable
        return error


class Replica:
    """The replication layer of one mock, its runner (layers.Runner; see the module
    docstring)."""

    def __init__(self, core: Core, layers: Layers) -> None:
        self.core = core
        self.layers = layers
        self.config = core.config

    # -- around the core ------------------------------------------------------------------------

    async def serve(self, scope: Scope, receive: Receive, send: Send,
                    scanned: Scanned | None = None) -> None:
        """Answer one API request on a shared state: its body, its fault, the core on a
        view, its journal entry and round trip, reruns; the request log line; the answer."""
        state: MockState = scope.get("mock.state") or self.core.default
        ex = Exchange(scope, state, time.perf_counter(), scanned)
        if ex.method in BODY_METHODS:
            await read_body(ex, receive, self.config.max_body_bytes)
        await self.answer(ex)
        await send_answer(ex, send)

    async def answer(self, ex: Exchange) -> None:
        """Answer `ex` on a shared state: its fault, the core on a view, its journal entry
        and round trip, reruns; the request log line."""
        state = ex.state
        reruns = 0
        drawn = False
        while True:
            try:
                if not drawn and state.faults.rules:
                    # Fired or drawn (a probability) through the shared log, which this worker
                    # has applied up to it: once, and waited for once, whatever reruns (each
                    # draw would append another entry, and make the rerun stale in turn). A
                    # run on a copy that had no rules yet looks again on its rerun.
                    drawn = True
                    await self.layers.fire(ex, await state.off_loop(
                        state.take_fault, ex.method, ex.path, scope=ex.scope))
                latency_ms = await self.once(ex)
                break
            except StaleRead:
                reruns += 1
                if reruns < MAX_RERUNS:
                    continue
            # Other workers kept appending first (or a read kept writing): answered, not run
            # for ever (neither journaled nor logged).
            body = message_body(f"shared state busy: the request ran {reruns} times on a "
                                "copy other writes had moved; retry")
            ex.answer(503, body, json_headers(body, {"Retry-After": "1"}))
            return
        if self.layers.config.request_log:
            self.layers.log(ex, latency_ms)

    async def once(self, ex: Exchange) -> float:
        """One run of `ex` (StaleRead: run it again); its latency so far."""
        state = ex.state
        ex.view = None
        if ex.effect is None or not self.layers.injected(ex):
            await state.run(self.viewed, ex, scope=ex.scope, inline=ex.method == "GET")
        latency_ms = (time.perf_counter() - ex.started) * 1000
        entry = self.layers.observed(ex, latency_ms)
        view = ex.view
        if view is not None and view.pending:  # a read: its round trip records the entry
            if await self.settle(ex, entry) and entry is not None:
                # Refused in the round trip: the entry records what was answered instead.
                entry = self.layers.observed(ex, latency_ms)
                await state.off_loop(state.record_request, entry, scope=ex.scope)
        elif entry is not None:
            await state.off_loop(state.record_request, entry, scope=ex.scope)
        return latency_ms

    def viewed(self, ex: Exchange) -> None:
        """The core on the worker's copy as it is now (`ex.view`: where the worker is in the
        log), confirmed in the request's one round trip to Redis (with the rate-limit hit)."""
        ex.view = ex.state.view()
        self.core.answer(ex)

    async def settle(self, ex: Exchange, entry: Observed | None) -> bool:
        """A read's deferred round trip, which confirms the copy was current (else
        StaleRead), counts it and records its journal `entry`; whether it answered instead:
        the 429 when the count is over the limit, the 503 when Redis is unreachable (the
        entry then not recorded), a 500 for a bug."""
        try:
            over: ApiError | None = await ex.state.settle(ex.view, entry)
        except StaleRead:
            raise
        except ApiError as unavailable:  # Redis unreachable: 503, as any request answers
            over = unavailable
        except Exception as exc:  # a bug: answered as the core answers one
            self.core.failed(ex, exc, "settling")
            return True
        if over is None:
            return False
        body = error_body(over)
        headers = json_headers(body, over.headers)
        selfcheck, operation = self.core.selfcheck, ex.operation
        if selfcheck is not None and operation is not None and over.status_code != 503:
            selfcheck.check(operation, over.status_code, body,
                            {k.decode("latin-1"): v.decode("latin-1") for k, v in headers})
        ex.answer(over.status_code, body, headers)
        return True
