"""Sessions and snapshots of a mock shared through Redis (log.py): one registry for every
worker and process of the namespace.

Redis holds, under the namespace's prefix `mock:{namespace}:`:

| key | what it is |
|---|---|
| `sessions` (hash) | the registry: name -> the session's creation (an incarnation id, created_at, the snapshot it was forked from and that snapshot's stored id, the settings, the dataset) |
| `changes` (hash) | name -> records the session holds beyond its base; `snap:<name>` -> a snapshot's: the memory cap |
| `session:{name}:log`, `:last`, `:epoch`, `:journal`, `:windows`, `:limits` ... | the session's own log and Redis structures, as the default session's under the bare prefix; `:used`, the time (Redis's clock, ms) of its last request on any worker, for idle expiry |
| `snapshots` (hash), `snapshot:<id>`, `snaprefs` (hash) | snapshot name -> its description and stored id; the serialized snapshot (snapshots.py); how many hold each stored id (the name, and each session forked from it) |

Creating, deleting, expiring and clearing sessions and saving or deleting snapshots are each
one Lua script, so the caps (507) and name conflicts (409) hold across workers and nothing is
half-created. A session's epoch is its incarnation id: deleting it removes its keys with its
registry entry in the same script.

Each worker materialises a session the first time a request names it: a `SessionState`, the
shared state of log.py over the session's keys, whose store is a copy-on-write layer over
the shared seed (or over the snapshot it was forked from, decoded once per worker and shared
by every fork of it). Before answering, the worker catches the session's log up with a script
that also checks the session is still registered (and notes its use): a session deleted
through another worker answers 404 on this one, and one deleted and created again under the
same name is rebuilt from its new registration. A write in a session is appended only while
the session's epoch is the worker's, so a write can never land in a session deleted or
re-created meanwhile.
"""

from __future__ import annotations

import contextlib
import dataclasses
import secrets
import threading
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import orjson

from ..commands import Command, LoadDataset, Reset
from ..errors import Conflict, NotFound
from ..sessions import (
    DEFAULT_SESSION,
    SessionRegistry,
    _record_bytes,
    _wall,
    check_name,
    memory_cap,
    session_cap,
    unknown_session,
)
from ..state import MockState, Settings, Shared, StateSnapshot
from ..storage import StorageKeys
from ..store import Base
from .log import _APPEND, _SYNC, SharedLog
from .lua import script
from .snapshots import decode_snapshot, encode_snapshot, snapshot_dataset
from .state import SharedMockState
from .transport import StateUnavailable

T = TypeVar("T")

__all__ = ["SESSION_KEYS", "SessionState", "SharedSessions"]

# The keys of one session, after `mock:{namespace}:session:{name}:`.
SESSION_KEYS = ("log", "last", "epoch", "journal", "jsizes", "jmeta", "windows", "limits", "meta",
                "used")

# The registry's scripts (lua/*.lua), each after the functions they share (`session_lib`).
_SUFFIXES = ", ".join(f"'{k}'" for k in SESSION_KEYS)
_CREATE = script("session_lib", "session_create", SESSION_SUFFIXES=_SUFFIXES)
_DELETE = script("session_lib", "session_delete", SESSION_SUFFIXES=_SUFFIXES)
_EXPIRE = script("session_lib", "session_expire", SESSION_SUFFIXES=_SUFFIXES)
_CLEAR = script("session_lib", "session_clear", SESSION_SUFFIXES=_SUFFIXES)
_SAVE = script("session_lib", "snapshot_save", SESSION_SUFFIXES=_SUFFIXES)
_DELETE_SNAPSHOT = script("session_lib", "snapshot_delete", SESSION_SUFFIXES=_SUFFIXES)
_CHANGES = script("session_changes")  # a session's changes noted (not for one deleted)
# Before log.py's `_SYNC`, for a session: still registered? (its use noted); before its
# append: only into the incarnation the worker is in.
_SESSION_SYNC_PRELUDE = script("session_sync")
_SESSION_GUARD = script("session_guard")


def _pairs(raw: Any) -> dict[bytes, bytes]:
    """An HGETALL reply as a dict (a flat list on the worker's raw connection)."""
    if isinstance(raw, dict):
        return raw
    return dict(zip(raw[::2], raw[1::2], strict=True))


def _now_ms() -> int:
    return int(time.time() * 1000)


