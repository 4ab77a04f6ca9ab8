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
import logging
import math
import secrets
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from ..commands import Checkpoint, Command, Write
from ..errors import ApiError, StaleRead, TooManyRequests, too_many_requests
from ..ratelimit import WINDOW_SECONDS
from ..store import Changes
from .batch import ReadBatches
from .codec import decode, encode
from .lua import script
from .transport import (
    _REQUEST,
    REDIS_TIMEOUT,
    Connection,
    OffLoop,
    SharedStateError,
    StateUnavailable,
    connect,
    off_loop,
)

if TYPE_CHECKING:
    from ..clock import Clock
    from ..storage import FileStore
    from ..store import Store


__all__ = ["REDIS_TIMEOUT", "SharedLog", "SharedStateError", "StateUnavailable", "View",
           "connect", "off_loop"]

log = logging.getLogger("mockserver.shared")

T = TypeVar("T")

MAX_ATTEMPTS = 64  # optimistic retries of one write before answering 503
CATCH_UP_BATCH = 1000

COMPACT_AFTER = 10_000  # entries after the last base before a worker writes a checkpoint


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


class Replica(Protocol):
    """What a log needs of the state it replicates (replication/state.py's SharedMockState)."""

    store: Store
    files: FileStore
    clock: Clock

    def apply(self, command: Command) -> Any: ...

    def export(self, after: str = "") -> Checkpoint: ...

    def rebase(self) -> None: ...


# -- what a request read ---------------------------------------------------------------------

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


def append_deadline_ms() -> int:
    """The Unix ms after which Redis refuses to run an append (append.lua): half a second
    before this worker stops waiting for the reply (REDIS_TIMEOUT), so an append that a 503
    answered (Redis paused, `DEBUG SLEEP`) is never applied once Redis resumes (DECISIONS
    H33; the worker's and Redis's clocks are taken to agree within that margin)."""
    return int((time.time() + REDIS_TIMEOUT - 0.5) * 1000)


def _behind(reply: list[Any]) -> bool:
    """Whether a `_SYNC` reply holds entries the worker has not applied (its third item is
    then their list, not a limit)."""
    return len(reply) > 2 and isinstance(reply[2], list)


def _too_many(kind: str, limit: int, start_ms: int, now_ms: int) -> TooManyRequests:
    """The 429 of a full window, as RateLimiter.hit words it."""
    retry_after = max(1, math.ceil((start_ms + WINDOW_SECONDS * 1000 - now_ms) / 1000))
    return too_many_requests(retry_after, limit, kind)


# -- the log ---------------------------------------------------------------------------------

