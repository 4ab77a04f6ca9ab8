"""Sessions: many isolated mock states in one server, over one shared seed.

A session is a complete `MockState` (state.py): its own store layer (copy-on-write over the
shared seed or over a saved snapshot), ids, clock, journal, faults, rate-limit windows and
response cache. The dataset, its seed tables and their indexes are shared, so creating a
session or forking a snapshot costs the same on any dataset size.

A request names its session by a base URL prefix, `/sessions/{name}` in front of `/v1/...`
(or of `/__mock__/...` and `/__storage__/...`), or by the header `X-Mock-Session: {name}` for
clients that cannot change paths. Without either it goes to the default session, which is
the server's own state (`MockApp.state`) and behaves as a mock without sessions always has.

`Sessions` is the registry: create (from the seed or a snapshot), look up, list, delete,
save and delete snapshots, expire idle sessions, and refuse past its caps (number of
sessions; memory held by sessions' and snapshots' changes) with nothing half-created.

Sessions
--------

`sessions.py` holds many states in one server. Each session is a `MockState` whose store is a
copy-on-write layer (store.py: `Store(base)`) over the `Shared` seed of the loaded dataset
(tables, lazily built indexes, tokens, plan limits), or over a `StateSnapshot` saved from
another session (`Store.snapshot()`: O(changes)); creating or forking one is O(1) whatever the
dataset's size. `Application.__call__` picks the session before anything else: the path prefix
`/sessions/{name}` (stripped, so routing, the control API, storage and docs see ordinary paths)
or the `X-Mock-Session` header; it puts the session's state in the scope (`mock.state`), and
`MockApp.state_for(scope)` hands it to the pipeline, the control API and storage. No prefix or
header: the default session, `MockApp.state`. `MockApp.base_url_of(state)` is where a state is
served, so URLs a handler hands out (upload URLs, file URLs) point back into the session. The
registry (`Sessions`) creates, forks, deletes and expires sessions and saves snapshots, and
refuses past its caps before creating anything. The pytest plugin opens a session per test
(`MockServer.open_session`, tens of microseconds: a `MockState` over the shared seed) instead
of resetting one shared state, named `t{n}-` and 16 characters of the test's name (the name is
in every URL of the test's client, and httpx checks URLs character by character); with
`--mock-api-share-server` the xdist controller runs the server and workers reach it over HTTP.
`tests/reliability/test_sessions_isolation.py` drives random writes, clock moves and faults
through several sessions at once (threads, event loops, sockets, in-process transports, prefix
and header) and checks that each reads exactly its own history.

A handler's `Context` carries the request, the store of its state, `base_url` (where that
state is served) and `Services` (cursor codec, schema fields, the document's resource paths):
no reference to the application.

Dependencies point one way: `handlers` → `context` → `store`/`pagination`/`errors`;
`app` → `sessions` → `state` → `store`/`clock`/`ratelimit`/`journal`/`faults`/`cache`;
`app` → everything;
`app` → `state` → `commands` → `store`; `state` → `store`/`clock`/`ratelimit`/`journal`/`faults`/`cache`;
`replication` → `state`, `sessions`, `commands` (imported by `app` only when `Config.state` is
set); inside it `sessions` → `state` → `parts` → `log` → `batch` → `transport`, and `log` → `codec`, `lua`; `store`, `clock`,
`errors` import nothing of ours but each other.
The store has no HTTP in it; handlers hold no state.
"""

from __future__ import annotations

import itertools
import re
import secrets
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from .errors import ApiError, BadRequest, Conflict, NotFound
from .exchange import SESSION_HEADER
from .state import MockState, Settings, StateSnapshot

__all__ = ["DEFAULT_SESSION", "SESSION_HEADER", "SESSION_PREFIX", "SessionDescription",
           "SessionLimit", "SessionRegistry", "Sessions", "split_session_path"]

DEFAULT_SESSION = "default"
SESSION_PREFIX = "/sessions/"
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
T = TypeVar("T")


class SessionLimit(ApiError):
    """A cap of the session registry reached: nothing was created (507 Insufficient Storage)."""

    status_code = 507
    reason = "cap_reached"


