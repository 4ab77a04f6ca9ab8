"""The mutable state of one mock, and the only code that changes it.

A `MockState` holds what a mock's requests change or what its operator sets at run time:
the store (records, ids, timestamp floor), the clock, rate-limit windows and limits, the
request journal, fault rules, the response cache, uploaded files, the loaded dataset and its
tokens, and the settings a reset returns to (seed, default rate limit, frozen clock).

The pipeline (app.py), the control API, the storage routes and the pytest plugin *read* the
parts (`state.store`, `state.clock`, `state.journal` ...), and change them only through the
methods below; nothing outside this module assigns a state's attributes (a test enforces it:
tests/engine/test_state_api.py). Handlers write records through the store's own API
(`insert`, `update`, `delete`), which the store serialises under its lock. So every mutation
of a mock funnels through this class and the store: a state is one of many (sessions), and
can be backed by shared storage, by replacing these methods and nothing else.

State and the pipeline
----------------------

`MockApp` (app.py) is the pipeline: the document, router, validators, handlers and self-check,
fixed while the server runs. Everything a request or an operator changes lives in a
`MockState` (`state.py`): the store, clock, rate-limit windows and limits, journal, fault
rules, response cache, uploaded files, the loaded dataset and its tokens, and the `Settings` a
reset returns to (seed, default rate limit, frozen clock, fixture plan limits). The pipeline
picks the state a request addresses (`MockApp.state_for(scope)`) and passes it down; the
control API, the storage service (`standalone/storage.py`) and the pytest plugin do the same. They read the state's parts and
change them only through its methods (`load_dataset`, `reset(seed=…, rate_limit=…,
frozen_clock=…)`, `set_rate_limits`, `count_request`, `set_clock`/`advance_clock`,
`add_fault`/`take_fault`/`clear_faults`, `record_request`/`clear_journal`,
`keep_response` (the core reads `cache` itself), `accept_upload`, `set_variations`, `reset_over`). Handlers write records through the
store's own API. So every mutation funnels through a handful of methods, which is what lets a
server hold many states (sessions) and a state be backed by shared storage.
`tests/engine/test_state_api.py` enforces the rule with `ast` over the package, bench/ and
examples/ (no assignment to a state's attributes, no direct call of a part's mutating method
outside `state.py` and `replication/`, its shared variant).

Each of those methods builds a *command* (`commands.py`: `Reset`, `LoadDataset`, `MoveClock`,
`AddFault`, `TakeFault`, `ClearFaults`, `Write`, `Checkpoint`) and submits it
(`MockState.submit`); `MockState.apply(command)` is the one place a command changes the
state's replicated parts (store, clock, faults, files, cache, settings, the dataset served).
In memory `submit` applies at once (and resets the windows, limits and journal a reset or load
resets: those are not replicated, Redis keeps them in place). A state shared through Redis
appends the command instead, and every worker, the sender too, applies it with the same
`apply` when it catches up (replication/). A request's writes are the store's own
transaction (`Store.begin`/`end`: the records written and how to undo them, the id counter
and timestamp floor, uploaded bytes attached with `Store.attach`), which replication appends
as one `Write`; the cache version moves with every write as before. The parts have
`export()`/`restore()` (store, clock, faults, files): `MockState.export()` is a `Checkpoint`.

The ports (ports.py)
--------------------

What differs between a state in this process and one shared through Redis is a port: the
journal (`JournalPort`) and the rate limiter (`LimiterPort`), passed in when the state is
built (`parts`: in memory `memory_parts`; a shared state builds Redis's with its log), and
the replication port (`Replication`), which `MockState` declares with its in-memory behaviour
(`off_loop` and `run` call at once, `transaction` holds the store's lock, `view` is None,
`confirm`, `sync`, `use_cursors` and `close` do nothing, `check_local` refuses nothing) and
replication's `SharedMockState` implements over Redis. mypy checks each implementation against
its port (the `type[...]` assignments at the end of this module and of replication/). So the
pipeline and the callers outside the engine hold a `MockState` and never ask which kind.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import time
from collections.abc import Callable, Hashable, Iterator, Mapping, MutableMapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

from ..data.fixtures import Dataset
from ..data.tables import TABLES
from .auth import TokenRegistry
from .cache import CachedResponse, ResponseCache
from .clock import Clock, check_clock, format_timestamp, parse_clock
from .commands import (
    AddFault,
    Checkpoint,
    ClearFaults,
    Command,
    LoadDataset,
    MoveClock,
    Reset,
    TakeFault,
    Write,
)
from .errors import Conflict, Forbidden, NotFound, TooManyRequests
from .faults import FaultRule, Faults
from .journal import MAX_JOURNAL_BYTES, Journal, Observed
from .ports import JournalPort, LimiterPort, Replication
from .progression import MOCK_TABLE, fire_crons
from .ratelimit import RateLimiter
from .replies import deliver_due
from .storage import FileStore, StorageKeys
from .store import Base, Record, Seed, Snapshot, Store

if TYPE_CHECKING:
    from .pagination import CursorCodec

__all__ = ["KEEP", "KEY_FIELDS", "MockState", "Parts", "Settings", "Shared", "StateSnapshot"]

# The internal `_mock` table holds a session's progression modes and scripts (progression.py).
KEY_FIELDS = {**{name: t.key for name, t in TABLES.items()}, MOCK_TABLE: "id"}
_LOADS = itertools.count(1)  # keys of datasets loaded in memory


class _Keep:
    def __repr__(self) -> str:
        return "KEEP"


KEEP: Any = _Keep()  # a reset option left as it is (None is a value: "real clock")


@dataclass(frozen=True)
class Settings:
    """What a reset returns to, changed only by `MockState.reset(...)` options."""

    seed: int = 0  # deterministic ids (and the faults' random draws)
    rate_limit: int = 120  # requests per minute per workspace; 0 turns limits off
    frozen_clock: str | None = None  # an ISO instant the clock starts frozen at; None: wall
    # A running clock's start, ms ahead of wall time: a fork of a snapshot taken of a session
    # whose running clock was moved keeps the offset (decision U13).
    clock_offset_ms: int = 0
    workspace_limits: bool = True  # apply the fixtures' per-workspace plan limits



class Shared:
    """What every state over one dataset shares, read-only: the dataset, the store's `Seed`
    (its tables and lazily built indexes), the tokens and the fixtures' plan limits."""

    def __init__(self, dataset: Dataset) -> None:
        self.dataset = dataset
        self.seed = Seed(dataset.tables, KEY_FIELDS)
        self.tokens = TokenRegistry(dataset.tokens)
        self.plan_limits: dict[str, int] = {
            ws["id"]: ws["_rate_limit_per_minute"]
            for ws in dataset.tables.get("workspaces", {}).values()
            if "_rate_limit_per_minute" in ws
        }