class SharedLog:
    """The replicated log of one mock (a namespace in one Redis) and the worker's place in it."""

    def __init__(self, state: Replica, url: str, namespace: str, *,
                 connection: Connection | None = None, prefix: str | None = None) -> None:
        self.url = url
        self.namespace = namespace
        self.state = state
        self.lock = state.store.lock
        # The worker's own connection (transport.py); a session's log uses the default's.
        if connection is None:
            connection = Connection(connect(url), url, self.lock)
            connection.batches = ReadBatches(connection)
        self.connection = connection
        self.client = self.connection.client
        self.redis_errors = self.connection.redis_errors
        self.unreachable: tuple[type[BaseException], ...] = (StateUnavailable,
                                                             *self.redis_errors)
        # Datasets are the namespace's (content-addressed, shared by its sessions).
        self.datasets_prefix = f"mock:{{{namespace}}}:dataset:"
        prefix = prefix or f"mock:{{{namespace}}}:"
        self.prefix = prefix
        self.keys = {name: prefix + name for name in
                     ("log", "last", "epoch", "journal", "jsizes", "jmeta", "windows",
                      "limits", "meta")}
        register = self.client.register_script
        self.sync_script = register(_SYNC)
        self._append = register(_APPEND)
        self.hit_script = register(_HIT)
        self.clear_script = register(_CLEAR)
        self._meta = register(_META)
        self._secret = register(_SECRET)
        self._checkpoint = register(CHECKPOINT)
        self.connection.scripts += (self.sync_script, self._append, self.hit_script,
                                    self.clear_script, self._checkpoint, self._secret)
        # The worker's journal staging list (RedisJournal): one per connection.
        self.keys["stage"] = f"mock:{{{namespace}}}:jstage:{secrets.token_hex(6)}"
        self.sync_keys = [self.keys[k] for k in ("log", "last", "epoch", "limits", "windows",
                                                  "journal", "jsizes", "jmeta", "stage")]
        self.since_base = 0  # entries after the last base (reset, checkpoint) in the log
        self.compact_after = COMPACT_AFTER
        self.last_id = "0-0"  # the last entry this worker applied
        self.epoch = ""  # which incarnation of the namespace that id belongs to
        self._views = 0  # views taken so far (View.opened)
        # Where this worker's last own append found the log ending (epoch, id), and `_views`
        # then: the views taken by then at that place were current at that moment.
        self._seen: tuple[str, str, int] = ("", "", -1)
        self.guarded = False  # whether its keys go with an epoch that can be deleted (sessions)
        # The namespace's secret for cursors (`_SECRET`), read at start and again when Redis
        # lost the namespace; `on_secret` is told when it changes (the app's CursorCodec).
        self.cursor_secret = b""
        self.on_secret: Callable[[bytes], None] | None = None

    # -- Redis calls: through the connection, under this log's lock -------------------------------

    @property
    def failures(self) -> int:
        return self.connection.failures

    def unavailable(self, exc: BaseException | str) -> StateUnavailable:
        return self.connection.unavailable(exc)

    def call(self, script: Any, keys: list[str], args: list[Any],
             *before: tuple[Any, ...]) -> Any:
        """Run a Lua script (after the commands `before`, in the same write); its reply."""
        with self.lock:
            return self.connection.call(script, keys, args, *before)

    def command(self, name: str, *args: Any) -> Any:
        with self.lock:
            return self.connection.command(name, *args)

    def atomically(self, *commands: tuple[Any, ...]) -> list[Any]:
        with self.lock:
            return self.connection.atomically(*commands)

    def post(self, *commands: tuple[Any, ...]) -> None:
        with self.lock:
            self.connection.post(*commands)

    # -- joining the namespace ---------------------------------------------------------------------

    def start(self, settings: dict[str, str], limits: dict[str, Any]) -> None:
        """Join the namespace: check it was started with these settings (or is new), set its
        rate limits when new, and catch up with its log."""
        try:
            raw = self._meta(keys=[self.keys["meta"]],
                             args=[x for kv in settings.items() for x in kv])
            self.client.eval(_INIT_LIMITS, 1, self.keys["limits"],
                             *[x for kv in limits.items() for x in kv])
            with self.lock:
                self.connection.load_scripts()
                self.read_secret()
            self.catch_up()
        except self.unreachable as exc:  # (StateUnavailable, *redis_errors)
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
                reply = self.call(self.sync_script, self.sync_keys,
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
            value = self._apply(decode(raw_fields))
            self.last_id = entry_id
            if entry_id == wanted:
                result = value
        return len(entries) < CATCH_UP_BATCH, result

    def _apply(self, command: Command) -> Any:
        """Apply one entry's command (a base starts the count towards the next checkpoint
        over; a checkpoint taken where this worker is has nothing to change)."""
        self.since_base = 0 if command.base else self.since_base + 1
        if isinstance(command, Checkpoint) and command.after == self.last_id:
            return None
        return self.state.apply(command)

    def _rebuild(self) -> None:
        """Back to the start-up state, to apply the log Redis holds from its start."""
        self.last_id = "0-0"
        self.since_base = 0
        self._seen = ("", "", -1)  # no view taken so far reads what the log now holds
        self.state.rebase()

    def view(self) -> View:
        """Where this worker is in the log: what a request starting now reads."""
        owner = self.connection
        ticket = getattr(_REQUEST, "ticket", None)
        with self.lock:
            self._views += 1
            return View(self.epoch, self.last_id, self._views,
                        ticket[1] if ticket is not None and ticket[0] is owner
                        else owner.failures)

    def seen_current(self, view: View) -> bool:
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
        self.confirm_now(view, count)

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
            return await off_loop(self.connection, lambda: self.confirm_now(
                view, view.count, entry, maxlen, max_bytes, answer=True))
        future: asyncio.Future[TooManyRequests | None] = loop.create_future()
        assert self.connection.batches is not None
        self.connection.batches.enqueue(loop, (self, view, entry, maxlen, max_bytes, future))
        return await future

    def _settled(self, view: View | None) -> None:
        """A deferred view whose round trip was its write's append (confirmed, counted)."""
        if view is not None:
            view.pending = False
            view.confirmed = True

    def sync_args(self, count: tuple[str, str] | None, entry: tuple[bytes, int] | None,
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

    def confirm_now(self, view: View, count: tuple[str, str] | None,
                 entry: tuple[bytes, int] | None = None, maxlen: int = 0, max_bytes: int = 0,
                 *, answer: bool = False) -> TooManyRequests | None:
        with self.lock:
            seen = self.seen_current(view)
            if not seen and (view.last_id != self.last_id or view.epoch != self.epoch):
                raise StaleRead  # this worker applied entries since the request read
            args, before, now_ms = self.sync_args(count, entry, maxlen, max_bytes)
            if seen:
                args[0] = "*"
            reply = self.call(self.sync_script, self.sync_keys, args, *before)
            return self.outcome(view, count, reply, now_ms, answer=answer)

    def outcome(self, view: View, count: tuple[str, str] | None, reply: list[Any],
                 now_ms: int, *, answer: bool, absorb: bool = True) -> TooManyRequests | None:
        """What a `_SYNC` reply to a request's round trip means: StaleRead (after applying
        the new entries when `absorb`), the 429 (raised, or returned when `answer`), or
        None."""
        if _behind(reply):
            if not absorb:
                raise StaleRead
            store = self.state.store
            if store.pending:  # pragma: no cover - a pipeline bug
                raise RuntimeError("a request counted after it wrote")
            done, _ = self._absorb(reply)
            if not done:
                self.catch_up()
            store.caught_up()  # opened around the handler: undoing it keeps the entries
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
                                 [self.last_id, self.epoch,
                                  *encode(self.state.export(self.last_id))])
        except StateUnavailable as exc:
            log.warning("log compaction: %s", exc.message)
            return
        if ok:
            self.last_id = last.decode()
            self.since_base = 0

    # -- writing -------------------------------------------------------------------------------

    def transaction(self, fn: Callable[[], T], *, fresh: bool = True,
                    view: View | None = None) -> T:
        """Run `fn` on the caught-up state, in a transaction of its store, and append what it
        changed as one `Write`.

        `fn` may run more than once: when another worker appended first, its changes are
        undone and it runs again after catching up (so it must depend only on the state and
        its inputs). `fresh=False` skips the first catch-up (the caller has just done it).
        `view`: the request running `fn`, whose deferred round trip (`confirm`) the append
        makes: its count goes with the write.
        """
        store = self.state.store
        with self.lock:
            if store.in_transaction:  # already inside one: its commit covers this too
                return fn()
            for attempt in range(MAX_ATTEMPTS):
                if fresh or attempt:
                    self.catch_up()
                store.begin()
                failed: ApiError | None = None
                try:
                    result = fn()
                except ApiError as exc:  # an answer like any other: what it wrote stands
                    failed = exc
                except BaseException:
                    self.undo(store.end())
                    raise
                changes = store.end()
                # The request's deferred round trip (`confirm`): its count goes with the append.
                deferred = view if view is not None and view.pending else None
                if changes is not None and not self._commit(changes, deferred):
                    continue
                if failed is not None:
                    raise failed
                return result
            raise StateUnavailable(f"shared state busy: a write lost {MAX_ATTEMPTS} times in a "
                                   "row to other workers; retry")

    def _commit(self, changes: Changes, deferred: View | None) -> bool:
        """Append a transaction's changes (undone when the append fails or loses)."""
        try:
            committed = self.commit(changes, deferred.count if deferred else None)
        except TooManyRequests:  # nothing appended: nothing of it stands
            self.undo(changes)
            self._settled(deferred)
            raise
        except StateUnavailable:
            self.undo(changes)
            if deferred is not None:  # answered 503: not counted afterwards
                deferred.pending = False
            raise
        except OffLoop:  # a read that wrote after all: run again in a thread
            self.undo(changes)
            raise
        if not committed:
            self.undo(changes)
            return False
        self._settled(deferred)
        return True

    def commit(self, changes: Changes, count: tuple[str, str] | None = None) -> bool:
        """Append a transaction's changes if the log still ends where this worker is
        (counting the request, `count`, in the same script)."""
        write = Write(tuple((t, k, r) for (t, k), r in changes.records.items()),
                      *changes.until, changes.files)
        expected = self.last_id
        ok, last = self.append(encode(write), expected=expected, count=count)
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
                           *(count or ("", "")), now_ms, append_deadline_ms(), *flat,
                           *fields])
        if reply[0] == 3:
            raise StateUnavailable("shared state unavailable: Redis ran the write after this "
                                   "worker stopped waiting for it; not applied, retry")
        if reply[0] == 2:
            assert count is not None
            raise _too_many(count[0], int(reply[1]), int(reply[2]), now_ms)
        return bool(reply[0]), reply[1].decode()

    def undo(self, changes: Changes | None) -> None:
        """Take back what a transaction changed locally (its append failed or lost)."""
        if changes is not None:
            self.state.store.undo(changes)
            for storage_id in changes.files:
                self.state.files.discard(storage_id)

    def control(self, command: Command, *, limits: dict[str, Any] | None = None) -> Any:
        """Append a command, then apply the log up to it; returns what applying it returned
        on this worker (every worker applies it the same way). A base command (a reset)
        trims the log before it and empties the journal and windows; `limits` are set in
        the same script."""
        with self.lock:
            self.catch_up()
            _, entry_id = self.append(encode(command), expected="*", base=command.base,
                                      limits=limits)
            result = self.catch_up(entry_id)
            self.maybe_compact()
            return result

    def close(self) -> None:
        self.connection.close()