def split_session_path(path: str) -> tuple[str, str] | None:
    """`/sessions/{name}/rest` -> (name, "/rest"); None when the path names no session."""
    if not path.startswith(SESSION_PREFIX):
        return None
    name, slash, rest = path[len(SESSION_PREFIX):].partition("/")
    return name, slash + rest


def check_name(name: str, what: str = "session") -> str:
    if not _NAME.fullmatch(name):
        raise BadRequest(f"{what} name {name!r}: use 1-64 letters, digits, '.', '_' or '-', "
                         "starting with a letter or digit")
    return name


def unknown_session(name: str, idle_seconds: float) -> NotFound:
    """The 404 of a request naming a session that does not exist."""
    if not _NAME.fullmatch(name):
        return NotFound(f"no session {name!r} (session names are 1-64 letters, digits, '.', "
                        "'_' or '-')", reason="no_session")
    return NotFound(f"no session {name!r}: create it with POST /__mock__/sessions (sessions "
                    f"expire after {idle_seconds:g} s without requests)", reason="no_session")


def session_cap(max_sessions: int) -> SessionLimit:
    return SessionLimit(f"session cap reached: {max_sessions} sessions exist; delete some "
                        "(DELETE /__mock__/sessions/{name}) or start the server with a higher "
                        "--max-sessions")


def memory_cap(held: int, max_change_bytes: int) -> SessionLimit:
    return SessionLimit(
        f"session memory cap reached: sessions and snapshots (changed records, journals, "
        f"uploaded files, cached answers) would hold {held} bytes, past the cap of "
        f"{max_change_bytes} ({max_change_bytes / 1048576:g} MiB); delete sessions or "
        "snapshots, or start the server with a higher --max-session-memory")


def _wall() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _record_bytes(state: MockState) -> int:
    """The memory one changed record holds, estimated once from a sample of the seed: the
    dict and its values, plus the layer's and its indexes' entries for it. Only sessions on
    shared state (replication/sessions.py) count by it; in memory a changed record counts
    exactly (store.entry_bytes, DECISIONS H37)."""
    sizes = []
    for rows in state.dataset.tables.values():
        for record in itertools.islice(rows.values(), 20):  # not a list of the table
            size = sys.getsizeof(record)
            for key, value in record.items():
                size += sys.getsizeof(key) + sys.getsizeof(value)
                if isinstance(value, list | dict):
                    size += sum(sys.getsizeof(v) for v in value)
            sizes.append(size)
    average = sum(sizes) // len(sizes) if sizes else 512
    return average + 256


@dataclass
class SessionInfo:
    """A session in the registry: its state and bookkeeping (the registry's, not the state's)."""

    name: str
    state: MockState
    created_at: str
    forked_from: str | None  # a snapshot's name; None: the seed
    last_used: float  # time.monotonic() of its last request
    trimmed_at: int = 0  # its journal's `recorded` when `Sessions.resolve` last trimmed it
    journal_bytes: int = 0  # its journal's `kept_bytes` then

    def to_dict(self, record_bytes: int = 0) -> dict[str, Any]:
        """Its description (`record_bytes`: the estimate shared-state sessions count by;
        unused here, where changed records count exactly)."""
        state = self.state
        return {"name": self.name, "created_at": self.created_at,
                "forked_from": self.forked_from, "changes": state.changes,
                # the changed records' and the uploaded files' bytes (DECISIONS H35, H37)
                "change_bytes": state.store.held + state.files.size,
                "requests": len(self.state.journal),
                "idle_seconds": round(time.monotonic() - self.last_used, 3)}


class SessionDescription(Protocol):
    """A session as the registry describes it (`sessions.SessionInfo`,
    `replication/sessions.SharedSessionInfo`)."""

    name: str
    created_at: str
    forked_from: str | None

    @property
    def state(self) -> MockState: ...

    def to_dict(self, record_bytes: int) -> dict[str, Any]: ...


