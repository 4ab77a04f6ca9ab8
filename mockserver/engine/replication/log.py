"""Shared state on Redis: one mock served by several workers and processes, consistent as one.

Each worker keeps the in-memory store and indexes it has without Redis (reads stay local and
fast). What is shared is the *order of changes*: every change of the mock's state is an entry
of one Redis stream per namespace, `mock:{namespace}:log`, and every worker applies the entries
it has not applied yet before it answers a request.

- A request costs one round trip to Redis when nothing is new: it reads the worker's copy as
  it stands (`view`), and one Lua script (`_SYNC`) both checks that the log still ends where
  that copy is and counts the request in its rate-limit window. When another worker appended
  since, the script returns the new entries instead (nothing counted), the worker applies
  them and the pipeline runs the request again (`StaleRead`). A request refused before it is
  counted (an unknown token or record) confirms its view with the same script. All calls of
  a worker go through its own connection (`SharedLog.call`, `command`, `post`).
- A request that writes runs its handler on the worker's caught-up store while the worker
  records what it changes (records upserted or deleted, the id counter, the timestamp floor,
  uploaded bytes) and how to undo it. It then appends those effects with a Lua script that
  checks the log still ends where the worker had applied it (an optimistic check). When
  another worker appended first, the local changes are undone, the worker catches up and runs
  the handler again, so concurrent writes get one order and none is lost. Ids stay the same
  as in memory because a writer only writes after it has applied the whole log.
- Control actions (reset, load fixtures, clock, faults) are appended first and applied when
  the worker catches up to them, by every worker alike (they are deterministic). A reset is a
  *base* entry: it replaces everything before it, so the log is trimmed there and a new
  worker does not replay history that a reset has discarded.
- Rate-limit windows and limits, and the request journal, are Redis structures used in place
  (Lua scripts keep each update atomic), not log entries. A journal entry is written to Redis
  before the answer leaves, without waiting for Redis's reply (`SharedLog.post`; the reply is
  read with the next call's): the only other Redis call of a read. The journal keeps the
  bounds of the in-memory one (`--journal-size` entries, `--journal-bytes` bytes).
- Redis unreachable while serving: the request answers 503 `{"error": ...}` and whatever the
  worker changed locally is undone (never half-applied); the next request catches up again.
  Redis restarted without its data: the mock starts over from its fixtures on every worker.
- A log that grows past `SharedLog.compact_after` entries since its last base gets a
  *checkpoint*: a base entry holding the serialized state (layers.py), written by the
  worker whose write crossed the mark, with everything before it trimmed in the same script.
- Sessions and snapshots are shared too (sessions.py): each session is a state like
  this one with its own log and keys under `mock:{namespace}:session:{name}:`, listed in a
  registry hash that Lua scripts create, delete and expire atomically.

`MockApp` builds a `SharedMockState` instead of a `MockState` when `Config.state` names a
Redis; only then is this module (and redis-py) imported: the in-memory default never is.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import hashlib
import itertools
import logging
import math
import secrets
import threading
import time
from collections.abc import Callable, Iterable, Iterator, MutableMapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import anyio
import anyio.to_thread
import orjson
from anyio.lowlevel import RunVar

from ...data.fixtures import Dataset
from ..clock import Clock, check_clock, parse_clock
from ..errors import ApiError, StaleRead, TooManyRequests
from ..faults import FaultRule, Faults
from ..journal import (
    _ENTRY_OVERHEAD,
    MAX_JOURNAL_BYTES,
    Journal,
    JournalEntry,
    header_size,
    kept_bodies,
)
from ..ratelimit import WINDOW_SECONDS, RateLimiter
from ..state import KEEP, MockState, Settings, Shared
from ..storage import FileStore, StorageKeys
from ..store import Base, Record, Store
from .layers import checkpoint_fields, restore_checkpoint
from .lua import script

if TYPE_CHECKING:
    import redis as redis_module

    from .pagination import CursorCodec

__all__ = ["SharedLog", "SharedMockState", "SharedStateError", "StateUnavailable", "connect",
           "shared_state"]

log = logging.getLogger("mockserver.shared")

T = TypeVar("T")

INSTALL_HINT = "shared state needs redis-py: pip install 'workspace-api-mock[redis]'"
MAX_ATTEMPTS = 64  # optimistic retries of one write before answering 503
CATCH_UP_BATCH = 1000
# What Redis reads from a client's socket at once (PROTO_IOBUF_LEN): a posted command up to
# this size is read and run in one go (SharedLog.post).
POST_MAX = 16 * 1024
COMPACT_AFTER = 10_000  # entries after the last base before a worker writes a checkpoint
# How long one exchange with Redis may take (connecting, a command's reply): a request that
# needs a Redis that does not answer is answered 503 this long after it needed it, or at
# once when the exchange it waited behind failed meanwhile (SharedLog.failures).
REDIS_TIMEOUT = 2.0
# Threads of a worker that run requests needing Redis, so that a Redis that does not answer
# never holds up the event loop (`off_loop`): the docs and what needs no Redis go on.
REDIS_THREADS = 16


class SharedStateError(RuntimeError):
    """Shared state cannot start (redis-py missing, Redis unreachable, another mock's
    namespace): a start-up error with a plain message."""


class StateUnavailable(ApiError):
    """Redis went away while serving: 503, nothing applied."""

    status_code = 503


def _redis() -> Any:
    try:
        import redis
    except ImportError:  # pragma: no cover - the message is the point
        raise SharedStateError(INSTALL_HINT) from None
    return redis


def connect(url: str) -> redis_module.Redis:
    """A client for `url` (redis://HOST:PORT/DB), checked with a PING."""
    redis = _redis()
    try:
        client = redis.Redis.from_url(url, socket_timeout=REDIS_TIMEOUT,
                                      socket_connect_timeout=REDIS_TIMEOUT)
        client.ping()
    except (redis.RedisError, ValueError) as exc:
        raise SharedStateError(f"cannot reach Redis at {url}: {exc}") from None
    return client


# -- Lua (lua/*.lua): each one runs atomically in Redis ------------------------------------

_RECORD = script("record_function", "record")  # a journal entry recorded on its own
_SYNC = script("hit_function", "record_function", "sync")  # a request's one round trip
_APPEND = script("hit_function", "append")  # an entry appended if the log ends where expected
_HIT = script("hit_function", "hit")  # a request counted outside the pipeline
_CLEAR = script("clear_journal")
_SECRET = script("secret")  # the namespace's cursor secret
_META = script("meta")  # the namespace's settings
_INIT_LIMITS = script("init_limits")
CHECKPOINT = script("checkpoint")


# -- off the event loop ------------------------------------------------------------------------

_LIMITER: RunVar[anyio.CapacityLimiter] = RunVar("mockserver_shared_threads")
# Per thread: `ticket`, (the connection's log, its failures when the request being run came);
# `inline`, whether it runs on the event loop (no call to Redis allowed: OffLoop).
_REQUEST = threading.local()


class OffLoop(StaleRead):
    """A call to Redis attempted on the event loop (`SharedMockState.run`, inline): nothing
    is sent, what the request changed is undone as for a stale read, and it runs again in
    one of the worker's threads."""


def _on_loop() -> None:
    """Refuse a call to Redis from the event loop (before any lock of the connection)."""
    if getattr(_REQUEST, "inline", False):
        raise OffLoop


async def off_loop(log: SharedLog, fn: Callable[..., T], *args: Any,
                   scope: MutableMapping[str, Any] | None = None) -> T:
    """Run `fn(*args)` (the part of a request that may call Redis through `log`'s
    connection) in one of the worker's `REDIS_THREADS` threads: the event loop goes on
    serving what needs no Redis. The request's ticket is the connection's failure count when
    it came (kept in its ASGI `scope` for its later steps): an exchange it makes after one
    failed meanwhile answers 503 at once (`SharedLog._send`), so requests queued behind a
    Redis that does not answer are not each kept waiting, nor is one twice."""
    try:
        limiter = _LIMITER.get()
    except LookupError:
        limiter = anyio.CapacityLimiter(REDIS_THREADS)
        _LIMITER.set(limiter)
    owner = log.connection_owner()
    if scope is None:
        ticket = (owner, owner.failures)
    else:
        ticket = (owner, scope.setdefault("mock.ticket", owner.failures))

    def run() -> T:
        _REQUEST.ticket = ticket
        try:
            return fn(*args)
        finally:
            _REQUEST.ticket = None

    return await anyio.to_thread.run_sync(run, limiter=limiter)


# -- what a request read, and a transaction: what a worker changed locally and how to undo it --

class View:
    """Where a worker was in the log when a request started reading its local copy; the
    request's one round trip confirms the log still ends there (SharedLog.confirm).

    A request the pipeline runs (`deferrable`) has its confirmation and rate-limit count held
    (`pending`, `count`): a write's go with its append (SharedLog.transaction), any other
    request's are sent when it is answered, with its journal entry, in one script
    (SharedLog.settle)."""

    __slots__ = ("confirmed", "count", "deferrable", "epoch", "last_id", "opened", "pending",
                 "ticket")

    def __init__(self, epoch: str, last_id: str, opened: int = 0, ticket: int = -1) -> None:
        self.epoch = epoch
        self.last_id = last_id
        self.opened = opened  # the worker's count of views when this one was taken
        self.ticket = ticket  # the connection's failures when its request came (off_loop)
        self.confirmed = False
        self.deferrable = False
        self.pending = False
        self.count: tuple[str, str] | None = None


def _behind(reply: list[Any]) -> bool:
    """Whether a `_SYNC` reply holds entries the worker has not applied (its third item is
    then their list, not a limit)."""
    return len(reply) > 2 and isinstance(reply[2], list)


def _too_many(kind: str, limit: int, start_ms: int, now_ms: int) -> TooManyRequests:
    """The 429 of a full window, as RateLimiter.hit words it."""
    retry_after = max(1, math.ceil((start_ms + WINDOW_SECONDS * 1000 - now_ms) / 1000))
    return TooManyRequests(
        f"Rate limit exceeded: {limit} requests per minute per {kind}; "
        f"retry after {retry_after} seconds",
        retry_after=retry_after,
    )


class _Tx:
    __slots__ = ("counter", "files", "last_ms", "undo", "writes")

    def __init__(self, counter: int, last_ms: int) -> None:
        self.counter = counter
        self.last_ms = last_ms
        self.writes: dict[tuple[str, str], Record | None] = {}  # final state by (table, key)
        self.undo: list[tuple[str, str, Record | None]] = []  # (table, key, old) in order
        self.files: dict[str, bytes] = {}

    def dirty(self, store: SharedStore) -> bool:
        return bool(self.writes or self.files) or self.counter != store._counter \
            or self.last_ms != store._last_ms


# -- the log ---------------------------------------------------------------------------------

class SharedLog:
    """The replicated log of one mock (a namespace in one Redis) and the worker's place in it."""

    def __init__(self, state: SharedMockState, url: str, namespace: str, *,
                 client: redis_module.Redis | None = None, prefix: str | None = None) -> None:
        redis = _redis()
        self.redis_errors: tuple[type[BaseException], ...] = (redis.RedisError, OSError)
        self._response_error: type[BaseException] = redis.ResponseError
        self._no_script: type[BaseException] = redis.exceptions.NoScriptError
        self.url = url
        self.namespace = namespace
        self.client = connect(url) if client is None else client
        self.state = state
        # Datasets are the namespace's (content-addressed, shared by its sessions).
        self.datasets_prefix = f"mock:{{{namespace}}}:dataset:"
        prefix = prefix or f"mock:{{{namespace}}}:"
        self.prefix = prefix
        self.keys = {name: prefix + name for name in
                     ("log", "last", "epoch", "journal", "jsizes", "jmeta", "windows",
                      "limits", "meta")}
        self._sync = self.client.register_script(_SYNC)
        self._append = self.client.register_script(_APPEND)
        self._hit = self.client.register_script(_HIT)
        self._clear = self.client.register_script(_CLEAR)
        self._meta = self.client.register_script(_META)
        self._secret = self.client.register_script(_SECRET)
        self._checkpoint = self.client.register_script(CHECKPOINT)
        self._scripts: tuple[Any, ...] = (self._sync, self._append, self._hit, self._clear,
                                          self._checkpoint, self._secret)
        # The worker's journal staging list (SharedJournal): one per connection.
        self.keys["stage"] = f"mock:{{{namespace}}}:jstage:{secrets.token_hex(6)}"
        self._sync_keys = [self.keys[k] for k in ("log", "last", "epoch", "limits", "windows",
                                                   "journal", "jsizes", "jmeta", "stage")]
        self.since_base = 0  # entries after the last base (reset, checkpoint) in the log
        self.compact_after = COMPACT_AFTER
        self.last_id = "0-0"  # the last entry this worker applied
        self.epoch = ""  # which incarnation of the namespace that id belongs to
        self.lock = state.store.lock
        # The worker's own connection, used under the lock for everything but the start: one
        # buffer written and one reply read per call (the pool's checkout and per-argument
        # writes cost more than Redis's work), and an order for what `post` sends unanswered.
        self._conn: Any = None
        self._posted = 0  # replies of what `post` sent, not yet read
        self._views = 0  # views taken so far (View.opened)
        # Where this worker's last own append found the log ending (epoch, id), and `_views`
        # then: the views taken by then at that place were current at that moment.
        self._seen: tuple[str, str, int] = ("", "", -1)
        self.guarded = False  # whether its keys go with an epoch that can be deleted (sessions)
        # The namespace's secret for cursors (`_SECRET`), read at start and again when Redis
        # lost the namespace; `on_secret` is told when it changes (the app's CursorCodec).
        self.cursor_secret = b""
        self.on_secret: Callable[[bytes], None] | None = None
        # Reads waiting for their round trip, by event loop (`settle`, `_flush`), under a
        # lock of their own (never held over a call to Redis: the event loop takes it).
        self._batches: dict[asyncio.AbstractEventLoop, list[tuple[Any, ...]]] = {}
        self._batch_lock = threading.Lock()
        self._flushes: set[asyncio.Task[None]] = set()
        # Exchanges with Redis that failed (a broken connection, a timeout): a request that
        # came before the last one answers 503 at once rather than wait again (`off_loop`).
        self.failures = 0

    # -- Redis calls, with their failures turned into 503 ----------------------------------------

    def unavailable(self, exc: BaseException | str) -> StateUnavailable:
        return StateUnavailable(f"shared state unavailable: Redis at {self.url}: {exc}")

    def call(self, script: Any, keys: list[str], args: list[Any],
             *before: tuple[Any, ...]) -> Any:
        """Run a Lua script (after the commands `before`, in the same write) and return its
        reply."""
        _on_loop()
        with self.lock:
            try:
                try:
                    return self._exchange(*before,
                                          ("EVALSHA", script.sha, len(keys), *keys, *args))
                except self._no_script:  # Redis lost its script cache (a restart, a flush)
                    self._load_scripts()
                    return self._exchange(*before,
                                          ("EVALSHA", script.sha, len(keys), *keys, *args))
            except self._response_error as exc:  # answered: the connection is in step
                raise self.unavailable(exc) from None
            except self.redis_errors as exc:
                self._lost()
                raise self.unavailable(exc) from None

    def command(self, name: str, *args: Any) -> Any:
        """Run one command (in order with what was posted)."""
        _on_loop()
        with self.lock:
            try:
                return self._exchange((name, *args))
            except self._response_error as exc:
                raise self.unavailable(exc) from None
            except self.redis_errors as exc:
                self._lost()
                raise self.unavailable(exc) from None

    def atomically(self, *commands: tuple[Any, ...]) -> list[Any]:
        """Run commands in one MULTI (one round trip); their replies."""
        _on_loop()
        with self.lock:
            try:
                replies: list[Any] = self._exchange(("MULTI",), *commands, ("EXEC",))
            except self._response_error as exc:
                raise self.unavailable(exc) from None
            except self.redis_errors as exc:
                self._lost()
                raise self.unavailable(exc) from None
        for reply in replies:
            if isinstance(reply, Exception):
                raise self.unavailable(reply)
        return replies

    def _exchange(self, *commands: tuple[Any, ...]) -> Any:
        """Send commands in one write, then read the replies of what was posted before them
        (Redis answers in order: they are usually in the same read) and theirs; the last
        command's reply. An error reply is raised once all are read."""
        self._send(*commands)
        self._read_posted()
        failed: BaseException | None = None
        reply = None
        for _ in commands:
            try:
                reply = self._conn.read_response()
            except self._response_error as exc:
                failed = failed or exc
        if failed is not None:
            raise failed
        return reply

    def _exchange_all(self, *commands: tuple[Any, ...]) -> list[Any]:
        """Send commands in one write; all their replies, an error reply in its place."""
        self._send(*commands)
        self._read_posted()
        replies: list[Any] = []
        for _ in commands:
            try:
                replies.append(self._conn.read_response())
            except self._response_error as exc:
                replies.append(exc)
        return replies

    def post(self, *commands: tuple[Any, ...]) -> None:
        """Send commands in one write without waiting for their replies (the next call on
        this connection reads them); only commands whose failure the caller can shrug off.

        Redis has the whole write before this returns, with nothing unanswered before it on
        this connection, and serves its connections in the order they have something to
        read; so a command sent later, by any worker, runs after these (DECISIONS R16). A
        write longer than what Redis reads from a client at once (`POST_MAX`) is waited for,
        so that it is never run after a command sent later on another connection.
        """
        _on_loop()
        with self.lock:
            try:
                self._read_posted()
                size = self._send(*commands)
                self._posted += len(commands)
                if size > POST_MAX:
                    self._read_posted()
            except self.redis_errors as exc:
                self._lost()
                raise self.unavailable(exc) from None

    def _send(self, *commands: tuple[Any, ...]) -> int:
        """Write commands to the worker's connection in one buffer; its size. A request that
        came before an exchange failed (`off_loop`) is refused instead: it has waited for a
        Redis that did not answer, and the next request tries again."""
        _on_loop()
        ticket = getattr(_REQUEST, "ticket", None)
        if ticket is not None and ticket[0] is self and ticket[1] != self.failures:
            raise self.unavailable(f"no answer within {REDIS_TIMEOUT:g} s to a call this "
                                   "request waited behind")
        conn = self._conn
        if conn is None:
            conn = self._conn = self.client.connection_pool.make_connection()
        elif conn._sock is not None and self._closed(conn):
            # Redis closed it (a restart) before this request sent anything: a new one, so
            # that the first request after Redis returns is answered, not refused.
            if self._posted:
                log.warning("request journal: the last entry may be lost with the connection "
                            "to Redis at %s", self.url)
                self._posted = 0
            conn.disconnect()
        packed = b"".join(b"".join(conn.pack_command(*command)) for command in commands)
        conn.send_packed_command([packed], check_health=False)
        return len(packed)

    def _closed(self, conn: Any) -> bool:
        """Whether Redis closed `conn` while it was idle: once the replies due on it are
        read, anything more to read is the end of the connection."""
        try:
            if not conn.can_read(timeout=0):
                return False
            if not self._posted:
                return True
            self._read_posted()  # due, and come
            return bool(conn.can_read(timeout=0))
        except self.redis_errors:
            return True

    def _read_posted(self) -> None:
        """Read the replies of what `post` sent."""
        while self._posted:
            self._posted -= 1
            try:
                reply = self._conn.read_response()
            except self._response_error as exc:  # pragma: no cover - a bug of ours
                reply = [exc]
            for failed in reply if isinstance(reply, list) else ():
                if isinstance(failed, Exception):  # pragma: no cover - a bug of ours
                    log.warning("shared state: a posted command failed: %s", failed)

    def _load_scripts(self) -> None:
        self._exchange(*[("SCRIPT", "LOAD", script.script) for script in self._scripts])

    def _lost(self) -> None:
        """The connection broke: what was posted and not confirmed may be lost."""
        self.failures += 1
        if self._posted:
            log.warning("request journal: the last entry may be lost with the connection to "
                        "Redis at %s", self.url)
            self._posted = 0
        if self._conn is not None:
            self._conn.disconnect()

    def start(self, settings: dict[str, str], limits: dict[str, Any]) -> None:
        """Join the namespace: check it was started with these settings (or is new), set its
        rate limits when new, and catch up with its log."""
        try:
            raw = self._meta(keys=[self.keys["meta"]],
                             args=[x for kv in settings.items() for x in kv])
            self.client.eval(_INIT_LIMITS, 1, self.keys["limits"],
                             *[x for kv in limits.items() for x in kv])
            with self.lock:
                self._load_scripts()
                self.read_secret()
            self.catch_up()
        except (StateUnavailable, *self.redis_errors) as exc:  # type: ignore[misc]
            raise SharedStateError(f"cannot reach Redis at {self.url}: {exc}") from None
        stored = {raw[i].decode(): raw[i + 1].decode() for i in range(0, len(raw), 2)}
        for name, value in settings.items():
            if stored.get(name, value) != value:
                raise SharedStateError(
                    f"namespace {self.namespace!r} on {self.url} belongs to a mock started with "
                    f"{name} {stored[name]}, not {value}: start this one with the same settings "
                    f"or another namespace")

    def read_secret(self) -> None:
        """The namespace's cursor secret (`_SECRET`: stored by the first worker to ask)."""
        stored = self.call(self._secret, [self.keys["meta"]], [secrets.token_hex(32)])
        secret = bytes.fromhex(stored.decode())
        if secret != self.cursor_secret:
            self.cursor_secret = secret
            if self.on_secret is not None:
                self.on_secret(secret)

    def restarted(self) -> None:
        """Redis lost the namespace (its epoch changed): the secret again (the first worker
        to notice stores its own, which every worker had, unless one started meanwhile)."""
        self.read_secret()

    # -- catching up, and a request's one round trip ----------------------------------------------

    def catch_up(self, wanted: str | None = None) -> Any:
        """Apply the entries this worker has not applied yet; returns what applying entry
        `wanted` returned (a control action's result)."""
        result = None
        with self.lock:
            while True:
                reply = self.call(self._sync, self._sync_keys,
                                  [self.last_id, self.epoch, CATCH_UP_BATCH,
                                   secrets.token_hex(8)])
                done, value = self._absorb(reply, wanted)
                if value is not None:
                    result = value
                if done:
                    return result

    def _absorb(self, reply: list[Any], wanted: str | None = None) -> tuple[bool, Any]:
        """Apply the entries of a `_SYNC` reply: (whether the worker is at the end of the
        log, what applying entry `wanted` returned)."""
        epoch = reply[0].decode()
        if epoch != self.epoch:
            if self.epoch:
                log.warning("Redis at %s lost namespace %r: the mock starts over from "
                            "its fixtures", self.url, self.namespace)
                self._rebuild()
                self.restarted()
            self.epoch = epoch
        if not _behind(reply):
            return True, None
        if len(reply) == 4:  # the worker's place is not in the log: it went backwards
            log.warning("Redis at %s went back in namespace %r's log (restored from an older "
                        "snapshot?): this worker rebuilds its state from the log Redis holds",
                        self.url, self.namespace)
            self._rebuild()
        result = None
        entries = reply[2]
        for raw_id, raw_fields in entries:
            entry_id = raw_id.decode()
            value = self.state.apply(raw_fields)
            self.last_id = entry_id
            if entry_id == wanted:
                result = value
        return len(entries) < CATCH_UP_BATCH, result

    def _rebuild(self) -> None:
        """Back to the start-up state, to apply the log Redis holds from its start."""
        self.last_id = "0-0"
        self.since_base = 0
        self._seen = ("", "", -1)  # no view taken so far reads what the log now holds
        self.state.rebase()

    def view(self) -> View:
        """Where this worker is in the log: what a request starting now reads."""
        owner = self.connection_owner()
        ticket = getattr(_REQUEST, "ticket", None)
        with self.lock:
            self._views += 1
            return View(self.epoch, self.last_id, self._views,
                        ticket[1] if ticket is not None and ticket[0] is owner
                        else owner.failures)

    def _seen_current(self, view: View) -> bool:
        """Whether Redis was seen to end the log at `view`'s place after the view was taken
        (this worker's own append there): the request, not yet answered then, read the
        present at that moment, whatever was appended after (DECISIONS R18)."""
        epoch, last_id, views = self._seen
        return view.last_id == last_id and view.epoch == epoch and view.opened <= views

    def confirm(self, view: View, count: tuple[str, str] | None = None) -> None:
        """Check that the log still ends where `view` is, so that what the request read of
        the local copy is the shared mock's present, and count it (`count`: kind, ident) in
        the same round trip. When another worker appended since, apply its entries (nothing
        counted) and raise StaleRead: the pipeline runs the request again.

        A deferrable view is only marked: its round trip is the append of the request's write
        (`transaction`, given the view) or the one `settle` makes when it is answered. That
        the worker applied entries since the request read is known here (StaleRead)."""
        if view.confirmed and count is None:
            return
        if view.deferrable:
            with self.lock:
                if view.last_id != self.last_id or view.epoch != self.epoch:
                    raise StaleRead  # this worker applied entries since the request read
            view.pending = True
            if count is not None:
                view.count = count
            return
        self._confirm(view, count)

    async def settle(self, view: View, entry: tuple[bytes, int] | None,
                     maxlen: int = 0, max_bytes: int = 0) -> TooManyRequests | None:
        """The round trip a deferred view holds (`confirm`), with the request's journal entry
        (`entry`: its encoding and size, recorded within `maxlen` entries and `max_bytes`)
        when given: StaleRead as `confirm`; the 429 to answer instead when the count is over
        the limit (nothing recorded); else None (counted and recorded).

        The reads answered in one turn of the event loop settle together: their scripts go
        to Redis in one write and their replies come back in one read (`_flush`), so the
        cost of a round trip is shared by every read waiting when it is made (R18)."""
        if not view.pending:
            return None
        view.pending = False
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # pragma: no cover - not under asyncio (trio): one at a time
            return await off_loop(self, lambda: self._confirm(
                view, view.count, entry, maxlen, max_bytes, answer=True))
        future: asyncio.Future[TooManyRequests | None] = loop.create_future()
        self.connection_owner()._enqueue(loop, (self, view, entry, maxlen, max_bytes, future))
        return await future

    def _settled(self, view: View | None) -> None:
        """A deferred view whose round trip was its write's append (confirmed, counted)."""
        if view is not None:
            view.pending = False
            view.confirmed = True

    def connection_owner(self) -> SharedLog:
        """The log whose connection this one's calls use (a session's: the default's)."""
        return self

    def _enqueue(self, loop: asyncio.AbstractEventLoop, item: tuple[Any, ...]) -> None:
        with self._batch_lock:
            batch = self._batches.get(loop)
            if batch is None:
                batch = self._batches[loop] = []
                task = loop.create_task(self._flush(loop))  # its first step: the next turn
                self._flushes.add(task)
                task.add_done_callback(self._flushes.discard)
            batch.append(item)

    async def _flush(self, loop: asyncio.AbstractEventLoop) -> None:
        """Settle the reads gathered in this turn of `loop`, off the loop (`off_loop`): one
        write and one read under this (the connection's) lock; what the replies mean is
        worked out after it is let go, since that may take a session's lock (catching up, a
        session gone), which is taken before this one everywhere else."""
        with self._batch_lock:
            batch = self._batches.pop(loop, [])
        try:
            settled = await off_loop(self, self._settle_batch, batch)
        except BaseException as exc:  # pragma: no cover - a bug: answered, never hung
            for *_, future in batch:
                if not future.done():
                    future.set_exception(exc)
            if not isinstance(exc, Exception):
                raise
            return
        for future, result, failed in settled:
            if future.done():  # pragma: no cover - its request was cancelled
                continue
            if failed is not None:
                future.set_exception(failed)
            else:
                future.set_result(result)

    def _settle_batch(self, batch: list[tuple[Any, ...]]
                      ) -> list[tuple[asyncio.Future[Any], Any, BaseException | None]]:
        """`_flush`'s work in a thread: each read's future with its result or exception."""
        with self.lock:
            outcomes = self._exchange_batch(batch)
        return self._resolve(outcomes)

    def _exchange_batch(self, batch: list[tuple[Any, ...]]
                        ) -> list[tuple[tuple[Any, ...], Any, int]]:
        """Send the scripts of `batch` in one write and read their replies (under the
        lock); each item with its reply (or StaleRead, or the error) and its count's clock."""
        commands: list[tuple[Any, ...]] = []
        outcomes: list[tuple[tuple[Any, ...], Any, int]] = []
        sent: list[tuple[tuple[Any, ...], int, int]] = []  # item, reply index, now
        for item in batch:
            log, view, entry, maxlen, max_bytes, _ = item
            if view.ticket != self.failures:  # came before an exchange failed: not again
                outcomes.append((item, self.unavailable(
                    f"no answer within {REDIS_TIMEOUT:g} s to a call this request waited "
                    "behind"), 0))
                continue
            seen = log._seen_current(view)
            if not seen and (view.last_id != log.last_id or view.epoch != log.epoch):
                outcomes.append((item, StaleRead(), 0))  # applied entries since it read
                continue
            args, before, now_ms = log._sync_args(view.count, entry, maxlen, max_bytes)
            if seen:
                args[0] = "*"
            commands += [*before, ("EVALSHA", log._sync.sha, len(log._sync_keys),
                                   *log._sync_keys, *args)]
            sent.append((item, len(commands) - 1, now_ms))
        if not sent:
            return outcomes
        try:
            replies = self._exchange_all(*commands)
        except self.redis_errors as exc:
            self._lost()
            return outcomes + [(item, self.unavailable(exc), 0) for item, _, _ in sent]
        if any(isinstance(replies[index], self._no_script) for _, index, _ in sent):
            with contextlib.suppress(*self.redis_errors):
                self._load_scripts()  # Redis lost its script cache: those items run alone
        return outcomes + [(item, replies[index], now_ms) for item, index, now_ms in sent]

    def _resolve(self, outcomes: list[tuple[tuple[Any, ...], Any, int]]
                 ) -> list[tuple[asyncio.Future[Any], Any, BaseException | None]]:
        """Each read's future with what its reply means (outside the connection's lock; the
        futures are resolved on their loop by `_flush`)."""
        behind: set[SharedLog] = set()
        settled: list[tuple[asyncio.Future[Any], Any, BaseException | None]] = []
        for item, reply, now_ms in outcomes:
            log, view, entry, maxlen, max_bytes, future = item
            try:
                if isinstance(reply, BaseException) and not isinstance(reply, self._no_script):
                    raise reply
                if isinstance(reply, self._no_script):
                    result = log._confirm(view, view.count, entry, maxlen, max_bytes,
                                          answer=True)
                else:
                    result = log._outcome(view, view.count, reply, now_ms, answer=True,
                                          absorb=False)
            except StaleRead:
                behind.add(log)
                settled.append((future, None, StaleRead()))
            except self._response_error as exc:
                settled.append((future, None, self.unavailable(exc)))
            except (ApiError, *self.redis_errors) as exc:  # type: ignore[misc]
                settled.append((future, None, exc if isinstance(exc, ApiError)
                                else self.unavailable(exc)))
            else:
                settled.append((future, result, None))
        for log in behind:  # their reads run again, on the caught-up copy
            with contextlib.suppress(ApiError, *self.redis_errors):
                log.catch_up()
        return settled

    def _sync_args(self, count: tuple[str, str] | None, entry: tuple[bytes, int] | None,
                   maxlen: int, max_bytes: int
                   ) -> tuple[list[Any], tuple[tuple[Any, ...], ...], int]:
        """The `_SYNC` arguments that confirm this worker's place (and count, and record
        `entry`), the commands to send before it, and the clock it counted at."""
        args: list[Any] = [self.last_id, self.epoch, CATCH_UP_BATCH, secrets.token_hex(8)]
        now_ms = 0
        if count is not None:
            now_ms = self.state.clock.now_ms()
            args += [count[0], count[1], now_ms]
        elif entry is not None:
            args += ["", "", 0]
        before: tuple[tuple[Any, ...], ...] = ()
        if entry is not None:  # staged by a plain RPUSH in the same write
            args += [entry[1], maxlen, max_bytes]
            before = (("RPUSH", self.keys["stage"], entry[0]),)
        return args, before, now_ms

    def _confirm(self, view: View, count: tuple[str, str] | None,
                 entry: tuple[bytes, int] | None = None, maxlen: int = 0, max_bytes: int = 0,
                 *, answer: bool = False) -> TooManyRequests | None:
        with self.lock:
            seen = self._seen_current(view)
            if not seen and (view.last_id != self.last_id or view.epoch != self.epoch):
                raise StaleRead  # this worker applied entries since the request read
            args, before, now_ms = self._sync_args(count, entry, maxlen, max_bytes)
            if seen:
                args[0] = "*"
            reply = self.call(self._sync, self._sync_keys, args, *before)
            return self._outcome(view, count, reply, now_ms, answer=answer)

    def _outcome(self, view: View, count: tuple[str, str] | None, reply: list[Any],
                 now_ms: int, *, answer: bool, absorb: bool = True) -> TooManyRequests | None:
        """What a `_SYNC` reply to a request's round trip means: StaleRead (after applying
        the new entries when `absorb`), the 429 (raised, or returned when `answer`), or
        None."""
        if _behind(reply):
            if not absorb:
                raise StaleRead
            store = self.state.store
            tx = store._tx
            if tx is not None and tx.dirty(store):  # pragma: no cover - a pipeline bug
                raise RuntimeError("a request counted after it wrote")
            done, _ = self._absorb(reply)
            if not done:
                self.catch_up()
            if tx is not None:  # opened around the handler: undoing it keeps the entries
                tx.counter, tx.last_ms = store._counter, store._last_ms
            raise StaleRead
        view.confirmed = True
        if len(reply) == 4:
            assert count is not None
            over = _too_many(count[0], int(reply[2]), int(reply[3]), now_ms)
            if answer:
                return over
            raise over
        return None

    # -- compaction ----------------------------------------------------------------------------

    def maybe_compact(self) -> None:
        """Write a checkpoint when the log has grown past `compact_after` since its last base
        (call under the lock, caught up). A failure leaves the log as it was: the next write
        tries again."""
        if self.since_base < self.compact_after:
            return
        try:
            ok, last = self.call(self._checkpoint, [self.keys["log"], self.keys["last"],
                                                    self.keys["epoch"]],
                                 [self.last_id, self.epoch, *checkpoint_fields(self.state)])
        except StateUnavailable as exc:
            log.warning("log compaction: %s", exc.message)
            return
        if ok:
            self.last_id = last.decode()
            self.since_base = 0

    # -- writing -------------------------------------------------------------------------------

    def transaction(self, fn: Callable[[], T], *, fresh: bool = True,
                    view: View | None = None) -> T:
        """Run `fn` on the caught-up state and append what it changed, as one entry.

        `fn` may run more than once: when another worker appended first, its changes are
        undone and it runs again after catching up (so it must depend only on the state and
        its inputs). `fresh=False` skips the first catch-up (the caller has just done it).
        `view`: the request running `fn`, whose deferred round trip (`confirm`) the append
        makes: its count goes with the write.
        """
        store = self.state.store
        with self.lock:
            if store._tx is not None:  # already inside one: its commit covers this too
                return fn()
            for attempt in range(MAX_ATTEMPTS):
                if fresh or attempt:
                    self.catch_up()
                tx = _Tx(store._counter, store._last_ms)
                store._tx = tx
                failed: ApiError | None = None
                try:
                    result = fn()
                except ApiError as exc:  # an answer like any other: what it wrote stands
                    failed = exc
                except BaseException:
                    store._tx = None
                    self.undo(tx)
                    raise
                store._tx = None
                # The request's deferred round trip (`confirm`): its count goes with the append.
                deferred = view if view is not None and view.pending else None
                if tx.dirty(store):
                    try:
                        committed = self.commit(tx, deferred.count if deferred else None)
                    except TooManyRequests:  # nothing appended: nothing of it stands
                        self.undo(tx)
                        self._settled(deferred)
                        raise
                    except StateUnavailable:
                        self.undo(tx)
                        if deferred is not None:  # answered 503: not counted afterwards
                            deferred.pending = False
                        raise
                    except OffLoop:  # a read that wrote after all: run again in a thread
                        self.undo(tx)
                        raise
                    if not committed:
                        self.undo(tx)
                        continue
                    self._settled(deferred)
                if failed is not None:
                    raise failed
                return result
            raise StateUnavailable(f"shared state busy: a write lost {MAX_ATTEMPTS} times in a "
                                   "row to other workers; retry")

    def commit(self, tx: _Tx, count: tuple[str, str] | None = None) -> bool:
        """Append the transaction's effects if the log still ends where this worker is
        (counting the request, `count`, in the same script)."""
        store = self.state.store
        entry = {"k": "w", "o": [[t, k, r] for (t, k), r in tx.writes.items()],
                 "c": store._counter, "m": store._last_ms}
        fields: list[Any] = ["d", orjson.dumps(entry)]
        for storage_id, content in tx.files.items():
            fields += [f"f:{storage_id}", content]
        expected = self.last_id
        ok, last = self.append(fields, expected=expected, count=count)
        if ok:
            self._seen = (self.epoch, expected, self._views)
            self.last_id = last
            self.since_base += 1
            self.maybe_compact()
        return ok

    def append(self, fields: list[Any], *, expected: str, base: bool = False,
               limits: dict[str, Any] | None = None,
               count: tuple[str, str] | None = None) -> tuple[bool, str]:
        """Append an entry if the log ends at `expected`; (whether it did, the last id). With
        `count` (kind, ident), the request is counted in its rate-limit window in the same
        script: TooManyRequests past the limit (nothing appended)."""
        flat = [x for kv in (limits or {}).items() for x in kv]
        now_ms = self.state.clock.now_ms() if count is not None else 0
        reply = self.call(self._append, [self.keys[k] for k in
                                         ("log", "last", "epoch", "journal", "windows",
                                          "limits", "jsizes", "jmeta")],
                          [expected, int(base), self.epoch or secrets.token_hex(8),
                           int(limits is not None), len(flat),
                           *(count or ("", "")), now_ms, *flat, *fields])
        if reply[0] == 2:
            assert count is not None
            raise _too_many(count[0], int(reply[1]), int(reply[2]), now_ms)
        return bool(reply[0]), reply[1].decode()

    def undo(self, tx: _Tx) -> None:
        store = self.state.store
        for table, key, old in reversed(tx.undo):
            if old is None:
                Store.delete(store, table, key)
            else:
                Store.insert(store, table, old)
        store._counter, store._last_ms = tx.counter, tx.last_ms
        for storage_id in tx.files:
            self.state.files.discard(storage_id)

    def control(self, entry: dict[str, Any], *, base: bool = False,
                limits: dict[str, Any] | None = None, extra: list[Any] | None = None) -> Any:
        """Append a control action, then apply the log up to it; returns what applying it
        returned on this worker (every worker applies it the same way)."""
        with self.lock:
            self.catch_up()
            _, entry_id = self.append(["d", orjson.dumps(entry), *(extra or [])],
                                      expected="*", base=base, limits=limits)
            result = self.catch_up(entry_id)
            self.maybe_compact()
            return result

    def close(self) -> None:
        with self.lock:
            with contextlib.suppress(*self.redis_errors):
                self._read_posted()
            if self._conn is not None:
                self._conn.disconnect()
        self.client.close()


class SharedMockState(MockState):
    """A mock state that is one worker's copy of a shared mock (see the module docstring).

    Reads use the local parts as `MockState` does; every change goes through the log: writes
    of requests as transactions (`transaction`), the state's methods as control entries. The
    journal and rate limits are Redis structures (`SharedJournal`, `SharedRateLimiter`).
    """

    replicated = True

    def __init__(self, dataset: Dataset | Shared, settings: Settings | None = None, *,
                 url: str, namespace: str = "mock", fixtures: str = "", spec: Any = None,
                 name: str = "default", journal_size: int = 1000,
                 journal_bytes: int = MAX_JOURNAL_BYTES,
                 response_cache: int = 256, base: Base | None = None,
                 dataset_key: str | None = None,
                 log: Callable[[SharedMockState], SharedLog] | None = None) -> None:
        super().__init__(dataset, settings, name=name, journal_size=journal_size,
                         journal_bytes=journal_bytes,
                         response_cache=response_cache)
        self.initial_shared = self.shared
        # What a session starts from (a snapshot's base, another dataset) and rebases to.
        self.initial_base: Base = base or self.shared.seed
        self.initial_key = dataset_key
        self.initial_settings = self.settings
        self.spec = spec
        # Parts whose own mutators route to this state's methods (a caller that moves
        # `state.clock` or adds to `state.faults` directly still changes the shared mock).
        self.clock = SharedClock(frozen_at=self.settings.frozen_clock)
        self.clock.owner = self
        self.faults = SharedFaults(self.settings.seed)
        self.faults.owner = self
        self.store: SharedStore = SharedStore(self.initial_base, clock=self.clock,
                                              seed=self.settings.seed)
        self.files: SharedFileStore = SharedFileStore()
        self.files.store = self.store
        self.log = log_ = SharedLog(self, url, namespace) if log is None else log(self)
        self.store.log = log_
        self.journal: SharedJournal = SharedJournal(journal_size, journal_bytes, log_)
        self.limiter = SharedRateLimiter(self.clock, log_)
        self._dataset_key = dataset_key  # the loaded dataset's key in Redis; None: initial
        self._fault_next = 1  # the next fault rule's id (ids continue across resets)
        log_.start({"fixtures": fixtures, "seed": str(self.settings.seed)},
                   self.initial_limits(self.shared))

    # -- what the pipeline calls around a request ------------------------------------------------

    async def off_loop(self, fn: Callable[..., T], *args: Any,
                       scope: MutableMapping[str, Any] | None = None) -> T:
        """`fn(*args)`, which may call Redis, in one of the worker's threads (`off_loop`):
        the event loop never waits for Redis. `scope`: the request's (its ticket)."""
        return await off_loop(self.log, fn, *args, scope=scope)

    async def run(self, fn: Callable[..., T], *args: Any, scope: MutableMapping[str, Any],
                  inline: bool) -> T:
        """`fn(*args)` for a request: with `inline` (a read, which calls Redis only in its
        round trip, `settle`), on the event loop when this state's lock is free, else, or
        when it calls Redis after all (OffLoop: undone, as a stale read is), in one of the
        worker's threads (`off_loop`). Reads stay on the loop and settle together (R18)."""
        if inline and "mock.off_loop" not in scope:
            lock = self.store.lock
            if lock.acquire(blocking=False):
                owner = self.log.connection_owner()
                _REQUEST.ticket = (owner, scope.setdefault("mock.ticket", owner.failures))
                _REQUEST.inline = True
                try:
                    return fn(*args)
                except OffLoop:
                    scope["mock.off_loop"] = True  # and its reruns
                finally:
                    _REQUEST.inline = False
                    _REQUEST.ticket = None
                    lock.release()
        return await off_loop(self.log, fn, *args, scope=scope)

    def sync(self) -> None:
        """Apply what other workers wrote (one round trip when nothing is new)."""
        self.log.catch_up()

    def view(self) -> View:
        """What a request starting now reads (the pipeline confirms it; see `confirm`)."""
        return self.log.view()

    def confirm(self, view: View) -> None:
        """One round trip: the request read the shared mock's present (else StaleRead, after
        catching up: the pipeline runs it again)."""
        self.log.confirm(view)

    async def settle(self, view: View, entry: tuple[Any, ...] | None) -> TooManyRequests | None:
        """A read's deferred round trip (SharedLog.settle), with its journal entry
        (`Journal.record`'s fields) when given: None, or the 429 to answer instead."""
        journal = self.journal
        encoded = journal.encode(*entry) if entry is not None else None
        return await self.log.settle(view, encoded, journal.maxlen, journal.max_bytes)

    def count_request(self, kind: str, ident: str, view: Any = None) -> None:
        """Confirm `view` and count the request, in one round trip (429 past the limit)."""
        if view is None:  # counted outside the pipeline: no read to confirm
            self.limiter.hit(kind, ident)
        else:
            self.log.confirm(view, (kind, ident))

    def transaction(self, fn: Callable[[], T], *, fresh: bool = True,
                    view: View | None = None) -> T:
        return self.log.transaction(fn, fresh=fresh, view=view)

    # -- the state's methods, as log entries -----------------------------------------------------

    def reset(self, *, seed: int = KEEP, rate_limit: int = KEEP,
              frozen_clock: str | None = KEEP, workspace_limits: bool = KEEP) -> None:
        changes: dict[str, Any] = {name: value for name, value in (
            ("seed", seed), ("rate_limit", rate_limit), ("frozen_clock", frozen_clock),
            ("workspace_limits", workspace_limits)) if value is not KEEP}
        with self.log.lock:
            self.log.catch_up()
            settings = dataclasses.replace(self.settings, **changes)
            self.log.control({"k": "reset", "settings": dataclasses.asdict(settings),
                              "dataset": self._dataset_key, "fault_id": self._fault_next},
                             base=True, limits=self.initial_limits(self.shared, settings))

    def load_dataset(self, dataset: Dataset | Shared) -> None:
        shared = dataset if isinstance(dataset, Shared) else Shared(dataset)
        dataset = shared.dataset
        blob = orjson.dumps({"tables": dataset.tables, "tokens": dataset.tokens})
        key = self.log.datasets_prefix + hashlib.blake2b(blob, digest_size=16).hexdigest()
        self.log.command("SET", key, blob)
        with self.log.lock:
            self.log.catch_up()
            self._loaded = (key, shared)
            try:
                self.log.control({"k": "load", "dataset": key},
                                 limits=self.initial_limits(shared, self.settings))
            finally:
                self._loaded = None

    def set_clock(self, instant: str) -> None:
        target = parse_clock(instant)  # ValueError before anything is appended
        self.log.control({"k": "clock", "target_ms": target,
                          "wall_ms": Clock(None).now_ms()})

    def advance_clock(self, seconds: float) -> None:
        if not math.isfinite(seconds):  # ValueError before anything is appended
            raise ValueError("not a finite number of seconds")
        check_clock(self.clock.now_ms() + int(seconds * 1000))
        self.log.control({"k": "clock", "advance_ms": int(seconds * 1000)})

    def add_fault(self, **spec: Any) -> FaultRule:
        FaultRule(id=0, **spec)  # refused (ValueError, TypeError) before anything is appended
        rule: FaultRule = self.log.control({"k": "fault_add", "spec": spec})
        return rule

    def clear_faults(self) -> int:
        return int(self.log.control({"k": "fault_clear"}))

    def take_fault(self, method: str, path: str) -> FaultRule | None:
        if not any(rule.matches(method, path) for rule in self.faults.rules):
            return None  # nothing would change: no entry
        try:
            found: FaultRule | None = self.log.control(
                {"k": "fault_take", "method": method, "path": path})
        except StateUnavailable:
            return None  # the request itself then meets Redis's absence (503)
        return found

    def accept_upload(self, token: str, content: bytes, content_type: str,
                      keys: StorageKeys | None = None) -> str:
        return self.transaction(
            lambda: MockState.accept_upload(self, token, content, content_type, keys))

    def initial_limits(self, shared: Shared,
                       settings: Settings | None = None) -> dict[str, Any]:
        """The rate-limit settings of a fresh mock on `dataset` (the Redis hash's fields)."""
        settings = settings or self.settings
        per_minute = settings.rate_limit
        limits: dict[str, Any] = {"default": per_minute, "enabled": int(per_minute > 0)}
        if settings.workspace_limits:
            for workspace_id, limit in shared.plan_limits.items():
                limits[f"ws:{workspace_id}"] = limit
        return limits

    # -- applying entries (every worker, in log order) -------------------------------------------

    _loaded: tuple[str, Shared] | None = None

    def apply(self, raw_fields: list[bytes]) -> Any:
        fields = dict(zip(raw_fields[::2], raw_fields[1::2], strict=True))
        entry = orjson.loads(fields[b"d"])
        kind = entry["k"]
        self.log.since_base += 1
        if kind == "w":
            store = self.store
            for table, key, record in entry["o"]:
                if record is None:
                    Store.delete(store, table, key)
                else:
                    Store.insert(store, table, record)
            store._counter, store._last_ms = entry["c"], entry["m"]
            for name, value in fields.items():
                if name.startswith(b"f:"):
                    FileStore.put(self.files, name[2:].decode(), value)
            return None
        if kind == "reset":
            self._use_dataset(entry["dataset"])
            self._local_reset(Settings(**entry["settings"]))
            self._fault_next = entry["fault_id"]
            self.log.since_base = 0
            return None
        if kind == "checkpoint":
            restore_checkpoint(self, entry, fields)
            self.log.since_base = 0
            return None
        if kind == "load":
            self._use_dataset(entry["dataset"])
            self.cache.clear()
            FileStore.clear(self.files)
            return None
        if kind == "clock":
            self._move_clock(entry)
            return None
        faults = self.faults
        if kind == "fault_add":
            faults._ids = itertools.count(self._fault_next)  # ids continue across workers
            rule = Faults.add(faults, **entry["spec"])
            self._fault_next = rule.id + 1
            return rule
        if kind == "fault_take":
            return Faults.take(faults, entry["method"], entry["path"])
        if kind == "fault_clear":
            return Faults.clear(faults)
        raise SharedStateError(f"unknown entry kind {kind!r} in {self.log.keys['log']}")

    def _use_dataset(self, key: str | None) -> None:
        if key == self._dataset_key:
            return
        if key == self.initial_key:
            self.shared = self.initial_shared
            Store.load(self.store, self.initial_base)
            self._dataset_key = key
            return
        if self._loaded is not None and self._loaded[0] == key:
            shared = self._loaded[1]
        else:
            shared = self.shared_for(key)
        self.shared = shared
        Store.load(self.store, shared.seed)
        self._dataset_key = key

    def shared_for(self, key: str | None) -> Shared:
        """The dataset stored in Redis under `key` (loaded through the control API)."""
        if key is None:
            return self.initial_shared
        blob = self.log.command("GET", key)
        if blob is None:
            raise self.log.unavailable(f"dataset {key} is missing")
        data = orjson.loads(blob)
        return Shared(Dataset(tables=data["tables"], tokens=data["tokens"]))

    def _local_reset(self, settings: Settings) -> None:
        """What a reset changes in this worker (the Redis side is done by whoever reset)."""
        self.settings = settings
        self.store.seed = settings.seed
        Store.reset(self.store)
        self.clock.restart(settings.frozen_clock)
        Faults.clear(self.faults)
        Faults.reseed(self.faults, settings.seed)  # as MockState.reset: draws start over
        self.cache.clear()
        FileStore.clear(self.files)

    def _move_clock(self, entry: dict[str, Any]) -> None:
        clock = self.clock
        with clock._lock:
            if "advance_ms" in entry:
                if clock._frozen_ms is not None:
                    clock._frozen_ms += entry["advance_ms"]
                else:
                    clock._offset_ms += entry["advance_ms"]
            elif clock._frozen_ms is not None:
                clock._frozen_ms = entry["target_ms"]
            else:  # a real clock keeps the offset the writer computed
                clock._offset_ms = entry["target_ms"] - entry["wall_ms"]

    def close(self, *, drop: bool = False) -> None:
        """Close the connection; `drop` deletes the namespace's keys first."""
        if drop:
            client = self.log.client
            with contextlib.suppress(*self.log.redis_errors):
                keys = list(client.scan_iter(match=self.log.prefix + "*", count=1000))
                if keys:
                    client.delete(*keys)
        self.log.close()

    def use_cursors(self, codec: CursorCodec) -> None:
        """Sign and check cursors with the namespace's secret (kept in Redis), now and after
        Redis lost the namespace: a `next_cursor` is good on every worker and process."""
        codec.rekey(self.log.cursor_secret)
        self.log.on_secret = codec.rekey

    def rebase(self) -> None:
        """Back to this worker's start-up state (the namespace's log was lost)."""
        self._use_dataset(self.initial_key)
        self._local_reset(self.initial_settings)
        self._fault_next = 1


# -- the parts that differ --------------------------------------------------------------------

class SharedStore(Store):
    """The store, recording every write into the open transaction (one is opened around a
    write made outside any, so writes from tests and helpers are shared too)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._tx: _Tx | None = None
        self.log: SharedLog | None = None
        super().__init__(*args, **kwargs)

    def _auto(self, fn: Callable[[], T]) -> T:
        assert self.log is not None
        return self.log.transaction(fn)

    def insert(self, table: str, record: Record) -> Record:
        with self.lock:
            tx = self._tx
            if tx is None:
                return self._auto(lambda: self.insert(table, record))
            key = record[self.key_fields[table]]
            tx.undo.append((table, key, self.get(table, key)))
            Store.insert(self, table, record)
            tx.writes[(table, key)] = record
            return record

    def update(self, table: str, key: str, changes: Any) -> Record:
        with self.lock:
            tx = self._tx
            if tx is None:
                return self._auto(lambda: self.update(table, key, changes))
            old = self.get(table, key)
            new = Store.update(self, table, key, changes)
            tx.undo.append((table, key, old))
            tx.writes[(table, key)] = new
            return new

    def delete(self, table: str, key: str) -> Record | None:
        with self.lock:
            tx = self._tx
            if tx is None:
                return self._auto(lambda: self.delete(table, key))
            old = Store.delete(self, table, key)
            if old is not None:
                tx.undo.append((table, key, old))
                tx.writes[(table, key)] = None
            return old

    def new_id(self, prefix: str = "", length: int = 32) -> str:
        with self.lock:
            if self._tx is None:
                return self._auto(lambda: self.new_id(prefix, length))
            return Store.new_id(self, prefix, length)

    def new_hex_id(self) -> str:
        with self.lock:
            if self._tx is None:
                return self._auto(self.new_hex_id)
            return Store.new_hex_id(self)

    def now(self) -> str:
        with self.lock:
            if self._tx is None:
                return self._auto(self.now)
            return Store.now(self)


class SharedClock(Clock):
    """The clock of a shared state: moving it is a log entry (the state's methods)."""

    owner: SharedMockState

    def advance(self, seconds: float) -> None:
        self.owner.advance_clock(seconds)

    def set(self, instant: str) -> None:
        self.owner.set_clock(instant)


class SharedFaults(Faults):
    """The fault rules of a shared state: adding, clearing and firing one are log entries."""

    owner: SharedMockState

    def add(self, **spec: Any) -> FaultRule:
        return self.owner.add_fault(**spec)

    def clear(self) -> int:
        return self.owner.clear_faults()

    def take(self, method: str, path: str) -> FaultRule | None:
        return self.owner.take_fault(method, path)


class SharedFileStore(FileStore):
    """Uploaded bytes travel in the log entry of the upload that stored them."""

    store: SharedStore | None = None

    def put(self, storage_id: str, content: bytes) -> None:
        store = self.store
        assert store is not None
        with store.lock:
            tx = store._tx
            if tx is None:
                store._auto(lambda: self.put(storage_id, content))
                return
            tx.files[storage_id] = content
            super().put(storage_id, content)

    def discard(self, storage_id: str) -> None:
        with self._lock:
            content = self._files.pop(storage_id, None)
            if content is not None:
                self._size -= len(content)


class _Limits(MutableMapping[str, int]):
    """Per-workspace limits, in the namespace's limits hash (fields `ws:<id>`)."""

    def __init__(self, shared: SharedLog) -> None:
        self.shared = shared

    def _all(self) -> dict[str, int]:
        raw = self.shared.command("HGETALL", self.shared.keys["limits"])  # field, value, ...
        return {k.decode()[3:]: int(v) for k, v in zip(raw[::2], raw[1::2], strict=True)
                if k.startswith(b"ws:")}

    def __getitem__(self, key: str) -> int:
        value = self.shared.command("HGET", self.shared.keys["limits"], f"ws:{key}")
        if value is None:
            raise KeyError(key)
        return int(value)

    def __setitem__(self, key: str, value: int) -> None:
        self.shared.command("HSET", self.shared.keys["limits"], f"ws:{key}", value)

    def __delitem__(self, key: str) -> None:
        if not self.shared.command("HDEL", self.shared.keys["limits"], f"ws:{key}"):
            raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        return iter(self._all())

    def __len__(self) -> int:
        return len(self._all())

    def clear(self) -> None:
        fields = [f"ws:{k}" for k in self._all()]
        if fields:
            self.shared.command("HDEL", self.shared.keys["limits"], *fields)


class SharedRateLimiter(RateLimiter):
    """Windows and limits in Redis: one window per workspace (or token) for all workers."""

    def __init__(self, clock: Clock, shared: SharedLog) -> None:  # no super(): no local state
        self.clock = clock
        self.shared = shared
        self.per_workspace = _Limits(shared)  # type: ignore[assignment]
        self._hash = shared.keys["limits"]

    def _setting(self, name: str) -> str | None:
        value = self.shared.command("HGET", self._hash, name)
        return None if value is None else value.decode()

    @property
    def default(self) -> int:  # type: ignore[override]
        return int(self._setting("default") or 0)

    @property
    def enabled(self) -> bool:  # type: ignore[override]
        return self._setting("enabled") == "1"

    def configure(self, *, per_minute: int | None = None, enabled: bool | None = None) -> None:
        changes: dict[str, int] = {}
        if per_minute is not None:
            changes["default"] = per_minute
        if enabled is not None:
            changes["enabled"] = int(enabled)
        if per_minute is not None and enabled is None:
            changes["enabled"] = int(per_minute > 0)
        if changes:
            self.shared.command("HSET", self._hash, *[x for kv in changes.items() for x in kv])

    def limit_for(self, kind: str, ident: str) -> int:
        if kind == "workspace":
            value = self._setting(f"ws:{ident}")
            if value is not None:
                return int(value)
        return self.default

    def reset(self) -> None:
        self.shared.command("DEL", self.shared.keys["windows"])

    def hit(self, kind: str, ident: str) -> None:
        now_ms = self.clock.now_ms()
        reply = self.shared.call(self.shared._hit, [self._hash, self.shared.keys["windows"]],
                                 [kind, ident, now_ms])
        if reply[0]:
            raise _too_many(kind, int(reply[1]), int(reply[2]), now_ms)


class SharedJournal(Journal):
    """The request journal as a Redis list that every worker records into, bounded as in
    memory by its number of entries (`--journal-size`) and by the bytes they keep
    (`--journal-bytes`, counted as `JournalEntry.kept_bytes`); bodies over 64 KiB are kept as
    their size. Entries are numbered by Redis: the entry `record` returns has `seq` 0."""

    def __init__(self, maxlen: int, max_bytes: int, shared: SharedLog) -> None:
        super().__init__(maxlen, max_bytes)
        self.shared = shared
        keys = shared.keys
        self._keys = [keys[k] for k in ("journal", "jsizes", "jmeta", "stage")]
        # A session's entries are recorded only while it exists (_RECORD).
        self._record_keys = [*self._keys, keys["epoch"]] if shared.guarded else self._keys

    def record(self, *fields: Any) -> None:
        """`Journal.record`'s fields; sent before the answer, its reply read on the next call
        (SharedLog.post)."""
        data, size = self.encode(*fields)
        # EVAL rather than EVALSHA: posted, a script cache Redis lost would lose the entry.
        try:
            keys = self._record_keys
            self.shared.post(("RPUSH", keys[3], data),
                             ("EVAL", _RECORD, len(keys), *keys, size, self.maxlen,
                              self.max_bytes))
        except StateUnavailable as exc:  # the answer is sent all the same; the entry is lost
            log.warning("request journal: %s", exc.message)

    def encode(self, time_ms: int, method: str, path: str, query_string: bytes,
               raw_headers: Iterable[tuple[bytes, bytes]], body: bytes | None, status: int,
               response_body: bytes | None, latency_ms: float, operation_id: str | None,
               fault: str | None, ignored_params: tuple[str, ...] = (),
               header_bytes: int | None = None) -> tuple[bytes, int]:
        """An entry as stored in Redis (`Journal.record`'s fields), and its size."""
        body, response_body, truncated, body_size, response_size = kept_bodies(
            body, response_body)
        headers = tuple(raw_headers)
        if header_bytes is None:
            header_bytes = header_size(headers)
        size = (len(body or b"") + len(response_body or b"") + len(query_string) + header_bytes
                + _ENTRY_OVERHEAD)  # JournalEntry.kept_bytes, as Journal.record counts it
        # The fields as JSON, a newline (never in orjson's output), then both bodies as they are.
        data = b"".join((orjson.dumps({
            "t": time_ms, "m": method, "p": path, "q": query_string.decode("latin-1"),
            "h": [[k.decode("latin-1"), v.decode("latin-1")] for k, v in headers],
            "b": None if body is None else len(body), "s": status,
            "r": None if response_body is None else len(response_body), "l": latency_ms,
            "o": operation_id, "f": fault, "i": list(ignored_params),
            "x": list(truncated), "bs": body_size, "rs": response_size,
            "w": int(time.time() * 1000 - latency_ms),  # wall time of arrival
        }), b"\n", body or b"", response_body or b""))
        return data, size

    def clear(self) -> int:
        return int(self.shared.call(self.shared._clear, self._keys, []))

    @property
    def dropped(self) -> int:
        """Entries that fell off (either bound) since the last clear."""
        return int(self.shared.command("HGET", self.shared.keys["jmeta"], "dropped") or 0)

    @dropped.setter
    def dropped(self, value: int) -> None:
        pass  # counted in Redis

    @property
    def kept_bytes(self) -> int:
        return int(self.shared.command("HGET", self.shared.keys["jmeta"], "bytes") or 0)

    def __len__(self) -> int:
        return int(self.shared.command("LLEN", self.shared.keys["journal"]))

    def _all(self) -> list[JournalEntry]:
        keys = self.shared.keys
        last, raws = self.shared.atomically(("HGET", keys["jmeta"], "seq"),
                                            ("LRANGE", keys["journal"], 0, -1))
        out = []
        for seq, raw in enumerate(raws, int(last or 0) - len(raws) + 1):
            meta, _, bodies = raw.partition(b"\n")
            e = orjson.loads(meta)
            body_length = e["b"] or 0
            out.append(JournalEntry(
                seq=seq, time_ms=e["t"], method=e["m"], path=e["p"],
                query_string=e["q"].encode("latin-1"),
                raw_headers=tuple((k.encode("latin-1"), v.encode("latin-1")) for k, v in e["h"]),
                body=None if e["b"] is None else bodies[:body_length], status=e["s"],
                response_body=None if e["r"] is None else bodies[body_length:],
                latency_ms=e["l"], operation_id=e["o"], fault=e["f"],
                ignored_params=tuple(e["i"]), truncated=tuple(e["x"]), body_size=e["bs"],
                response_size=e["rs"], wall_ms=e.get("w", 0)))
        return out

    def __iter__(self) -> Iterator[JournalEntry]:
        return iter(self._all())


# -- wiring ----------------------------------------------------------------------------------

def shared_state(url: str, *, namespace: str, dataset: Dataset, settings: Settings,
                 fixtures: list[Path], spec: Any, journal_size: int, journal_bytes: int,
                 response_cache: int) -> SharedMockState:
    """The state of one worker of the shared mock `namespace` on the Redis at `url`."""
    return SharedMockState(
        dataset, settings, url=url, namespace=namespace, spec=spec,
        fixtures=orjson.dumps([str(Path(p).resolve()) for p in fixtures]).decode(),
        journal_size=journal_size, journal_bytes=journal_bytes,
        response_cache=response_cache)
