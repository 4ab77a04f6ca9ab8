"""The ports of a mock's state: what the pipeline and every caller outside the engine use of
the parts that differ between a state held in this process and one shared through Redis
(replication/). Each port has an in-memory and a Redis implementation, passed in when the
state is built (composition, `MockState(parts=...)`), and mypy checks both against it (the
`type[...]` assignments at the end of each implementing module):

| port | what it is | in memory | shared through Redis |
|---|---|---|---|
| `JournalPort` | the request journal | `journal.Journal` | `replication/parts.RedisJournal` |
| `LimiterPort` | rate-limit windows and limits | `ratelimit.RateLimiter` | `replication/parts.RedisRateLimiter` |
| `Replication` | how a state's operations reach the other workers: one way to run a state operation (`off_loop`, `run`), a request's view and its round trip (`view`, `confirm`, `settle`, `transaction`), keys shared by every worker, closing | `state.MockState` (inline: no other worker) | `replication/state.SharedMockState` |
| `sessions.SessionRegistry` | sessions and snapshots | `sessions.Sessions` | `replication/sessions.SharedSessions` |
| `layers.Runner` | the pipeline's route for one request (`MockApp.serve`) | `app.LocalRunner` | `replica.Replica` |

(The last two are declared beside the code they are over: the registry's speaks of states,
the runner's of the pipeline, which this module, imported by `state.py`, may not import.)

Callers never ask which implementation they hold: `await state.off_loop(fn, ...)` runs `fn`
at once in memory and in one of the worker's threads on Redis (the event loop never waits
for Redis); a capability a shared state lacks is refused by the state itself
(`MockState.check_local`, a 409 naming why).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, MutableMapping
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

if TYPE_CHECKING:
    from .errors import TooManyRequests
    from .journal import JournalEntry, Observed
    from .pagination import CursorCodec
    from .storage import StorageKeys

__all__ = ["JournalPort", "LimiterPort", "Replication"]

T = TypeVar("T")


class JournalPort(Protocol):
    """The request journal (journal.py's `Journal`'s interface): bounded by entries
    (`maxlen`) and bytes (`max_bytes`); `recorded` moves whenever an entry is added."""

    maxlen: int
    max_bytes: int
    enabled: bool

    def record(self, observed: Observed, variations: tuple[int, ...] = ()) -> None: ...

    def clear(self) -> int: ...

    @property
    def dropped(self) -> int: ...

    @property
    def recorded(self) -> int: ...

    @property
    def kept_bytes(self) -> int: ...

    def drop_oldest(self, nbytes: int) -> int: ...

    def __len__(self) -> int: ...

    def __iter__(self) -> Iterator[JournalEntry]: ...

    def entries(self, *, method: str | None = None, path: str | None = None,
                status: int | None = None, after: int | None = None) -> list[JournalEntry]: ...


class LimiterPort(Protocol):
    """Rate-limit windows and limits (ratelimit.py's `RateLimiter`'s interface)."""

    @property
    def default(self) -> int: ...

    @property
    def enabled(self) -> bool: ...

    @property
    def per_workspace(self) -> MutableMapping[str, int]: ...

    def configure(self, *, per_minute: int | None = None,
                  enabled: bool | None = None) -> None: ...

    def set_workspace_limit(self, workspace_id: str, per_minute: int | None) -> None: ...

    def limit_for(self, kind: str, ident: str) -> int: ...

    def reset(self) -> None: ...

    def hit(self, kind: str, ident: str) -> None: ...


class Replication(Protocol):
    """How a state's operations reach the other workers sharing it (none in memory). The
    pipeline's replication layer (replica.py) and the callers outside the engine use these;
    in memory each is immediate or does nothing."""

    replicated: bool  # whether other workers share it (tests, diagnostics): nothing branches on it

    def sync(self) -> None: ...

    async def off_loop(self, fn: Callable[..., T], *args: Any,
                       scope: MutableMapping[str, Any] | None = None) -> T: ...

    async def run(self, fn: Callable[..., T], *args: Any, scope: MutableMapping[str, Any],
                  inline: bool) -> T: ...

    def view(self) -> Any: ...

    def confirm(self, view: Any) -> None: ...

    async def settle(self, view: Any, entry: Observed | None) -> TooManyRequests | None: ...

    def transaction(self, fn: Callable[[], T], *, fresh: bool = True,
                    view: Any = None) -> T: ...

    def use_cursors(self, codec: CursorCodec) -> None: ...

    def use_storage_keys(self, keys: StorageKeys) -> None: ...

    def check_local(self, what: str) -> None: ...

    @property
    def namespace(self) -> str | None: ...

    def close(self, *, drop: bool = False) -> None: ...