class SessionRegistry(Protocol):
    """The sessions and snapshots of one server (`sessions.Sessions`, the in-memory one;
    `replication/sessions.SharedSessions`, the registry in Redis)."""

    @property
    def default(self) -> MockState: ...

    max_sessions: int
    max_change_bytes: int
    idle_seconds: float
    create_on_use: bool
    record_bytes: int

    def resolve(self, name: str, create: bool = True) -> MockState: ...

    def resolve_on_loop(self, name: str, create: bool = True) -> MockState | None: ...

    def create(self, name: str | None = None, *, snapshot: str | None = None,
               settings: Settings | None = None) -> SessionDescription: ...

    def get(self, name: str) -> SessionDescription | None: ...

    def state(self, name: str) -> MockState: ...

    def names(self) -> list[str]: ...

    def all(self) -> Sequence[SessionDescription]: ...

    def __len__(self) -> int: ...

    def delete(self, name: str) -> None: ...

    def clear(self) -> int: ...

    def expire_idle(self, now: float | None = None) -> list[str]: ...

    def save_snapshot(self, name: str, session: str = ..., *,
                      replace: bool = False) -> StateSnapshot: ...

    def snapshot(self, name: str) -> StateSnapshot: ...

    def snapshots(self) -> list[dict[str, Any]]: ...

    def describe_snapshot(self, snap: StateSnapshot) -> dict[str, Any]: ...

    def delete_snapshot(self, name: str) -> None: ...

    def change_bytes(self) -> int: ...

    def held_bytes(self) -> int: ...

    def check_room(self, state: MockState, extra_bytes: int) -> None: ...

    def admit(self, state: MockState, run: Callable[[], T]) -> T: ...

    def check_held(self, state: MockState) -> None: ...