@dataclass(frozen=True)
class StateSnapshot:
    """A state saved to fork others from: its records and id sequence (an immutable store
    `Snapshot`), and the settings a fork starts with (the clock where it stood)."""

    name: str
    shared: Shared
    base: Snapshot
    settings: Settings
    source: str  # the state it was taken of

    @property
    def changes(self) -> int:
        """Records the snapshot holds beyond the seed (upserted or deleted)."""
        delta = self.base.delta
        return sum(len(rows) for rows in delta.records.values()) if delta else 0

    @property
    def held(self) -> int:
        """The bytes its records beyond the seed count toward the sessions' memory cap
        (store.entry_bytes, DECISIONS H37)."""
        delta = self.base.delta
        return delta.held if delta else 0


T = TypeVar("T")


class Parts(NamedTuple):
    """The parts a state holds that are not replicated by commands: in memory, in this
    process (`memory_parts`); on a shared state, Redis structures used in place
    (replication/parts.py), built by the shared state's `parts` function."""

    journal: JournalPort
    limiter: LimiterPort


def memory_parts(state: MockState, journal_size: int, journal_bytes: int) -> Parts:
    """A state's journal and rate limiter in this process."""
    return Parts(Journal(journal_size, journal_bytes),
                 RateLimiter(state.clock, state.settings.rate_limit))


