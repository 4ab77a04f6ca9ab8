"""Rate limits: 120 requests per minute per workspace by default (documented).

Requests that address no workspace (GET /v1, /v1/workspaces, /v1/models) are counted per token
at the same default rate (reference). Windows are fixed minutes on the injected clock (inferred:
the description gives only the figure), and `Retry-After` is the whole seconds until the
window ends (reference: the value is in seconds).
"""

from __future__ import annotations

import math
import threading
from collections.abc import MutableMapping

from .clock import Clock
from .errors import too_many_requests

__all__ = ["RateLimiter", "set_limit"]


def set_limit(limits: MutableMapping[str, int], workspace_id: str, per_minute: int | None) -> None:
    """Set a workspace's own limit in `limits` (a limiter's `per_workspace`, in memory or in
    Redis); None removes it (the default applies)."""
    if per_minute is None:
        limits.pop(workspace_id, None)
    else:
        limits[workspace_id] = per_minute

WINDOW_SECONDS = 60


class RateLimiter:
    def __init__(self, clock: Clock, per_minute: int = 120, *, enabled: bool = True) -> None:
        self.clock = clock
        self.default = per_minute
        self.enabled = enabled and per_minute > 0
        self.per_workspace: dict[str, int] = {}
        self._windows: dict[tuple[str, str], list[float]] = {}  # [start, count]
        self._lock = threading.Lock()

    def configure(self, *, per_minute: int | None = None, enabled: bool | None = None) -> None:
        if per_minute is not None:
            self.default = per_minute
        if enabled is not None:
            self.enabled = enabled
        if per_minute is not None and enabled is None:
            self.enabled = per_minute > 0

    def set_workspace_limit(self, workspace_id: str, per_minute: int | None) -> None:
        """A workspace's own limit (plans with higher limits); None returns it to the default."""
        set_limit(self.per_workspace, workspace_id, per_minute)

    def limit_for(self, kind: str, ident: str) -> int:
        if kind == "workspace":
            return self.per_workspace.get(ident, self.default)
        return self.default

    def reset(self) -> None:
        with self._lock:
            self._windows.clear()

    def hit(self, kind: str, ident: str) -> None:
        """Count one request against `kind` (workspace | token); raise 429 past the limit."""
        if not self.enabled:
            return
        # limit_for and clock.monotonic, inlined (every request passes here).
        limit = self.per_workspace.get(ident, self.default) if kind == "workspace" else self.default
        if limit <= 0:
            return
        now = self.clock.now_ms() / 1000
        key = (kind, ident)
        with self._lock:
            window = self._windows.get(key)  # [start, count], changed in place
            # A clock moved back before the window's start opens a fresh window: a window
            # never lasts longer than its length on the mock's clock (DECISIONS H24).
            if window is None or not 0 <= now - window[0] < WINDOW_SECONDS:
                window = self._windows[key] = [now, 0]
            if window[1] >= limit:
                retry_after = max(1, math.ceil(window[0] + WINDOW_SECONDS - now))
                raise too_many_requests(retry_after, limit, kind)
            window[1] += 1