class Sessions:
    """The sessions of one server, and its snapshots, in this process (the in-memory
    `SessionRegistry` above; replication/sessions.py's `SharedSessions` is the one in
    Redis). Thread-safe."""

    def __init__(
        self,
        default: MockState,
        make_state: Callable[[str, Settings | None, StateSnapshot | None], MockState],
        *,
        max_sessions: int = 10_000,
        max_change_bytes: int = 512 * 1024 * 1024,
        idle_seconds: float = 3600.0,
        create_on_use: bool = False,
    ) -> None:
        self.default = default
        self._make_state = make_state
        self.max_sessions = max_sessions
        self.max_change_bytes = max_change_bytes
        self.idle_seconds = idle_seconds
        self.create_on_use = create_on_use
        self._sessions: dict[str, SessionInfo] = {}
        self._snapshots: dict[str, StateSnapshot] = {}
        self._snapshot_times: dict[str, str] = {}
        self._lock = threading.Lock()
        self._last_sweep = time.monotonic()
        self.record_bytes = _record_bytes(default)
        # The memory estimate walks every session: recomputed at most this often (seconds).
        self.memory_check_interval = 0.05
        self._held: tuple[float, int] = (-1e9, 0)

    # -- requests -----------------------------------------------------------------------------

    def resolve(self, name: str, create: bool = True) -> MockState:
        """The state a request names (its use noted for idle expiry); 404 for an unknown name
        (unless sessions are created on first use, and `create`: the caller may, H17)."""
        if name == DEFAULT_SESSION:
            return self.default
        now = time.monotonic()
        if now - self._last_sweep > 1.0:
            self.expire_idle(now)
        info = self._sessions.get(name)
        if info is None:
            if not (self.create_on_use and create):
                raise unknown_session(name, self.idle_seconds)
            try:
                info = self.create(name)
            except Conflict:  # created by a concurrent request meanwhile
                info = self._sessions.get(name)
                if info is None:  # ... and deleted or expired since
                    raise NotFound(f"no session {name!r}", reason="no_session") from None
        info.last_used = now
        state = info.state
        recorded = state.journal.recorded
        if recorded != info.trimmed_at:  # entries added since the last look: trim, if past
            info.trimmed_at = recorded
            self._trim_journal(info, now)
        return state

    def resolve_on_loop(self, name: str, create: bool = True) -> MockState:
        """`resolve`: in memory it never waits (a shared registry may, and answers None)."""
        return self.resolve(name, create)

    # -- sessions -----------------------------------------------------------------------------

    def create(self, name: str | None = None, *, snapshot: str | None = None,
               settings: Settings | None = None) -> SessionInfo:
        """A new session over the seed, or forked from a snapshot. Refused (nothing created)
        when the name is taken or invalid, the snapshot unknown, or a cap reached."""
        if name is None:
            name = f"s-{secrets.token_hex(6)}"
        check_name(name)
        if name == DEFAULT_SESSION:
            raise Conflict(f"session {name!r} already exists (the server's own state)")
        now = time.monotonic()
        if now - self._last_sweep > 1.0:
            self.expire_idle(now)
        with self._lock:
            if name in self._sessions:
                raise Conflict(f"session {name!r} already exists")
            base = None
            if snapshot is not None:
                base = self._snapshots.get(snapshot)
                if base is None:
                    raise NotFound(f"no snapshot {snapshot!r}")
            if len(self._sessions) >= self.max_sessions:
                raise session_cap(self.max_sessions)
            self._check_memory()
            state = self._make_state(name, settings, base)
            info = SessionInfo(name, state, _wall(), snapshot, time.monotonic())
            self._sessions[name] = info
        return info

    def get(self, name: str) -> SessionInfo | None:
        return self._sessions.get(name)

    def state(self, name: str) -> MockState:
        """A session's state by name (the default included); 404 when unknown."""
        if name == DEFAULT_SESSION:
            return self.default
        info = self._sessions.get(name)
        if info is None:
            raise NotFound(f"no session {name!r}", reason="no_session")
        return info.state

    def names(self) -> list[str]:
        return [DEFAULT_SESSION, *self._sessions]

    def all(self) -> list[SessionInfo]:
        self.expire_idle()
        return list(self._sessions.values())

    def __len__(self) -> int:
        return len(self._sessions)

    def delete(self, name: str) -> None:
        if name == DEFAULT_SESSION:
            raise Conflict("the default session cannot be deleted (reset it instead)")
        with self._lock:
            if self._sessions.pop(name, None) is None:
                raise NotFound(f"no session {name!r}", reason="no_session")

    def clear(self) -> int:
        """Delete every session (not the default) and every snapshot."""
        with self._lock:
            count = len(self._sessions)
            self._sessions.clear()
            self._snapshots.clear()
            self._snapshot_times.clear()
        return count

    def expire_idle(self, now: float | None = None) -> list[str]:
        """Delete sessions idle for longer than `idle_seconds` (0: never)."""
        now = time.monotonic() if now is None else now
        self._last_sweep = now
        if not self.idle_seconds:
            return []
        with self._lock:
            expired = [name for name, info in self._sessions.items()
                       if now - info.last_used > self.idle_seconds]
            for name in expired:
                del self._sessions[name]
        return expired

    # -- snapshots ----------------------------------------------------------------------------

    def save_snapshot(self, name: str, session: str = DEFAULT_SESSION, *,
                      replace: bool = False) -> StateSnapshot:
        """Save a session's current state under `name` (409 when taken, unless `replace`)."""
        check_name(name, "snapshot")
        state = self.state(session)
        with self._lock:
            if name in self._snapshots and not replace:
                raise Conflict(f"snapshot {name!r} already exists")
            snap = state.snapshot(name)
            # Counted exactly with it saved (one it replaces freed, unless forks keep it).
            replaced = self._snapshots.get(name)
            self._snapshots[name] = snap
            held = self.held_bytes()
            if held > self.max_change_bytes:
                if replaced is None:
                    del self._snapshots[name]
                else:
                    self._snapshots[name] = replaced
                raise memory_cap(held, self.max_change_bytes)
            self._snapshot_times[name] = _wall()
        return snap

    def snapshot(self, name: str) -> StateSnapshot:
        found = self._snapshots.get(name)
        if found is None:
            raise NotFound(f"no snapshot {name!r}")
        return found

    def snapshots(self) -> list[dict[str, Any]]:
        return [self.describe_snapshot(s) for s in list(self._snapshots.values())]

    def describe_snapshot(self, snap: StateSnapshot) -> dict[str, Any]:
        return {"name": snap.name, "session": snap.source,
                "created_at": self._snapshot_times.get(snap.name, ""),
                "changes": snap.changes, "change_bytes": snap.held}

    def delete_snapshot(self, name: str) -> None:
        """Forget a snapshot (sessions forked from it keep their base, and its bytes stay
        counted until the last of them goes)."""
        with self._lock:
            if self._snapshots.pop(name, None) is None:
                raise NotFound(f"no snapshot {name!r}")
            self._snapshot_times.pop(name, None)

    # -- memory -------------------------------------------------------------------------------

    def change_bytes(self) -> int:
        """The bytes held by the changes of every session and snapshot: their changed
        records (exactly: `store.entry_bytes` of each version held, DECISIONS H37) and the
        sessions' uploaded files (the sum of the sessions' and snapshots' `change_bytes`)."""
        sessions = list(self._sessions.values())
        held = sum(info.state.store.held + info.state.files.size for info in sessions)
        # Each snapshot's delta once, while it is saved or a session is forked from it (a
        # fork keeps its base when the snapshot is deleted: DECISIONS H37).
        bases = {id(snap.base.delta): snap.held for snap in list(self._snapshots.values())}
        for info in sessions:
            delta = info.state.store.base_delta
            if delta is not None:
                bases[id(delta)] = delta.held
        return held + sum(bases.values())

    def held_bytes(self) -> int:
        """What the memory cap counts: everything sessions and snapshots keep, in bytes by
        one definition (DECISIONS H37): their changed records and uploaded files
        (`change_bytes`), their journals' entries and bodies and their cached answers."""
        held = self.change_bytes()
        for info in list(self._sessions.values()):
            state = info.state
            held += state.journal.kept_bytes + state.cache.bytes
        return held

    def _check_memory(self) -> None:
        """Before creating a session (which holds nothing yet): refused when the sessions
        are at the cap already: counted now (exact, no estimate: a deletion frees its bytes
        for the next creation at once)."""
        held = self.held_bytes()
        if held >= self.max_change_bytes:
            raise memory_cap(held, self.max_change_bytes)

    def admit(self, state: MockState, run: Callable[[], T]) -> T:
        """Run a session's write (`run`) as one transaction of its store, admitted on what
        the sessions hold once it is done: past the cap, everything it changed (records,
        files) is taken back and it is refused (507). The default session and shared-state
        sessions (capped in replication/sessions.py: another registry) run `run()` as it is."""
        if state is self.default:
            return run()
        return state.all_or_nothing(run, lambda: self.check_held(state))

    def check_held(self, state: MockState) -> None:
        """After a session's write, before it is kept (inside its transaction): 507 when
        what the sessions hold now is past the cap, by a single byte (the caller takes the
        write back). Counted now, never an estimate refreshed by time (H35, H37)."""
        if state is self.default:
            return
        held = self.held_bytes()
        if held > self.max_change_bytes:
            raise memory_cap(held, self.max_change_bytes)
        self._held = (time.monotonic(), held)

    def check_room(self, state: MockState, extra_bytes: int) -> None:
        """Before a session's upload is stored: refused (507, nothing written) when its
        `extra_bytes` alone would take the sessions past the memory cap (`admit` then
        decides on the file and its records together). The default session is not capped."""
        if state is self.default:
            return
        # Counted now, not the estimate of up to `memory_check_interval` ago: an admission
        # never depends on timing (DECISIONS H35: a stale estimate refused an upload under
        # the cap on a loaded machine).
        held = self.held_bytes()
        self._held = (time.monotonic(), held)
        if held + extra_bytes > self.max_change_bytes:
            raise memory_cap(held, self.max_change_bytes)

    def _trim_journal(self, info: SessionInfo, now: float) -> None:
        """Past the cap, a session's journal gives up its oldest entries (its requests keep
        being answered): journals never hold the cap's memory for long. Called by `resolve`
        only when the journal gained entries since its last call."""
        state = info.state
        # The estimate follows the journal's growth byte for byte (no clock decides when a
        # journal past the cap gives way: DECISIONS H35); the walk over every session runs
        # when the estimate reaches the cap, or at most every `memory_check_interval`.
        kept = state.journal.kept_bytes
        checked_at, held = self._held
        held += kept - info.journal_bytes
        if held >= self.max_change_bytes or now - checked_at >= self.memory_check_interval:
            checked_at, held = now, self.held_bytes()
        excess = held - self.max_change_bytes
        if excess > 0:
            held -= state.journal.drop_oldest(excess)
        self._held = (checked_at, held)
        info.journal_bytes = state.journal.kept_bytes


if TYPE_CHECKING:  # the in-memory implementation of the port above
    _PORT: type[SessionRegistry] = Sessions
