"""One worker's copy of a mock shared through Redis: a `MockState` whose commands go through
the namespace's log.

The state's methods are `MockState`'s: each builds a command (engine/commands.py) and submits
it. Here `submit` appends the command to the log (log.py) and the worker applies it when it
catches up to it, with `MockState.apply`, as every other worker does; a request's writes are
the store's own transaction (`Store.begin`/`end`), appended as one `Write` by
`SharedLog.transaction`. The journal and rate limits are Redis structures used in place
(parts.py).
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
from collections.abc import Callable, Iterator, MutableMapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import orjson

from ...data.fixtures import Dataset
from ..commands import Command, LoadDataset, Reset
from ..errors import Conflict, TooManyRequests
from ..faults import FaultRule
from ..journal import MAX_JOURNAL_BYTES
from ..state import MockState, Parts, Settings, Shared
from ..storage import StorageKeys
from ..store import Base, Record, Store
from .log import SharedLog, View
from .parts import RedisJournal, RedisRateLimiter
from .transport import _REQUEST, OffLoop, StateUnavailable, off_loop

if TYPE_CHECKING:
    from ..pagination import CursorCodec

__all__ = ["SharedMockState", "shared_state"]

T = TypeVar("T")


class SharedMockState(MockState):
    """A mock state that is one worker's copy of a shared mock (see the module docstring).

    Reads use the local parts as `MockState` does; every change is a command appended to the
    log and applied on catch-up (`submit`), writes of requests as transactions
    (`transaction`). The journal and rate limits are Redis structures (parts.py).
    """

    replicated = True
    log: SharedLog
    journal: RedisJournal  # the parts Redis keeps (built with the log, `parts`)

    def __init__(self, dataset: Dataset | Shared, settings: Settings | None = None, *,
                 url: str, namespace: str = "mock", fixtures: str = "", spec: Any = None,
                 name: str = "default", journal_size: int = 1000,
                 journal_bytes: int = MAX_JOURNAL_BYTES,
                 response_cache: int = 256, base: Base | None = None,
                 dataset_key: str | None = None,
                 log: Callable[[SharedMockState], SharedLog] | None = None) -> None:
        self.spec = spec
        # The log first (the parts and the store's writes go through it), then the state
        # over Redis's journal and rate limiter (passed in: `parts`).
        make_log = log or (lambda state: SharedLog(state, url, namespace))

        def parts(state: MockState) -> Parts:
            self.log = log_ = make_log(self)
            return Parts(RedisJournal(journal_size, journal_bytes, log_),
                         RedisRateLimiter(state.clock, log_))

        super().__init__(dataset, settings, name=name, base=base, journal_size=journal_size,
                         journal_bytes=journal_bytes, response_cache=response_cache,
                         parts=parts)
        log_ = self.log
        # What a session starts from (a snapshot's base, another dataset) and rebases to.
        self.initial = (dataset_key, self.shared, base or self.shared.seed)
        self.dataset_key = dataset_key
        self.initial_settings = self.settings
        # A write outside any transaction (a test's, a helper's) is one of its own: shared.
        self.store.outside = log_.transaction
        self._datasets: dict[str, Shared] = {}  # loaded through this worker, by key
        log_.start({"fixtures": fixtures, "seed": str(self.settings.seed)},
                   self.rate_limits_for(self.shared, self.settings))

    def _restore_rate_limits(self) -> None:
        """Nothing here: Redis's limits hash is set by the script that starts the namespace
        (`SharedLog.start`) and by the one appending a reset or a load (`submit`), not by a
        worker joining."""

    # -- the replication port (ports.Replication): what the pipeline calls around a request ----

    async def off_loop(self, fn: Callable[..., T], *args: Any,
                       scope: MutableMapping[str, Any] | None = None) -> T:
        """`fn(*args)`, which may call Redis, in one of the worker's threads (`off_loop`):
        the event loop never waits for Redis. `scope`: the request's (its ticket)."""
        return await off_loop(self.log.connection, fn, *args, scope=scope)

    async def run(self, fn: Callable[..., T], *args: Any, scope: MutableMapping[str, Any],
                  inline: bool) -> T:
        """`fn(*args)` for a request: with `inline` (a read, which calls Redis only in its
        round trip, `settle`), on the event loop when this state's lock is free, else, or
        when it calls Redis after all (OffLoop: undone, as a stale read is), in one of the
        worker's threads (`off_loop`). Reads stay on the loop and settle together (R18)."""
        if inline and "mock.off_loop" not in scope:
            lock = self.store.lock
            if lock.acquire(blocking=False):
                owner = self.log.connection
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
        return await off_loop(self.log.connection, fn, *args, scope=scope)

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

    # -- commands: appended, applied on catch-up -------------------------------------------------

    @contextlib.contextmanager
    def current(self) -> Iterator[None]:
        with self.log.lock:
            self.log.catch_up()
            yield

    def submit(self, command: Command) -> Any:
        """Append `command` and apply the log up to it: what applying it returned here. A
        reset's or a load's rate limits (and a reset's empty journal) are set in Redis by the
        same script that appends it."""
        limits = None
        if isinstance(command, Reset):
            limits = self.rate_limits_for(self.shared, Settings(**command.settings))
        elif isinstance(command, LoadDataset):
            limits = self.rate_limits_for(command.shared or self.shared_for(command.dataset),
                                          self.settings)
        return self.log.control(command, limits=limits)

    def name_dataset(self, shared: Shared) -> str:
        """The dataset stored in Redis (content-addressed: every worker can read it)."""
        dataset = shared.dataset
        blob = orjson.dumps({"tables": dataset.tables, "tokens": dataset.tokens})
        key = self.log.datasets_prefix + hashlib.blake2b(blob, digest_size=16).hexdigest()
        self.log.command("SET", key, blob)
        self._datasets[key] = shared
        return key

    def shared_for(self, key: str | None) -> Shared:
        """The dataset stored in Redis under `key` (loaded through the control API)."""
        if key is None:
            return self.initial[1]
        found = self._datasets.get(key)
        if found is not None:
            return found
        blob = self.log.command("GET", key)
        if blob is None:
            raise self.log.unavailable(f"dataset {key} is missing")
        data = orjson.loads(blob)
        return Shared(Dataset(tables=data["tables"], tokens=data["tokens"]))

    def take_fault(self, method: str, path: str) -> FaultRule | None:
        try:
            return super().take_fault(method, path)
        except StateUnavailable:
            return None  # the request itself then meets Redis's absence (503)

    def add_record(self, table: str, build: Callable[[Store], Record]) -> Record:
        return self.transaction(lambda: super(SharedMockState, self).add_record(table, build))

    def write(self, fn: Callable[[Store], Any]) -> Any:
        return self.transaction(lambda: super(SharedMockState, self).write(fn))

    def accept_upload(self, token: str, content: bytes, content_type: str,
                      keys: StorageKeys | None = None) -> str:
        return self.transaction(
            lambda: super(SharedMockState, self).accept_upload(token, content, content_type,
                                                               keys))

    def rebase(self) -> None:
        """Back to this worker's start-up state (the namespace's log was lost)."""
        self.start_over()

    def start_over(self) -> None:
        """Back to what it started from (`initial`, `initial_settings`), as a reset to them
        that every worker would apply alike."""
        with self.store.lock:
            self._serve(self.initial[0], force=True)
            self.apply(Reset(dataclasses.asdict(self.initial_settings), self.initial[0], 1))

    # -- the connection ----------------------------------------------------------------------------

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
        self._on_secret(codec.rekey)

    def use_storage_keys(self, keys: StorageKeys) -> None:
        """Sign file URLs with a key derived from the namespace's secret (unless pinned by
        `--storage-secret`): a URL one replica hands out verifies on every other (H12); the
        default state's ids and URLs sealed with one scope on every replica."""
        keys.rekey(self.log.cursor_secret)
        self._on_secret(keys.rekey)
        self.seal(keys, keys.scope("", ""))

    def check_local(self, what: str) -> None:
        """409 naming why: `what` needs a state held in one process, and this one is shared
        by every worker of the namespace through Redis."""
        raise Conflict(f"{what}: not supported on a mock whose state is shared through Redis "
                       f"(--state, namespace {self.log.namespace!r}); use an in-memory mock")

    @property
    def namespace(self) -> str | None:
        return self.log.namespace

    def _on_secret(self, listener: Callable[[bytes], None]) -> None:
        before = self.log.on_secret

        def told(secret: bytes) -> None:
            if before is not None:
                before(secret)
            listener(secret)
        self.log.on_secret = told


def shared_state(url: str, *, namespace: str, dataset: Dataset, settings: Settings,
                 fixtures: list[Path], spec: Any, journal_size: int, journal_bytes: int,
                 response_cache: int) -> SharedMockState:
    """The state of one worker of the shared mock `namespace` on the Redis at `url`."""
    return SharedMockState(
        dataset, settings, url=url, namespace=namespace, spec=spec,
        fixtures=orjson.dumps([str(Path(p).resolve()) for p in fixtures]).decode(),
        journal_size=journal_size, journal_bytes=journal_bytes,
        response_cache=response_cache)