class SessionLog(SharedLog):
    """The log of one session: its keys under `session:{name}:`; its Redis calls go through
    the default session's log (the worker's one connection, under that log's lock)."""

    def __init__(self, state: SessionState, sessions: SharedSessions, name: str) -> None:
        default = sessions.default.log
        super().__init__(state, default.url, default.namespace, connection=default.connection,
                         prefix=f"{default.prefix}session:{name}:")
        self.default = default
        self.sessions = sessions
        self.name = name
        self.session_state = state
        self.compact_after = default.compact_after
        self.keys["used"] = self.prefix + "used"
        self.sync_script = sessions.session_sync
        self._append = sessions.session_append
        self.sync_keys = [*self.sync_keys, self.keys["used"]]
        self.incoming = ""  # the epoch of the reply being applied
        self.guarded = True  # its journal entries are dropped once it is deleted

    def gone(self) -> NotFound:
        self.sessions.forget(self.name, self.session_state)
        return NotFound(f"no session {self.name!r}", reason="no_session")

    # -- Redis calls: the default's connection ---------------------------------------------------

    def call(self, script: Any, keys: list[str], args: list[Any],
             *before: tuple[Any, ...]) -> Any:
        reply = super().call(script, keys, args, *before)
        if script is self.sync_script and len(reply) == 1:
            raise self.gone()
        return reply

    def outcome(self, view: Any, count: tuple[str, str] | None, reply: list[Any],
                now_ms: int, *, answer: bool, absorb: bool = True) -> Any:
        if len(reply) == 1:  # a batched read's reply (`call` checks its own)
            raise self.gone()
        return super().outcome(view, count, reply, now_ms, answer=answer, absorb=absorb)

    def start(self, settings: dict[str, str], limits: dict[str, Any]) -> None:
        self.catch_up()  # the registry entry set its epoch and limits

    def close(self) -> None:
        pass  # the connection is the default session's

    def restarted(self) -> None:
        pass  # a session created again: the namespace (and its cursor secret) is the same

    # -- incarnations ----------------------------------------------------------------------------

    def _absorb(self, reply: list[Any], wanted: str | None = None) -> tuple[bool, Any]:
        self.incoming = reply[0].decode()
        if not self.epoch and self.incoming != self.session_state.incarnation:
            self.session_state.adopt_current(self.incoming)  # created again since looked up
        return super()._absorb(reply, wanted)

    def append(self, fields: list[Any], *, expected: str, base: bool = False,
               limits: dict[str, Any] | None = None,
               count: tuple[str, str] | None = None) -> tuple[bool, str]:
        ok, last = super().append(fields, expected=expected, base=base, limits=limits,
                                  count=count)
        if not ok and last == "gone" and expected == "*":
            raise self.gone()
        return ok, last  # a write that lost: its retry catches up and meets the 404

    def commit(self, tx: Any, count: tuple[str, str] | None = None) -> bool:
        ok = super().commit(tx, count)
        if ok:
            self.sessions.note_changes(self.name, self.session_state)
        return ok


class SessionState(SharedMockState):
    """One worker's copy of a shared session (see the module docstring)."""

    def __init__(self, sessions: SharedSessions, name: str, entry: dict[str, Any],
                 shared: Shared, base: Base, settings: Settings) -> None:
        self.sessions = sessions
        self.incarnation: str = entry["id"]
        self.entry = entry
        default = sessions.default
        super().__init__(shared, settings, url=default.log.url,
                         namespace=default.log.namespace, name=name, base=base,
                         dataset_key=entry["dataset"],
                         log=self._session_log,
                         **sessions.options)
        self._seal()

    def _session_log(self, state: SharedMockState) -> SessionLog:
        self.session_log = SessionLog(self, self.sessions, self.name)
        return self.session_log

    def _seal(self) -> None:
        """Ids and file URLs bound to this incarnation, alike on every replica (H2, H21)."""
        keys = self.sessions.storage_keys
        if keys is not None:
            self.seal(keys, keys.scope(self.name, self.incarnation))

    def adopt(self, raw: bytes) -> None:
        """Become the session registered as `raw` (deleted and created again meanwhile)."""
        entry = orjson.loads(raw)
        shared, base, settings = self.sessions.base_of(entry)
        self.incarnation = entry["id"]
        self.entry = entry
        self._seal()
        self.initial = (entry["dataset"], shared, base)
        self.initial_settings = settings
        self.start_over()
        self.log.last_id = "0-0"
        self.log.since_base = 0

    def adopt_current(self, epoch: str) -> None:
        """Become the session as registered now, whose epoch the log has just shown."""
        session_log = self.session_log
        raw = session_log.command("HGET", self.sessions.keys["sessions"], self.name)
        if raw is None:
            raise session_log.gone()
        if orjson.loads(raw)["id"] != epoch:  # deleted and created again meanwhile, again
            raise StateUnavailable(f"session {self.name!r} was deleted and created again "
                                   "while this request read it; retry")
        self.adopt(raw)

    def rebase(self) -> None:
        self.adopt_current(self.session_log.incoming)

    def shared_for(self, key: str | None) -> Shared:
        return self.sessions.dataset(key)

    def submit(self, command: Command) -> Any:
        result = super().submit(command)
        if isinstance(command, Reset | LoadDataset):  # its changes, for the memory cap
            self.sessions.note_changes(self.name, self)
        return result


