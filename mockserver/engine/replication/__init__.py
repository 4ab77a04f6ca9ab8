"""Replication: one mock served by several workers and processes through Redis.

Imported only when `Config.state` names a Redis (the in-memory default never imports it, nor
redis-py). See log.py's docstring for how the log works, ARCHITECTURE.md ("Replication") for
the pieces and which way they depend.
"""

from __future__ import annotations

from .log import SharedLog
from .state import SharedMockState, shared_state
from .transport import SharedStateError, StateUnavailable

__all__ = ["SharedLog", "SharedMockState", "SharedStateError", "StateUnavailable",
           "shared_state"]
