"""The layers around the core (core.py) of an in-memory state, and what a shared state's
layer (replica.py) uses of them: faults before the core, the journal and the request log
after it.

    fault (faults.py: a fired rule's `Effect` waits, may answer in the core's place)
      -> core (unless a fault answered) -> journal entry (`journal.Observed`), request log

Each layer is checked once per request and costs nothing while off: a state with no fault
rules, no journal and no request log runs the bare core.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Protocol

from starlette.types import Receive, Scope, Send

from .core import Core
from .exchange import Exchange, Scanned
from .faults import FaultRule
from .journal import Observed
from .requestlog import REQUEST_LOGGER, log_request

__all__ = ["Layers", "Runner"]

# Requests a browser makes on its own (icons, robots, well-known probes): answered, but never
# journaled, so the inspector shows what clients sent.
_NOISE_PREFIXES = ("/favicon", "/apple-touch-icon", "/robots.txt", "/.well-known/")


class Runner(Protocol):
    """The pipeline's route for one API request (`MockApp.serve` is its runner's `serve`):
    read the body, the layers and the core, send. In memory `app.LocalRunner` runs them
    inline; on a shared state `replica.Replica` runs the same layers and core around a
    view of the shared log."""

    def serve(self, scope: Scope, receive: Receive, send: Send,
              scanned: Scanned | None = None) -> Awaitable[None]: ...


class Layers:
    """Faults, journal and request log around one `Core` (`Config.request_log`)."""

    def __init__(self, core: Core) -> None:
        self.core = core
        self.config = core.config

    # -- before: faults ---------------------------------------------------------------------

    async def fault(self, ex: Exchange) -> None:
        """The fault rule that fires for `ex` on an in-memory state (its count consumed)."""
        await self.fire(ex, ex.state.take_fault(ex.method, ex.path))

    async def fire(self, ex: Exchange, rule: FaultRule | None) -> None:
        """The rule that fired for `ex` (if any): its effect kept, and waited for."""
        if rule is not None:
            ex.effect = effect = rule.effect()
            ex.fault = rule.describe()
            await effect.wait()

    def injected(self, ex: Exchange) -> bool:
        """Whether the fault's effect answered `ex` in the core's place (never self-checked:
        injected on purpose); the operation is named all the same, for the journal."""
        found = ex.effect.answer() if ex.effect is not None else None
        if found is None:
            return False
        ex.answer(*found)
        self.core.name_operation(ex)
        return True

    # -- after: journal and request log -------------------------------------------------------

    def observed(self, ex: Exchange, latency_ms: float) -> Observed | None:
        """The journal entry of `ex` (None: the journal is off, or browser noise)."""
        state = ex.state
        if not state.journal.enabled or ex.path.startswith(_NOISE_PREFIXES):
            return None
        operation = ex.operation
        ignored = ex.ignored
        if ignored is None:
            ignored = self.core.ignored(ex)
        return (
            state.clock.now_ms(), ex.method, ex.path, ex.query_string, ex.scope["headers"],
            ex.body, ex.status, ex.response, latency_ms,
            None if operation is None else operation.operation_id, ex.fault, ignored,
            ex.header_bytes)

    def log(self, ex: Exchange, latency_ms: float) -> None:
        """The request log's line for `ex`, when its logger is on (`Config.request_log` is
        checked by the caller)."""
        if REQUEST_LOGGER.isEnabledFor(20):  # a cached check of the logger's level
            fault = ex.fault
            if ex.varied and fault is None:  # a robustness plan's items name themselves
                fault = "variations " + ", ".join(map(str, ex.varied))
            log_request(ex.method, ex.path, ex.status, latency_ms, ex.authorization,
                        fault=fault, ignored=self.core.ignored(ex))