class MockState:
    """One mock's state: see the module docstring. Read the parts; change them by methods.

    `shared` is the dataset it serves (shared with every other state over it); `base` the
    store base it starts from and resets to (the shared seed, or a `StateSnapshot`'s).
    """

    # A worker's copy of a state shared through Redis (replication's SharedMockState): told
    # to tests and diagnostics; no caller branches on it (the replication port below answers
    # every difference, and the mock's runner is chosen when it is built).
    replicated = False
    # A variation plan at work (mockserver/robust/runtime.py's Variations), None: faithful
    # answers. Set and cleared by the methods below; a reset clears it.
    variations: Any = None
    # Whether custom tools' code runs for requests on this state (toolexec.py); None: the
    # server's default (`Config.run_tool_code`). The pytest plugin sets it per test.
    run_tool_code: bool | None = None

    # -- the replication port (ports.Replication): how the state's operations reach the ----
    # other workers. In memory there are none: each is immediate or does nothing; a shared
    # state (replication's SharedMockState) catches up with the other workers and calls
    # Redis off the event loop. Callers never choose.

    def sync(self) -> None:
        """Apply what other workers changed (a shared state's; nothing to do in memory)."""

    async def off_loop(self, fn: Callable[..., T], *args: Any,
                       scope: MutableMapping[str, Any] | None = None) -> T:
        """`fn(*args)`, which may change or read the state: here, at once (a shared state
        runs it in one of the worker's threads, so the event loop never waits for Redis).
        `scope`: the request's, for a shared state's ticket."""
        return fn(*args)

    async def run(self, fn: Callable[..., T], *args: Any, scope: MutableMapping[str, Any],
                  inline: bool) -> T:
        """`fn(*args)` for a request (a shared state's pipeline: on the loop for a read when
        it can, else off it): here, at once."""
        return fn(*args)

    def view(self) -> Any:
        """What a request starting now reads of a shared log (None: no log here)."""
        return None

    def confirm(self, view: Any) -> None:
        """Confirm a request read the present (a shared state's round trip; nothing here)."""

    async def settle(self, view: Any, entry: Observed | None) -> TooManyRequests | None:
        """A shared read's deferred round trip (nothing here: never called in memory)."""
        return None

    def transaction(self, fn: Callable[[], T], *, fresh: bool = True, view: Any = None) -> T:
        """`fn()` as one write of the state: under the store's lock (a shared state appends
        its writes to the log as one entry, and may run it again)."""
        with self.store.lock:
            return fn()

    def all_or_nothing(self, run: Callable[[], T],
                       check: Callable[[], object] | None = None) -> T:
        """`run()`, then `check()`, as one transaction of the store (its lock held): an
        exception from either takes back everything `run` changed, records and uploaded files
        (Core.checked_write: the self-check, H27; Sessions.admit: the memory cap, H37). Inside
        an outer transaction both run as they are: the outer one takes back."""
        store = self.store
        with store.lock:
            if store.in_transaction:
                result = run()
                if check is not None:
                    check()
                return result
            store.begin()
            try:
                result = run()
                if check is not None:
                    check()
            except BaseException:
                changes = store.end()
                if changes is not None:
                    store.undo(changes)
                    for storage_id in changes.files:
                        self.files.discard(storage_id)
                raise
            store.end()
            return result

    def use_cursors(self, codec: CursorCodec) -> None:
        """Sign cursors with a key every worker shares (a shared state's; nothing here)."""

    def use_storage_keys(self, keys: StorageKeys) -> None:
        """Seal the default state's ids and file URLs with `keys` (a shared state first
        derives them from the namespace's secret, so every worker's URLs verify on all)."""
        self.seal(keys, keys.scope(""))

    def check_local(self, what: str) -> None:
        """Refuse (409 naming why) what needs a state held in this process only; nothing to
        refuse here."""

    @property
    def namespace(self) -> str | None:
        """The Redis namespace a shared state is one worker's copy of (None in memory)."""
        return None

    def close(self, *, drop: bool = False) -> None:
        """Release what the state holds outside this process (nothing in memory)."""

    def __init__(
        self,
        shared: Shared | Dataset,
        settings: Settings | None = None,
        *,
        name: str = "default",
        base: Base | None = None,
        journal_size: int = 1000,
        journal_bytes: int = MAX_JOURNAL_BYTES,
        response_cache: int = 256,
        parts: Callable[[MockState], Parts] | None = None,
    ) -> None:
        """`parts`: builds the journal and rate limiter the state holds (after its clock and
        store); None: in this process (`memory_parts`)."""
        if isinstance(shared, Dataset):
            shared = Shared(shared)
        self.name = name
        self.settings = settings = settings or Settings()
        self.shared = shared
        self.clock = Clock(frozen_at=settings.frozen_clock, offset_ms=settings.clock_offset_ms)
        self.store = Store(base or shared.seed, clock=self.clock, seed=settings.seed)
        made = (memory_parts(self, journal_size, journal_bytes) if parts is None
                else parts(self))
        self.journal: JournalPort = made.journal
        self.limiter: LimiterPort = made.limiter
        self.faults = Faults(settings.seed)
        self.cache = ResponseCache(response_cache)
        self.files = FileStore()  # bytes of uploaded files (storage.py)
        # What it started from (a key of the dataset, as commands name it; the dataset; the
        # store's base), and the key of the dataset it serves now.
        self.initial: tuple[str | None, Shared, Base] = (None, shared, base or shared.seed)
        self.dataset_key: str | None = None
        self._restore_rate_limits()

    def seal(self, keys: StorageKeys, scope: str) -> None:
        """Bind the state's ids and file URLs to `scope` (`StorageKeys.scope`: its session
        and incarnation): ids salted by the server's key, signatures over the scope."""
        self.store.scope = scope
        self.store.salt = keys.salt(scope)

    @property
    def dataset(self) -> Dataset:
        return self.shared.dataset

    @property
    def tokens(self) -> TokenRegistry:
        return self.shared.tokens

    # -- commands: every change of the state (commands.py) -------------------------------

    @contextmanager
    def current(self) -> Iterator[None]:
        """Hold the state as it stands, to build a command from it (a replicated state first
        applies what other workers appended)."""
        with self.store.lock:
            yield

    def submit(self, command: Command) -> Any:
        """Apply `command` (a replicated state appends it and applies it on catch-up, as
        every worker does); what applying it returned. Rate-limit windows and limits and the
        journal are not replicated parts (Redis keeps them in place), so what a reset or a
        load does to them is done here, beside `apply`."""
        with self.store.lock:
            result = self.apply(command)
            if isinstance(command, Reset | LoadDataset):
                self.limiter.reset()
                if isinstance(command, Reset):
                    self.journal.clear()
                    self.variations = None  # robustness mode's plan (this worker's only)
                self._restore_rate_limits()
            return result

    def apply(self, command: Command) -> Any:
        """The one place a command changes the state (see commands.py)."""
        with self.store.lock:
            if isinstance(command, Write):
                self.store.apply(command.records, command.counter, command.last_ms)
                for storage_id, content in command.files.items():
                    self.files.put(storage_id, content)
                return None
            if isinstance(command, TakeFault):
                return self.faults.take(command.method, command.path)
            if isinstance(command, MoveClock):
                self.clock.move(advance_ms=command.advance_ms, target_ms=command.target_ms,
                                wall_ms=command.wall_ms, frozen=command.frozen)
                return None
            if isinstance(command, AddFault):
                return self.faults.add(**command.spec)
            if isinstance(command, ClearFaults):
                return self.faults.clear()
            return self._rebuild(command)

    def _rebuild(self, command: Command) -> None:
        """The commands that rebuild the state: a reset, a load, a checkpoint."""
        store = self.store
        if isinstance(command, LoadDataset):
            self._serve(command.dataset, command.shared, force=True)
            self.cache.clear()
            self.files.clear()
            return
        if not isinstance(command, Reset | Checkpoint):
            raise TypeError(f"not a command: {command!r}")
        self._serve(command.dataset)
        self.settings = settings = Settings(**command.settings)
        store.seed = settings.seed
        self.cache.clear()
        if isinstance(command, Reset):
            store.reset()
            self.clock.restart(settings.frozen_clock, settings.clock_offset_ms)
            self.faults.start_over(settings.seed, command.fault_next)
            self.files.clear()
            return
        store.restore(*command.store)
        self.clock.restore(*command.clock)
        self.faults.restore(command.faults)
        self.files.restore(list(command.files))

    def _serve(self, key: str | None, shared: Shared | None = None, *,
               force: bool = False) -> None:
        """Serve the dataset `key` (its `Shared` when given; the initial one's base when it
        is the initial key); nothing to do when it is served already (unless `force`)."""
        if key == self.dataset_key and not force:
            return
        initial_key, initial_shared, initial_base = self.initial
        if shared is None and key == initial_key:
            shared, base = initial_shared, initial_base
        else:
            shared = shared or self.shared_for(key)
            base = shared.seed
        self.shared = shared
        self.store.load(base)
        self.dataset_key = key

    def shared_for(self, key: str | None) -> Shared:
        """The dataset named `key` (a replicated state reads it from Redis)."""
        raise KeyError(key)  # in memory a load carries its dataset

    def export(self, after: str = "") -> Checkpoint:
        """The state as one base command: applied to any state over the same datasets, it
        makes that state this one (replication's checkpoints)."""
        with self.store.lock:
            return Checkpoint(after=after, dataset=self.dataset_key,
                              settings=dataclasses.asdict(self.settings),
                              store=self.store.export(), clock=self.clock.export(),
                              faults=self.faults.export(), files=tuple(self.files.export()))

    # -- lifecycle --------------------------------------------------------------------------

    def load_dataset(self, dataset: Dataset | Shared) -> None:
        """Serve another (validated) dataset: its records, tokens and plan limits; windows,
        cache and files start empty. Journal, faults and the clock are kept."""
        shared = dataset if isinstance(dataset, Shared) else Shared(dataset)
        self.submit(LoadDataset(self.name_dataset(shared), shared))

    def name_dataset(self, shared: Shared) -> str:
        """A key for a loaded dataset (a replicated state stores it in Redis under it)."""
        return f"memory:{next(_LOADS)}"

    def reset(
        self,
        *,
        seed: int = KEEP,
        rate_limit: int = KEEP,
        frozen_clock: str | None = KEEP,
        workspace_limits: bool = KEEP,
    ) -> None:
        """Back to the dataset: records, ids, rate-limit windows and limits, the clock's start,
        no journal entries, faults, cached answers or files. Options change the settings the
        reset returns to (and later resets keep them)."""
        changes: dict[str, Any] = {name: value for name, value in (
            ("seed", seed), ("rate_limit", rate_limit), ("frozen_clock", frozen_clock),
            ("workspace_limits", workspace_limits)) if value is not KEEP}
        if "frozen_clock" in changes:  # a clock chosen anew: no offset kept from a snapshot
            changes["clock_offset_ms"] = 0
        with self.current():
            settings = dataclasses.replace(self.settings, **changes)
            self.submit(Reset(dataclasses.asdict(settings), self.dataset_key,
                              self.faults.next_id))

    def rate_limits_for(self, shared: Shared, settings: Settings) -> dict[str, Any]:
        """The rate limits a reset or a load sets (as Redis's limits hash holds them)."""
        limits: dict[str, Any] = {"default": settings.rate_limit,
                                  "enabled": int(settings.rate_limit > 0)}
        if settings.workspace_limits:
            for workspace_id, limit in shared.plan_limits.items():
                limits[f"ws:{workspace_id}"] = limit
        return limits

    def reset_over(self, base: Base) -> None:
        """Reset, and from now on reset, to another store base (a `StateSnapshot`'s `base`):
        robustness mode's fresh copy of a test's session for each example."""
        with self.store.lock:
            self.store.load(base)
            self.reset()

    def _restore_rate_limits(self) -> None:
        """The default limit and (unless turned off) each workspace's fixture limit."""
        self.limiter.configure(per_minute=self.settings.rate_limit)
        self.limiter.per_workspace.clear()
        if not self.settings.workspace_limits:
            return
        for workspace_id, limit in self.shared.plan_limits.items():
            self.limiter.set_workspace_limit(workspace_id, limit)

    def snapshot(self, name: str) -> StateSnapshot:
        """The state's records, ids and settings now, to fork states from (O(changes)). A
        frozen clock is kept where it stands, so forks start at that instant; a running one
        keeps its offset from wall time, so forks run on as far ahead (or behind) of it."""
        with self.store.lock:
            base = self.store.snapshot()
            frozen_ms, offset_ms = self.clock.export()
        frozen = format_timestamp(frozen_ms) if frozen_ms is not None else None
        return StateSnapshot(name, self.shared, base, dataclasses.replace(
            self.settings, frozen_clock=frozen, clock_offset_ms=0 if frozen else offset_ms),
            self.name)

    @property
    def changes(self) -> int:
        """Records this state's store holds beyond its base (upserted or deleted)."""
        return self.store.changes

    # -- rate limits ------------------------------------------------------------------------

    def rate_limits(self) -> dict[str, Any]:
        limiter = self.limiter
        return {"per_minute": limiter.default, "enabled": limiter.enabled,
                "workspaces": dict(limiter.per_workspace)}

    def set_rate_limits(
        self,
        *,
        per_minute: int | None = None,
        enabled: bool | None = None,
        workspaces: Mapping[str, int | None] | None = None,
        reset_windows: bool = False,
    ) -> None:
        """Until the next reset: the default limit, on/off, workspaces' own limits (None
        returns one to the default), and optionally fresh windows."""
        self.limiter.configure(per_minute=per_minute, enabled=enabled)
        for workspace_id, limit in (workspaces or {}).items():
            self.limiter.set_workspace_limit(workspace_id, limit)
        if reset_windows:
            self.limiter.reset()

    def count_request(self, kind: str, ident: str, view: Any = None) -> None:
        """Charge one request to a rate-limit window (429 past the limit). `view` is what
        the request read of a shared state (replication/), confirmed in the same step; unused
        here."""
        self.limiter.hit(kind, ident)

    # -- clock ------------------------------------------------------------------------------

    def set_clock(self, instant: str, *, frozen: bool | None = None) -> None:
        """Move the clock to an ISO 8601 instant (ValueError when it is not one); `frozen`
        True/False freezes it there or lets it run on from there (None: as it was). The cron
        triggers it passes dispatch their runs (progression.fire_crons)."""
        target = parse_clock(instant)  # ValueError before anything is submitted
        before = self.clock.now_ms()
        self.submit(MoveClock(target_ms=target, wall_ms=int(time.time() * 1000), frozen=frozen))
        self._passed(before)

    def advance_clock(self, seconds: float, *, frozen: bool | None = None) -> None:
        if not math.isfinite(seconds):  # ValueError before anything is submitted
            raise ValueError("not a finite number of seconds")
        before = self.clock.now_ms()
        check_clock(before + int(seconds * 1000))
        self.submit(MoveClock(advance_ms=int(seconds * 1000), wall_ms=int(time.time() * 1000),
                              frozen=frozen))
        self._passed(before)

    def freeze_clock(self, frozen: bool) -> None:
        """Stop the clock where it stands (True), or let it run on from there (False)."""
        self.submit(MoveClock(wall_ms=int(time.time() * 1000), frozen=frozen))

    def _passed(self, before_ms: int) -> None:
        """What the clock triggers as it passes from `before_ms` to now: cron dispatches and
        autopilot replies that fall due (simulate.deliver_due), written as one write of their
        own (replicated as any)."""
        after_ms = self.clock.now_ms()
        if after_ms > before_ms:
            self.write(lambda store: (fire_crons(store, before_ms, after_ms),
                                      deliver_due(store, after_ms)))

    def write(self, fn: Callable[[Store], Any]) -> Any:
        """Run `fn` on the store as one write (a helper's: the control API's transitions,
        progression modes and scripts; a shared state makes it one transaction)."""
        store = self.store
        with store.lock:
            return fn(store)

    # -- faults -----------------------------------------------------------------------------

    def add_fault(self, **spec: Any) -> FaultRule:
        """A fault rule (see faults.py); ValueError names what is wrong with `spec`."""
        FaultRule(id=0, **spec)  # refused (ValueError, TypeError) before it is submitted
        rule: FaultRule = self.submit(AddFault(spec))
        return rule

    def clear_faults(self) -> int:
        return int(self.submit(ClearFaults()))

    def take_fault(self, method: str, path: str) -> FaultRule | None:
        if not any(rule.matches(method, path) for rule in self.faults.rules):
            return None  # nothing would change: no command
        found: FaultRule | None = self.submit(TakeFault(method, path))
        return found

    # -- variations (robustness mode) ----------------------------------------------------------

    def set_variations(self, variations: Any) -> None:
        """Vary this state's answers by a plan (None: faithful again). The caller applies and
        restores the plan's content (`Variations.apply`, `restore`)."""
        self.variations = variations

    # -- journal ----------------------------------------------------------------------------

    def record_request(self, entry: Observed, variations: tuple[int, ...] = ()) -> None:
        """Keep one request in the journal (`Journal.record`)."""
        self.journal.record(entry, variations)

    def clear_journal(self) -> int:
        return self.journal.clear()

    # -- response cache ---------------------------------------------------------------------

    def keep_response(self, key: Hashable, version: int, entry: CachedResponse) -> None:
        self.cache.put(key, version, entry)

    # -- uploads ----------------------------------------------------------------------------

    def add_record(self, table: str, build: Callable[[Store], Record]) -> Record:
        """Insert the record `build` makes on the store as it is (engine/records.py: its id
        and timestamps come from the store); an error `build` raises writes nothing."""
        store = self.store
        with store.lock:
            record = build(store)
            return store.insert(table, record)

    def accept_upload(self, token: str, content: bytes, content_type: str,
                      keys: StorageKeys | None = None) -> str:
        """Store the file of a pending upload URL; its new storageId (sealed by `keys`, the
        server's storage secret). Refused (404, 403 expired, 409 used) with nothing written."""
        store = self.store
        with store.lock:
            pending = store.get("uploads", token)
            if pending is None or pending.get("kind") != "upload_url":
                raise NotFound(f"upload URL {token!r} not found")
            now = store.now()
            if now >= pending["expires_at"]:
                # Inferred: an expired signed URL is refused with 403, as object stores do.
                raise Forbidden(f"upload URL {token!r} expired at {pending['expires_at']}")
            if pending.get("storage_id") is not None:
                # Inferred: an upload URL takes one file.
                raise Conflict(f"upload URL {token!r} was already used")
            plain = f"{store.scope}\x00{pending['workspace_id']}\x00{store.new_id('st')}"
            storage_id = (keys or StorageKeys()).sealed_id("st", plain)
            store.insert("uploads", {
                "id": storage_id,
                "kind": "file",
                "workspace_id": pending["workspace_id"],
                "size": len(content),
                "content_type": content_type,
                "created_at": now,
            })
            store.update("uploads", token, {"storage_id": storage_id})
            self.files.put(storage_id, content)
            store.attach(storage_id, content)  # with the write, when it is replicated
        return storage_id


if TYPE_CHECKING:  # the in-memory implementations of the ports (ports.py)
    _REPLICATION: type[Replication] = MockState
    _JOURNAL: type[JournalPort] = Journal
    _LIMITER: type[LimiterPort] = RateLimiter