@dataclass
class SharedSessionInfo:
    """A session as the registry in Redis describes it (`SessionInfo`'s fields)."""

    sessions: SharedSessions
    name: str
    created_at: str
    forked_from: str | None
    changes: int
    requests: int
    idle: float

    @property
    def state(self) -> MockState:
        return self.sessions.state(self.name)

    def to_dict(self, record_bytes: int) -> dict[str, Any]:
        return {"name": self.name, "created_at": self.created_at,
                "forked_from": self.forked_from, "changes": self.changes,
                "change_bytes": self.changes * record_bytes, "requests": self.requests,
                "idle_seconds": round(self.idle, 3)}


class SharedSessions:
    """The sessions and snapshots of a shared mock: the engine's `sessions.SessionRegistry`
    over the registry in Redis (see the module docstring; `sessions.Sessions` is the
    in-memory one). Thread-safe. `storage_keys`: the server's, sealing each session's ids
    and file URLs to its incarnation."""

    def __init__(self, default: SharedMockState, *, storage_keys: StorageKeys | None = None,
                 max_sessions: int = 10_000, max_change_bytes: int = 512 * 1024 * 1024,
                 idle_seconds: float = 3600.0, create_on_use: bool = False,
                 **options: Any) -> None:
        self._default = default
        self.storage_keys = storage_keys
        self.max_sessions = max_sessions
        self.max_change_bytes = max_change_bytes
        self.idle_seconds = idle_seconds
        self.create_on_use = create_on_use
        self.record_bytes = _record_bytes(default)
        self._snapshot_times: dict[str, str] = {}
        self._last_sweep = time.monotonic()
        self.options = options  # journal_size, journal_bytes, response_cache
        log = default.log
        self.log = log
        prefix = log.prefix
        self.prefix = prefix
        self.keys = {"sessions": prefix + "sessions", "changes": prefix + "changes",
                     "snapshots": prefix + "snapshots"}
        register = log.client.register_script
        self._create = register(_CREATE)
        self._delete = register(_DELETE)
        self._expire = register(_EXPIRE)
        self._clear_all = register(_CLEAR)
        self._save = register(_SAVE)
        self._delete_snapshot = register(_DELETE_SNAPSHOT)
        self._changes = register(_CHANGES)
        self.session_sync = register(_SESSION_SYNC_PRELUDE + _SYNC)
        self.session_append = register(_SESSION_GUARD + _APPEND)
        # Loaded with the default's scripts when Redis does not know them (log.py).
        log.connection.scripts += (self._create, self._delete, self._expire,
                                   self._clear_all, self._save, self._delete_snapshot,
                                   self._changes, self.session_sync, self.session_append)
        self._local: dict[str, SessionState] = {}  # sessions this worker has materialised
        self._local_lock = threading.RLock()
        self._datasets: dict[str, Shared] = {}
        # Decoded snapshots by stored id, shared by the forks of one snapshot on this worker.
        self._decoded: weakref.WeakValueDictionary[str, StateSnapshot] = (
            weakref.WeakValueDictionary())

    @property
    def default(self) -> SharedMockState:
        return self._default

    def _script(self, script: Callable[..., Any], *args: Any) -> Any:
        return self.log.call(script, [], [self.prefix, *args])

    # -- what sessions are built on ------------------------------------------------------------

    def dataset(self, key: str | None) -> Shared:
        """The dataset under `key` in Redis (None: the namespace's fixtures), one per worker."""
        default = self.default
        if key == default.dataset_key:
            return default.shared
        found = self._datasets.get(key) if key is not None else None
        if found is None:
            found = default.shared_for(key)
            if key is not None:
                self._datasets[key] = found
        return found

    def _decode(self, stored: str) -> StateSnapshot:
        found = self._decoded.get(stored)
        if found is None:
            blob = self.log.command("GET", self.prefix + "snapshot:" + stored)
            if blob is None:
                raise NotFound(f"snapshot {stored} is gone")
            found = decode_snapshot(stored, blob, self.dataset(snapshot_dataset(blob)))
            self._decoded[stored] = found
        return found

    def base_of(self, entry: dict[str, Any]) -> tuple[Shared, Base, Settings]:
        """What a registered session starts from: its dataset, store base and settings."""
        settings = Settings(**entry["settings"])
        if entry["base"] is not None:
            snap = self._decode(entry["base"])
            return snap.shared, snap.base, settings
        shared = self.dataset(entry["dataset"])
        return shared, shared.seed, settings

    # -- this worker's copies ------------------------------------------------------------------

    def forget(self, name: str, state: SessionState | None = None) -> None:
        with self._local_lock:
            if state is None or self._local.get(name) is state:
                self._local.pop(name, None)

    def _materialise(self, name: str) -> SessionState:
        with self._local_lock:
            found = self._local.get(name)
            if found is not None:
                return found
            raw = self.log.command("HGET", self.keys["sessions"], name)
            if raw is None:
                raise NotFound(f"no session {name!r}", reason="no_session")
            entry = orjson.loads(raw)
            shared, base, settings = self.base_of(entry)
            state = SessionState(self, name, entry, shared, base, settings)
            self._local[name] = state
            return state

    def note_changes(self, name: str, state: SessionState) -> None:
        """Record a session's changes for the memory cap (after a committed write): posted,
        in Redis before the answer leaves without waiting for it (as a journal entry, R16).
        EVAL, not EVALSHA: a posted script must not meet a lost script cache."""
        with contextlib.suppress(StateUnavailable):  # an estimate: the write stands
            self.log.post(("EVAL", _CHANGES, 0, self.prefix, name, state.store.changes))

    def _sweep(self) -> None:
        if time.monotonic() - self._last_sweep > 1.0:
            self.expire_idle()

    # -- requests -----------------------------------------------------------------------------

    def resolve_on_loop(self, name: str, create: bool = True) -> MockState | None:
        """The state `resolve` would return when it needs no call to Redis (the session is
        materialised here and no idle sweep is due), else None: the caller then runs
        `resolve` off the event loop (`state.off_loop`)."""
        if name == DEFAULT_SESSION:
            return self.default
        if time.monotonic() - self._last_sweep > 1.0:
            return None
        return self._local.get(name)

    def resolve(self, name: str, create: bool = True) -> MockState:
        if name == DEFAULT_SESSION:
            return self.default
        self._sweep()
        found = self._local.get(name)
        if found is not None:
            return found  # the pipeline's sync() checks it is still registered
        try:
            return self._materialise(name)
        except NotFound:
            if not (self.create_on_use and create):
                raise unknown_session(name, self.idle_seconds) from None
        with contextlib.suppress(Conflict):  # created by a concurrent request meanwhile
            self.create(name)
        return self._materialise(name)

    # -- sessions -----------------------------------------------------------------------------

    def create(
            self, name: str | None = None, *, snapshot: str | None = None,
            settings: Settings | None = None) -> SharedSessionInfo:
        if name is None:
            name = f"s-{secrets.token_hex(6)}"
        check_name(name)
        if name == DEFAULT_SESSION:
            raise Conflict(f"session {name!r} already exists (the server's own state)")
        self._sweep()
        default = self.default
        for _ in range(8):
            default.sync()
            stored = None
            base_settings = default.settings
            dataset = default.dataset_key
            if snapshot is not None:
                raw = self.log.command("HGET", self.keys["snapshots"], snapshot)
                if raw is None:
                    raise NotFound(f"no snapshot {snapshot!r}")
                meta = orjson.loads(raw)
                stored, dataset = meta["id"], meta["dataset"]
                base_settings = Settings(**meta["settings"])
            chosen = settings or base_settings
            limits = default.rate_limits_for(self.dataset(dataset), chosen)
            entry: dict[str, Any] = {"id": secrets.token_hex(8), "created_at": _wall(), "forked_from": snapshot,
                     "base": stored, "dataset": dataset, "settings": dataclasses.asdict(chosen),
                     "t": time.time_ns()}
            reply = self._script(
                self._create, name, orjson.dumps(entry), entry["id"], "",
                self.max_sessions, self.max_change_bytes, self.record_bytes, snapshot or "",
                stored or "", *[x for kv in limits.items() for x in kv])
            outcome = reply[0].decode()
            if outcome == "ok":
                return SharedSessionInfo(self, name, entry["created_at"], snapshot, 0, 0, 0.0)
            if outcome == "exists":
                raise Conflict(f"session {name!r} already exists")
            if outcome == "nosnap":
                raise NotFound(f"no snapshot {snapshot!r}")
            if outcome == "cap":
                raise session_cap(self.max_sessions)
            if outcome == "memory":
                raise memory_cap(int(float(reply[1])), self.max_change_bytes)
            # 'retry': the snapshot was replaced meanwhile; read it again
        raise StateUnavailable(f"shared state busy: snapshot {snapshot!r} kept changing")

    def _infos(self, names: list[str], raws: list[bytes | None]) -> list[SharedSessionInfo]:
        client = self.log.client
        try:
            pipe = client.pipeline(transaction=False)
            for name in names:
                pipe.get(f"{self.prefix}session:{name}:used")
                pipe.hget(self.keys["changes"], name)
                pipe.llen(f"{self.prefix}session:{name}:journal")
            found = pipe.execute()
        except self.log.redis_errors as exc:
            raise self.log.unavailable(exc) from None
        now = _now_ms()
        infos = []
        for i, (name, raw) in enumerate(zip(names, raws, strict=True)):
            if raw is None:
                continue
            entry = orjson.loads(raw)
            used, changes, requests = found[3 * i: 3 * i + 3]
            idle = max(0.0, (now - int(used or now)) / 1000)
            infos.append((entry["t"], SharedSessionInfo(
                self, name, entry["created_at"], entry["forked_from"], int(changes or 0),
                int(requests), idle)))
        return [info for _, info in sorted(infos, key=lambda pair: pair[0])]

    def get(self, name: str) -> SharedSessionInfo | None:
        raw = self.log.command("HGET", self.keys["sessions"], name)
        found = self._infos([name], [raw])
        return found[0] if found else None

    def state(self, name: str) -> MockState:
        if name == DEFAULT_SESSION:
            return self.default
        found = self._local.get(name)
        if found is not None:
            found.sync()  # 404 when deleted through another worker
            return found
        return self._materialise(name)

    def names(self) -> list[str]:
        raw = self.log.command("HKEYS", self.keys["sessions"])
        return [DEFAULT_SESSION, *(name.decode() for name in raw)]

    def all(self) -> list[SharedSessionInfo]:
        self.expire_idle()
        raw = _pairs(self.log.command("HGETALL", self.keys["sessions"]))
        names = [name.decode() for name in raw]
        return self._infos(names, [raw[name.encode()] for name in names])

    def __len__(self) -> int:
        return int(self.log.command("HLEN", self.keys["sessions"]))

    def delete(self, name: str) -> None:
        if name == DEFAULT_SESSION:
            raise Conflict("the default session cannot be deleted (reset it instead)")
        deleted = self._script(self._delete, name)
        self.forget(name)
        if not deleted:
            raise NotFound(f"no session {name!r}", reason="no_session")

    def clear(self) -> int:
        count = int(self._script(self._clear_all))
        with self._local_lock:
            self._local.clear()
        return count

    def expire_idle(self, now: float | None = None) -> list[str]:
        """Delete sessions without a request (on any worker) for `idle_seconds` (0: never);
        `now` is wall-clock seconds. Also forgets this worker's copies of sessions deleted
        elsewhere."""
        self._last_sweep = time.monotonic()
        expired: list[str] = []
        if self.idle_seconds:
            now_ms = "" if now is None else int(now * 1000)
            expired = [name.decode() for name in
                       self._script(self._expire, now_ms, int(self.idle_seconds * 1000))]
        with self._local_lock:
            local = list(self._local)
        if local:
            registered = self.log.command("HMGET", self.keys["sessions"], *local)
            for name, raw in zip(local, registered, strict=True):
                state = self._local.get(name)
                if raw is None or (state is not None
                                   and orjson.loads(raw)["id"] != state.incarnation):
                    self.forget(name, state)
        return expired

    # -- snapshots ----------------------------------------------------------------------------

    def save_snapshot(self, name: str, session: str = DEFAULT_SESSION, *,
                      replace: bool = False) -> StateSnapshot:
        check_name(name, "snapshot")
        state = self.state(session)
        assert isinstance(state, SharedMockState)
        with state.log.lock:
            state.log.catch_up()
            snap = state.snapshot(name)
            dataset = state.dataset_key
        stored = secrets.token_hex(8)
        created_at = _wall()
        meta = {"id": stored, "session": session, "created_at": created_at,
                "changes": snap.changes, "settings": dataclasses.asdict(snap.settings),
                "dataset": dataset, "t": time.time_ns()}
        reply = self._script(self._save, name, orjson.dumps(meta), stored,
                             encode_snapshot(snap, dataset), "1" if replace else "0",
                             self.max_change_bytes, self.record_bytes, snap.changes)
        outcome = reply[0].decode()
        if outcome == "exists":
            raise Conflict(f"snapshot {name!r} already exists")
        if outcome == "memory":
            raise memory_cap(int(float(reply[1])), self.max_change_bytes)
        self._snapshot_times[name] = created_at
        return snap

    def _snapshot_meta(self, name: str) -> dict[str, Any]:
        raw = self.log.command("HGET", self.keys["snapshots"], name)
        if raw is None:
            raise NotFound(f"no snapshot {name!r}")
        meta: dict[str, Any] = orjson.loads(raw)
        return meta

    def snapshot(self, name: str) -> StateSnapshot:
        snap = self._decode(self._snapshot_meta(name)["id"])
        return dataclasses.replace(snap, name=name)

    def snapshots(self) -> list[dict[str, Any]]:
        raw = _pairs(self.log.command("HGETALL", self.keys["snapshots"]))
        metas = sorted(((name.decode(), orjson.loads(value)) for name, value in raw.items()),
                       key=lambda pair: pair[1]["t"])
        return [{"name": name, "session": meta["session"], "created_at": meta["created_at"],
                 "changes": meta["changes"], "change_bytes": meta["changes"] * self.record_bytes}
                for name, meta in metas]

    def describe_snapshot(self, snap: StateSnapshot) -> dict[str, Any]:
        created_at = (self._snapshot_times.get(snap.name)
                      or self._snapshot_meta(snap.name)["created_at"])
        return {"name": snap.name, "session": snap.source, "created_at": created_at,
                "changes": snap.changes, "change_bytes": snap.changes * self.record_bytes}

    def delete_snapshot(self, name: str) -> None:
        if not self._script(self._delete_snapshot, name):
            raise NotFound(f"no snapshot {name!r}")
        self._snapshot_times.pop(name, None)

    # -- memory -------------------------------------------------------------------------------

    def change_bytes(self) -> int:
        values = self.log.command("HVALS", self.keys["changes"])
        return sum(int(v) for v in values) * self.record_bytes

    def held_bytes(self) -> int:
        """The changes every session and snapshot holds (their journals are Redis's)."""
        return self.change_bytes()

    def check_room(self, state: MockState, extra_bytes: int) -> None:
        """Nothing to check before a write: the memory cap is the registry's, checked in
        Redis when a session is created or a snapshot saved (the scripts above)."""

    def admit(self, state: MockState, run: Callable[[], T]) -> T:
        """A session's write as it is: on shared state the memory cap is checked only when a
        session is created or a snapshot saved (in Redis, at `record_bytes` per changed
        record); a session's writes are not refused for memory (DECISIONS H37: exact, and
        checked on every write, in memory only)."""
        return run()

    def check_held(self, state: MockState) -> None:
        """Nothing to check after a write (see `admit`)."""


if TYPE_CHECKING:  # the Redis implementation of the engine's port (sessions.py)
    _PORT: type[SessionRegistry] = SharedSessions
