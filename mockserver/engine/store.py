"""In-memory state, seeded from fixtures. No HTTP in here.

Copy-on-write layers (see STORE_CONTRACT, and "Store layers" below):

- `Seed`: the loaded tables and their sorted indexes, built once (indexes lazily, on first use,
  thread-safely) and shared by every store over it. Never written.
- `Snapshot`: an immutable base = a seed plus a frozen delta (records upserted or deleted, the
  id counter and timestamp floor at snapshot time). Built in O(changes).
- `Store(base)`: a mutable layer over a base. Writes go to the layer; reads merge the layer over
  the base (records: the layer's upserts and tombstones over the base mapping; indexes: the
  base's sorted bucket merged with the layer's small sorted delta, skipping keys the layer
  replaced or deleted). `reset()` drops the layer: O(changes), and the first reads after it
  reuse the base's indexes, so a reset costs the same on 100 records and on 500,000.

Records are plain dicts treated as immutable: every write replaces a record with a new dict, so
a page already handed out can never change under a reader.

Lists are served from sorted indexes (one `SortedList` per partition, e.g. per workspace), so a
page costs in proportion to its size (plus what the layer changed), not to the dataset.

Store layers
------------

`store.py` keeps three levels. A `Seed` holds the loaded tables as given and their sorted
indexes, built lazily on first use under a lock (by one sort per partition) and then shared by
every store over that seed; nothing ever writes to it, so each partition is a `SeedBucket`:
flat lists aligned position by position in ascending order, the sort keys (bisected for a
cursor) and the records. A `Snapshot` is a seed plus a
frozen delta (key -> record or tombstone per table, size changes, the id counter and the
timestamp floor), made by `store.snapshot()` in O(changes); snapshots of stores over snapshots
are flattened, so there is never more than one delta over a seed. A `Store(base)` is a mutable
layer over a seed or a snapshot: writes go to the layer (upserts and tombstones, plus small
sorted indexes of the layer's own records, built from the layer when first asked for).

Reads merge: `get` looks in the layer, then the snapshot's delta, then the seed; `rows()` is a
live read-only `Mapping` view of that; `index(...)` returns a view whose `take()`/`keys()`
merge the seed's bucket with the delta's and the layer's (`heapq.merge`, both directions),
skipping seed keys the delta or layer replaced or deleted (the delta's and the layer's
indexes are `SortedList`s, which follow writes). A table nobody changed takes the fast path
(`Index.seed_bucket`): `pagination.walk` slices the bucket's records at a position (one
bisection with a cursor, none without), or tests them from there against a filter, with no
lookup by key; the page's JSON is a slice of a list aligned with the bucket per projection
(`SeedBucket.encoded`, filled as records are shown, bounded: `_ALIGNED_SLOTS` slots in all). `reset()` drops the layer and
returns to the base's id counter and timestamp floor: O(changes), the seed's indexes kept, so
a reset and the first reads after it cost the same on 100 records and on 500,000 (`bench/
bench_pytest_plugin.py`). `store.version` comes from one process-wide counter: a write, reset
or load of any store gets a value never used before, which is what the response cache keys on.
"""

from __future__ import annotations

import hashlib
import heapq
import itertools
import threading
from bisect import bisect_left, bisect_right
from collections.abc import (
    Callable,
    ItemsView,
    Iterable,
    Iterator,
    KeysView,
    Mapping,
    Sequence,
    ValuesView,
)
from typing import Any, cast

import orjson
from sortedcontainers import SortedList

from .clock import MAX_MS, MIN_MS, Clock, format_timestamp

__all__ = ["BIG_RECORD_BYTES", "Base", "Changes", "Index", "Record", "Seed", "SeedBucket",
           "Snapshot", "Store", "entry_bytes"]

Record = Mapping[str, Any]
IndexId = tuple[str, tuple[str, ...], tuple[str, ...]]

# Sort keys must be totally ordered even when a field is null: nulls sort after every value.
_NULL = (1, "")
_MISSING: Any = object()

# Every store state (any store, any base) gets a version no other state ever had: a write, a
# reset, a load or a new store draws the next one. A cached answer tagged with a version can
# therefore only ever be served for the very state it was computed against.
_VERSIONS = itertools.count(1)
_VERSIONS_LOCK = threading.Lock()


def entry_bytes(key: Any, record: Record | None) -> int:
    """What one changed record version a layer (or a snapshot's delta) holds counts toward
    the sessions' memory cap, exactly (DECISIONS H37): its key's UTF-8 bytes plus its compact
    JSON encoding (orjson, as an answer carries it; a deletion is `null`, 4 bytes; a value JSON
    has no form for counts as its `str`)."""
    return len(str(key).encode()) + len(orjson.dumps(record, default=str,
                                                     option=orjson.OPT_NON_STR_KEYS))


# A record version at least this large (`entry_bytes`) is noted in its store's `big` (by the
# record's identity): what tells a heavy page from a quiet one (context.py, DECISIONS H38).
BIG_RECORD_BYTES = 8 * 1024


def delta_bytes(records: Mapping[str, Mapping[str, Record | None]],
                big: dict[int, int] | None = None) -> int:
    """`entry_bytes` summed over a layer or delta (key -> record or None per table); the
    records of `BIG_RECORD_BYTES` or more noted in `big` (id -> bytes), when given."""
    total = 0
    for rows in records.values():
        for key, record in rows.items():
            size = entry_bytes(key, record)
            total += size
            if big is not None and size >= BIG_RECORD_BYTES:
                big[id(record)] = size
    return total


def _next_version() -> int:
    with _VERSIONS_LOCK:
        return next(_VERSIONS)


def _sort_value(value: Any) -> tuple[int, Any]:
    if value is None:
        return _NULL
    if isinstance(value, bool):
        return (0, int(value))
    return (0, value)


class _Shape:
    """What an index is over: a table's key field, its partition fields (a field whose value
    is a list puts the record in one partition per element: a user belongs to several
    workspaces) and its sort fields (then the key)."""

    __slots__ = ("key_field", "order_fields", "partition_fields")

    def __init__(self, key_field: str, partition: Sequence[str], order: Sequence[str]) -> None:
        self.key_field = key_field
        self.partition_fields = tuple(partition)
        self.order_fields = tuple(order)

    def sort_key(self, record: Record) -> tuple[Any, ...]:
        return (*(_sort_value(record.get(f)) for f in self.order_fields), record[self.key_field])

    def partitions(self, record: Record) -> list[tuple[Any, ...]]:
        parts: list[tuple[Any, ...]] = [()]
        for field in self.partition_fields:
            value = record.get(field)
            values = value if isinstance(value, list) else [value]
            parts = [(*p, v) for p in parts for v in values]
        return parts


class SortedIndex(_Shape):
    """Sort keys of some records of one table, partitioned and sorted (one `SortedList` per
    partition): the indexes of a frozen delta and of a store's layer, which follow writes."""

    __slots__ = ("parts",)

    def __init__(self, key_field: str, partition: Sequence[str], order: Sequence[str]) -> None:
        super().__init__(key_field, partition, order)
        self.parts: dict[tuple[Any, ...], SortedList] = {}

    def add(self, record: Record) -> None:
        key = self.sort_key(record)
        for part in self.partitions(record):
            bucket = self.parts.get(part)
            if bucket is None:
                bucket = self.parts[part] = SortedList()
            bucket.add(key)

    def discard(self, record: Record) -> None:
        key = self.sort_key(record)
        for part in self.partitions(record):
            bucket = self.parts.get(part)
            if bucket is not None:
                bucket.discard(key)

    @staticmethod
    def bucket_keys(bucket: SortedList, after: tuple[Any, ...] | None,
                    descending: bool) -> Iterator[tuple[Any, ...]]:
        if after is None:
            return iter(reversed(bucket)) if descending else iter(bucket)
        if descending:
            return bucket.irange(maximum=after, inclusive=(True, False), reverse=True)
        return bucket.irange(minimum=after, inclusive=(False, True))


class SeedBucket:
    """One partition of a seed index, never written: flat lists aligned position by position
    in ascending sort order, the sort keys (bisected for a cursor) and the records. A page of
    a table no layer changed is a bisection (none without a cursor) and slices of them.
    `encoded` is pagination's: per projection, the records' JSON aligned with them (filled
    lazily, dropped under its memory bound)."""

    __slots__ = ("__weakref__", "encoded", "records", "sort_keys")

    def __init__(self, sort_keys: list[tuple[Any, ...]], records: list[Record]) -> None:
        self.sort_keys = sort_keys
        self.records = records
        self.encoded: dict[int, tuple[Any, list[Any]]] = {}

    def __len__(self) -> int:
        return len(self.sort_keys)

    def position(self, after: tuple[Any, ...] | None, descending: bool) -> int:
        """Where a walk after `after` starts: ascending, the first position past it;
        descending, the position just past the first one to take (walking down from it)."""
        if after is None:
            return len(self.sort_keys) if descending else 0
        if descending:
            return bisect_left(self.sort_keys, after)
        return bisect_right(self.sort_keys, after)

    def take(self, after: tuple[Any, ...] | None, descending: bool,
             count: int) -> list[tuple[Any, ...]]:
        """Up to `count` sort keys strictly after `after`, in walking order."""
        at = self.position(after, descending)
        if descending:
            return self.sort_keys[max(0, at - count):at][::-1]
        return self.sort_keys[at:at + count]

    def keys(self, after: tuple[Any, ...] | None,
             descending: bool) -> Iterator[tuple[Any, ...]]:
        """The sort keys strictly after `after`, in walking order (lazily)."""
        at = self.position(after, descending)
        sort_keys = self.sort_keys
        if descending:
            return map(sort_keys.__getitem__, range(at - 1, -1, -1))
        if at == 0:
            return iter(sort_keys)
        return map(sort_keys.__getitem__, range(at, len(sort_keys)))


_EMPTY_BUCKET = SeedBucket([], [])


class SeedIndex(_Shape):
    """A seed's index: one `SeedBucket` per partition, built once by sorting (the seed never
    changes, so nothing is ever inserted into it)."""

    __slots__ = ("parts",)

    def __init__(self, key_field: str, partition: Sequence[str], order: Sequence[str],
                 records: Iterable[Record]) -> None:
        super().__init__(key_field, partition, order)
        keys: dict[tuple[Any, ...], list[tuple[Any, ...]]] = {}
        rows: dict[tuple[Any, ...], list[Record]] = {}
        sort_key = self.sort_key
        single = len(self.partition_fields) == 1 and self.partition_fields[0]
        for record in records:
            key = sort_key(record)
            if single:
                value = record.get(single)
                parts = [(v,) for v in value] if isinstance(value, list) else [(value,)]
            else:
                parts = self.partitions(record)
            for part in parts:
                found = keys.get(part)
                if found is None:
                    keys[part] = [key]
                    rows[part] = [record]
                else:
                    found.append(key)
                    rows[part].append(record)
        self.parts: dict[tuple[Any, ...], SeedBucket] = {}
        for part, unsorted in keys.items():
            records_of = rows.pop(part)
            order_of = sorted(range(len(unsorted)), key=unsorted.__getitem__)
            self.parts[part] = SeedBucket([unsorted[i] for i in order_of],
                                          [records_of[i] for i in order_of])
            keys[part] = []  # let the unsorted list go as we go


def _build_index(ident: IndexId, key_field: str,
                 records: Iterable[Record | None]) -> SortedIndex:
    _table, partition, order = ident
    index = SortedIndex(key_field, partition, order)
    for record in records:
        if record is not None:
            index.add(record)
    return index


class Seed:
    """Tables loaded once, never written, and their indexes (built lazily, once, shared)."""

    delta: _Frozen | None = None
    counter = 0
    # The timestamp floor: below the earliest instant a clock may stand at (year 0001), so a
    # clock set before 1970 stamps its own time, not 1970's (DECISIONS H8).
    last_ms = MIN_MS - 1

    def __init__(self, tables: Mapping[str, Mapping[str, Record]],
                 key_fields: Mapping[str, str]) -> None:
        self.key_fields = dict(key_fields)
        # Kept as given (a large dataset is not held twice); never written.
        self.tables: dict[str, Mapping[str, Record]] = dict(tables)
        for name in self.key_fields:
            self.tables.setdefault(name, {})
        self._indexes: dict[IndexId, SeedIndex] = {}
        self._lock = threading.Lock()

    @property
    def seed(self) -> Seed:
        return self

    def index(self, ident: IndexId) -> SeedIndex:
        index = self._indexes.get(ident)
        if index is None:
            with self._lock:
                index = self._indexes.get(ident)
                if index is None:
                    table, partition, order = ident
                    index = SeedIndex(self.key_fields[table], partition, order,
                                      self.tables[table].values())
                    self._indexes[ident] = index
        return index


class _Frozen:
    """A frozen delta over a seed: per table, key -> record (None: deleted), the change in
    each table's size, and the delta's own indexes (built lazily from its records)."""

    def __init__(self, records: dict[str, dict[str, Record | None]],
                 sizes: dict[str, int], key_fields: Mapping[str, str]) -> None:
        self.records = records
        self.sizes = sizes
        self._key_fields = key_fields
        self._indexes: dict[IndexId, SortedIndex] = {}
        self._lock = threading.Lock()
        self._held: int | None = None
        self._big: dict[int, int] = {}

    @property
    def held(self) -> int:
        """The bytes its records count (`entry_bytes`), computed once when first asked."""
        held = self._held
        if held is None:
            held = self._held = delta_bytes(self.records, self._big)
        return held

    @property
    def big(self) -> dict[int, int]:
        """Its records of `BIG_RECORD_BYTES` or more: id -> bytes (computed with `held`)."""
        if self._held is None:
            self.held  # noqa: B018
        return self._big

    def index(self, ident: IndexId) -> SortedIndex | None:
        table = ident[0]
        if table not in self.records:
            return None
        index = self._indexes.get(ident)
        if index is None:
            with self._lock:
                index = self._indexes.get(ident)
                if index is None:
                    index = _build_index(ident, self._key_fields[table],
                                         self.records[table].values())
                    self._indexes[ident] = index
        return index


class Snapshot:
    """An immutable base: a seed plus a frozen delta, the id counter and the timestamp floor.
    Snapshots of stores over snapshots are flattened (always one delta over the seed)."""

    def __init__(self, seed: Seed, delta: _Frozen, counter: int, last_ms: int) -> None:
        self.seed = seed
        self.delta: _Frozen | None = delta
        self.counter = counter
        self.last_ms = last_ms

    @property
    def key_fields(self) -> dict[str, str]:
        return self.seed.key_fields

    @classmethod
    def of(cls, seed: Seed, records: dict[str, dict[str, Record | None]],
           sizes: dict[str, int], counter: int, last_ms: int) -> Snapshot:
        """A snapshot from a delta as `Store.snapshot()` holds it (key -> record or None per
        table, size changes): a snapshot rebuilt from its serialized form."""
        return cls(seed, _Frozen(records, sizes, seed.key_fields), counter, last_ms)


Base = Seed | Snapshot


class Index:
    """The live, merged index of one store: the seed's buckets, the base delta's and the
    layer's, each sorted; keys replaced or deleted higher up are skipped. Looked up afresh on
    every call, so a view kept across writes or resets stays current."""

    __slots__ = ("_ident", "_seed_index", "_store", "_table", "key_field", "order_fields",
                 "partition_fields")

    def __init__(self, store: Store, ident: IndexId) -> None:
        self._store = store
        self._ident = ident
        self._table = ident[0]
        self._seed_index: tuple[Seed, SeedIndex] | None = None  # the seed's, once asked for
        self.key_field = store.key_fields[ident[0]]
        self.partition_fields = ident[1]
        self.order_fields = ident[2]

    def sort_key(self, record: Record) -> tuple[Any, ...]:
        return (*(_sort_value(record.get(f)) for f in self.order_fields), record[self.key_field])

    def seed_bucket(self, partition: tuple[Any, ...]) -> SeedBucket | None:
        """The seed's bucket of a partition when no layer above the seed changed the table
        (its records are then the partition's, in order, and never change while the seed
        lives; an empty bucket if the seed has none), else None."""
        store = self._store
        table = self._table
        frozen = store._frozen
        if table in store._layer or (frozen is not None and table in frozen.records):
            return None
        seed = store._seed
        found = self._seed_index
        if found is None or found[0] is not seed:  # first use, or a seed since loaded
            found = self._seed_index = (seed, seed.index(self._ident))
        return found[1].parts.get(partition, _EMPTY_BUCKET)

    def take(
        self, partition: tuple[Any, ...], *, after: tuple[Any, ...] | None, descending: bool,
        count: int,
    ) -> list[tuple[Any, ...]]:
        """Up to `count` sort keys of a partition strictly after `after`, in walking order.
        With no change to the table above the seed: one bisection and one positional slice,
        whatever the partition's size; otherwise a merge that also skips what was changed."""
        bucket = self.seed_bucket(partition)
        if bucket is not None:
            return bucket.take(after, descending, count)
        return list(itertools.islice(
            self.keys(partition, after=after, descending=descending), count))

    def keys(
        self, partition: tuple[Any, ...], *, after: tuple[Any, ...] | None, descending: bool
    ) -> Iterator[tuple[Any, ...]]:
        """Sort keys of a partition in order, strictly after `after` (in walking order)."""
        store = self._store
        ident = self._ident
        table = ident[0]
        seed_bucket = store.base.seed.index(ident).parts.get(partition)
        frozen = store._frozen
        frozen_rows = frozen.records.get(table) if frozen is not None else None
        layer_rows = store._layer.get(table)
        sources: list[Iterator[tuple[Any, ...]]] = []
        if seed_bucket:
            it = seed_bucket.keys(after, descending)
            shadows = [s for s in (frozen_rows, layer_rows) if s]
            if shadows:
                it = _unshadowed(it, shadows)
            sources.append(it)
        if frozen_rows and frozen is not None:
            frozen_index = frozen.index(ident)
            bucket = frozen_index.parts.get(partition) if frozen_index else None
            if bucket:
                it = SortedIndex.bucket_keys(bucket, after, descending)
                if layer_rows:
                    it = _unshadowed(it, [layer_rows])
                sources.append(it)
        if layer_rows:
            bucket = store._layer_index(ident).parts.get(partition)
            if bucket:
                sources.append(SortedIndex.bucket_keys(bucket, after, descending))
        if not sources:
            return iter(())
        if len(sources) == 1:
            return sources[0]
        return heapq.merge(*sources, reverse=descending)


def _unshadowed(keys: Iterator[tuple[Any, ...]],
                shadows: list[dict[str, Record | None]]) -> Iterator[tuple[Any, ...]]:
    if len(shadows) == 1:
        shadow = shadows[0]
        return (k for k in keys if k[-1] not in shadow)
    a, b = shadows
    return (k for k in keys if k[-1] not in a and k[-1] not in b)


class _Rows(Mapping[str, Record]):
    """A read-only, live, merged key -> record view of one table of a store."""

    __slots__ = ("_store", "_table")

    def __init__(self, store: Store, table: str) -> None:
        if table not in store.key_fields:
            raise KeyError(table)
        self._store = store
        self._table = table

    def __getitem__(self, key: str) -> Record:
        record = self._store.get(self._table, key)
        if record is None:
            raise KeyError(key)
        return record

    def get(self, key: str, default: Any = None) -> Any:
        record = self._store.get(self._table, key)
        return default if record is None else record

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self._store.get(self._table, key) is not None

    def __len__(self) -> int:
        return self._store.count(self._table)

    def __iter__(self) -> Iterator[str]:
        return (key for key, _ in self._store._items(self._table))

    def keys(self) -> KeysView[str]:
        return KeysView(self)

    def values(self) -> ValuesView[Record]:
        return _Values(self)

    def items(self) -> ItemsView[str, Record]:
        return _Items(self)

    def __repr__(self) -> str:
        return f"<rows of {self._table!r}: {len(self)} records>"


class _Values(ValuesView[Record]):
    def __init__(self, rows: _Rows) -> None:
        super().__init__(rows)
        self._rows = rows

    def __iter__(self) -> Iterator[Record]:
        return (record for _, record in self._rows._store._items(self._rows._table))


class _Items(ItemsView[str, Record]):
    def __init__(self, rows: _Rows) -> None:
        super().__init__(rows)
        self._rows = rows

    def __iter__(self) -> Iterator[tuple[str, Record]]:
        return self._rows._store._items(self._rows._table)


class Changes:
    """What one transaction of a store changed (`Store.begin` ... `Store.end`): the final
    record of each (table, key) written (None: deleted), how to undo it, uploaded bytes
    attached to it, and the id counter and timestamp floor it started from. A replicated
    state appends it as a write; a lost append undoes it (`Store.undo`)."""

    __slots__ = ("counter", "files", "last_ms", "records", "undo", "until")

    def __init__(self, counter: int, last_ms: int) -> None:
        self.counter = counter
        self.last_ms = last_ms
        self.until = (counter, last_ms)  # the id counter and timestamp floor it ended at
        self.records: dict[tuple[str, str], Record | None] = {}
        # (table, key, old, the layer's entry before: `_MISSING` when it had none) in order
        self.undo: list[tuple[str, str, Record | None, Any]] = []
        self.files: dict[str, bytes] = {}


class Store:
    """A mutable layer of records over a base (a `Seed` or a `Snapshot`), with merged sorted
    indexes and a reset back to the base.

    `Store(base, *, clock, seed)` builds a store over a base; `Store(tables, key_fields, *,
    clock, seed)` first builds a `Seed` of these tables.
    """

    def __init__(
        self,
        base: Base | Mapping[str, Mapping[str, Record]],
        key_fields: Mapping[str, str] | None = None,
        *,
        clock: Clock,
        seed: int = 0,
    ) -> None:
        if not isinstance(base, (Seed, Snapshot)):
            if key_fields is None:
                raise TypeError("Store(tables, key_fields, ...): key_fields are required")
            base = Seed(base, key_fields)
        self.clock = clock
        self.seed = seed  # of the id sequence
        # What the state's ids are salted with (DECISIONS H21: a stranger cannot predict another
        # session's next id) and what its file URLs are signed for (H2, H3); set by
        # `MockState.seal`, empty for a bare store (ids from the seed alone).
        self.salt = ""
        self.scope = ""
        self.lock = threading.RLock()
        self.base: Base = base
        self._frozen: _Frozen | None = None
        # The layer: per table, key -> record (None: deleted), and each table's size change.
        self._layer: dict[str, dict[str, Record | None]] = {}
        self._sizes: dict[str, int] = {}
        # The bytes the layer's entries count (`entry_bytes`), kept exact by every write;
        # the records of `BIG_RECORD_BYTES` or more it shows (the layer's and its base's
        # delta's), by identity: id -> bytes. Empty for almost every store: one test per page.
        self.held = 0
        self.big: dict[int, int] = {}
        self._layer_indexes: dict[IndexId, SortedIndex] = {}
        self._by_table: dict[str, list[SortedIndex]] = {}
        self._views: dict[IndexId, Index] = {}
        self._counter = 0
        self._last_ms = MIN_MS - 1  # as Seed.last_ms
        # Moves on every write, reset and load: what a cached answer was computed against.
        self.version = 0
        # The open transaction (`begin`), recording every write; and what runs a write made
        # outside one (a replicated state opens one around it: its writes are shared too).
        self._tx: Changes | None = None
        self.outside: Callable[[Callable[[], Any]], Any] | None = None
        self.reset()

    @property
    def key_fields(self) -> dict[str, str]:
        return self.base.seed.key_fields

    # -- lifecycle ----------------------------------------------------------------------

    def reset(self) -> None:
        """Back to the base: drops the layer (O(changes)); the base's indexes are kept."""
        with self.lock:
            self._frozen = self.base.delta
            self._seed = self.base.seed
            self._seed_tables = self._seed.tables
            self._layer = {}
            self._sizes = {}
            self.held = 0
            self.big = dict(self._frozen.big) if self._frozen is not None else {}
            self._layer_indexes = {}
            self._by_table = {}
            self._counter = self.base.counter
            self._last_ms = self.base.last_ms
            self.version = _next_version()

    def load(self, tables: Base | Mapping[str, Mapping[str, Record]]) -> None:
        """Replace the base (and the current state) with a new seed of these tables (or with
        this base: a seed shared with other stores)."""
        with self.lock:
            self.base = tables if isinstance(tables, (Seed, Snapshot)) else Seed(
                tables, self.key_fields)
            self._views = {}
            self.reset()

    @property
    def changes(self) -> int:
        """Records the layer holds (upserted or deleted): what this store costs beyond its
        base."""
        return sum(len(rows) for rows in self._layer.values())

    def snapshot(self) -> Snapshot:
        """The store's current state as an immutable base, in O(changes)."""
        with self.lock:
            frozen = self._frozen
            records: dict[str, dict[str, Record | None]] = (
                {t: dict(rows) for t, rows in frozen.records.items()} if frozen else {})
            sizes = dict(frozen.sizes) if frozen else {}
            for table, rows in self._layer.items():
                records.setdefault(table, {}).update(rows)
                sizes[table] = sizes.get(table, 0) + self._sizes.get(table, 0)
            return Snapshot(self.base.seed, _Frozen(records, sizes, self.key_fields),
                            self._counter, self._last_ms)

    def layer(self) -> tuple[dict[str, dict[str, Record | None]], dict[str, int]]:
        """A copy of the layer over the base (key -> record or None per table) and its size
        changes: with the id counter and timestamp floor, what `restore` needs (O(changes))."""
        with self.lock:
            return {t: dict(rows) for t, rows in self._layer.items()}, dict(self._sizes)

    def restore(self, layer: Mapping[str, Mapping[str, Record | None]],
                sizes: Mapping[str, int], counter: int, last_ms: int) -> None:
        """Back to the base, then exactly this layer (as `layer()` gave it), id counter and
        timestamp floor: a layer rebuilt from its serialized form."""
        with self.lock:
            self.reset()
            self._layer = {t: dict(rows) for t, rows in layer.items()}
            self._sizes = dict(sizes)
            self.held = delta_bytes(self._layer, self.big)
            self._counter = counter
            self._last_ms = last_ms

    def export(self) -> tuple[dict[str, dict[str, Record | None]], dict[str, int], int, int]:
        """The layer, its size changes, the id counter and the timestamp floor: what
        `restore` takes back (a replicated checkpoint), in O(changes)."""
        with self.lock:
            layer, sizes = self.layer()
            return layer, sizes, self._counter, self._last_ms

    # -- transactions (a replicated state's writes) ---------------------------------------

    def begin(self) -> Changes:
        """Open a transaction: every write records into it until `end`."""
        with self.lock:
            if self._tx is not None:
                raise RuntimeError("a transaction is open already")
            tx = self._tx = Changes(self._counter, self._last_ms)
            return tx

    @property
    def in_transaction(self) -> bool:
        return self._tx is not None

    @property
    def pending(self) -> bool:
        """Whether the open transaction changed anything so far."""
        tx = self._tx
        return tx is not None and bool(tx.records or tx.files or tx.counter != self._counter
                                       or tx.last_ms != self._last_ms)

    def end(self) -> Changes | None:
        """Close the open transaction: what it changed, or None when it changed nothing."""
        with self.lock:
            changed = self.pending
            tx, self._tx = self._tx, None
            if tx is None or not changed:
                return None
            tx.until = (self._counter, self._last_ms)
            return tx

    def attach(self, storage_id: str, content: bytes) -> None:
        """Uploaded bytes that go with the open transaction's write (none open: nothing)."""
        tx = self._tx
        if tx is not None:
            tx.files[storage_id] = content

    def caught_up(self) -> None:
        """Entries were applied under the open transaction before it wrote anything: it
        starts from here (undoing it keeps them)."""
        tx = self._tx
        if tx is not None:
            tx.counter, tx.last_ms = self._counter, self._last_ms

    def undo(self, tx: Changes) -> None:
        """Take back what a closed transaction changed (its files are the caller's)."""
        with self.lock:
            for table, key, old, layered in reversed(tx.undo):
                current = self.get(table, key)
                if layered is _MISSING:  # the layer had no entry: none again (not a tombstone)
                    self._unput(table, key, current, old)
                elif current is not None or old is not None:
                    self._put(table, key, current, old)
            self._counter, self._last_ms = tx.counter, tx.last_ms

    def apply(self, records: Iterable[tuple[str, str, Record | None]], counter: int,
              last_ms: int) -> None:
        """A write made elsewhere (a replicated one): these records (None: deleted), then
        the id counter and timestamp floor as they were after it."""
        with self.lock:
            for table, key, record in records:
                old = self.get(table, key)
                if record is not None or old is not None:
                    self._put(table, key, old, record)
            self._counter, self._last_ms = counter, last_ms

    # -- identities and time --------------------------------------------------------------

    def new_id(self, prefix: str = "", length: int = 32) -> str:
        """A deterministic id: the same seed and sequence of writes give the same ids."""
        with self.lock:
            if self._tx is None and self.outside is not None:
                result: str = self.outside(lambda: self.new_id(prefix, length))
                return result
            self._counter += 1
            digest = hashlib.blake2b(
                f"{self.seed}:{self.salt}{self._counter}".encode(), digest_size=32
            ).hexdigest()
        alphabet = "0123456789abcdefghjkmnpqrstvwxyz"
        body = "".join(alphabet[int(digest[i : i + 2], 16) % 32] for i in range(0, 64, 2))
        return (prefix + body)[:length]

    def new_hex_id(self) -> str:
        """A 24-hex id (knowledge nodes)."""
        with self.lock:
            if self._tx is None and self.outside is not None:
                result: str = self.outside(self.new_hex_id)
                return result
            self._counter += 1
            return hashlib.blake2b(
                f"{self.seed}:{self.salt}{self._counter}".encode(), digest_size=12
            ).hexdigest()

    def now(self) -> str:
        """The clock's time, strictly increasing across calls so that writes order totally."""
        with self.lock:
            if self._tx is None and self.outside is not None:
                result: str = self.outside(self.now)
                return result
            # (At the last instant the API's form can write, 9999-12-31T23:59:59.999Z, writes
            # share it rather than fail.)
            ms = min(max(self.clock.now_ms(), self._last_ms + 1), MAX_MS)
            self._last_ms = ms
            return format_timestamp(ms)

    # -- reads --------------------------------------------------------------------------

    def get(self, table: str, key: str) -> Record | None:
        layer = self._layer.get(table)
        if layer is not None:
            record = layer.get(key, _MISSING)
            if record is not _MISSING:
                return record
        frozen = self._frozen
        if frozen is not None:
            rows = frozen.records.get(table)
            if rows is not None:
                record = rows.get(key, _MISSING)
                if record is not _MISSING:
                    return record
        return self._seed_tables[table].get(key)

    def records(self, table: str, keys: Iterable[str]) -> list[Record]:
        """The records of these keys, which must all exist (keys read from an index)."""
        layer = self._layer.get(table)
        frozen = self._frozen
        if layer is None and (frozen is None or table not in frozen.records):
            seed_rows = self._seed_tables[table]
            return [seed_rows[key] for key in keys]
        get = self.get
        return cast("list[Record]", [get(table, key) for key in keys])

    def rows(self, table: str) -> Mapping[str, Record]:
        """A read-only, live, merged key -> record view of a table (walk it under `lock`)."""
        return _Rows(self, table)

    def _items(self, table: str) -> Iterator[tuple[str, Record]]:
        seed_rows = self.base.seed.tables[table]
        frozen = self._frozen
        frozen_rows = frozen.records.get(table) if frozen is not None else None
        layer_rows = self._layer.get(table)
        if not frozen_rows and not layer_rows:
            return iter(seed_rows.items())
        return self._merged_items(seed_rows, frozen_rows or {}, layer_rows or {})

    @staticmethod
    def _merged_items(seed_rows: Mapping[str, Record], frozen_rows: dict[str, Record | None],
                      layer_rows: dict[str, Record | None]) -> Iterator[tuple[str, Record]]:
        for key, record in seed_rows.items():
            if key not in frozen_rows and key not in layer_rows:
                yield key, record
        for key, maybe in frozen_rows.items():
            if maybe is not None and key not in layer_rows:
                yield key, maybe
        for key, maybe in layer_rows.items():
            if maybe is not None:
                yield key, maybe

    def all(self, table: str) -> Iterable[Record]:
        """Every record of a table (a re-iterable view; walk it under `lock`)."""
        return self.rows(table).values()

    def count(self, table: str) -> int:
        frozen = self._frozen
        return (len(self.base.seed.tables[table])
                + (frozen.sizes.get(table, 0) if frozen is not None else 0)
                + self._sizes.get(table, 0))

    def find(self, table: str, predicate: Callable[[Record], bool]) -> list[Record]:
        """A full scan, for small tables and rare lookups."""
        return [r for _, r in self._items(table) if predicate(r)]

    def index(self, table: str, partition: Sequence[str], order: Sequence[str]) -> Index:
        """The merged index of `table` partitioned and ordered by these fields (the base's
        part is built once per base, on first use; the layer's from the layer's records)."""
        ident = (table, tuple(partition), tuple(order))
        view = self._views.get(ident)
        if view is None:
            if table not in self.key_fields:
                raise KeyError(table)
            view = self._views[ident] = Index(self, ident)
        return view

    def _layer_index(self, ident: IndexId) -> SortedIndex:
        index = self._layer_indexes.get(ident)
        if index is None:
            with self.lock:
                index = self._layer_indexes.get(ident)
                if index is None:
                    table = ident[0]
                    index = _build_index(ident, self.key_fields[table],
                                         self._layer.get(table, {}).values())
                    self._layer_indexes[ident] = index
                    self._by_table.setdefault(table, []).append(index)
        return index

    # -- writes ---------------------------------------------------------------------------

    @property
    def base_delta(self) -> _Frozen | None:
        """The frozen delta of the snapshot this store is over (None over the seed): held in
        memory as long as the store lives, whether or not the snapshot is still saved."""
        return self._frozen

    def _put(self, table: str, key: str, old: Record | None, new: Record | None) -> None:
        layer = self._layer.get(table)
        if layer is None:
            layer = self._layer[table] = {}
        size = entry_bytes(key, new)  # first: a record that cannot be encoded changes nothing
        layered = previous = layer.get(key, _MISSING)  # the layer's own earlier version,
        if previous is _MISSING:  # in its indexes
            previous = None
        else:
            self.held -= entry_bytes(key, previous)
            if previous is not None and self.big:
                self.big.pop(id(previous), None)
        self.held += size
        if size >= BIG_RECORD_BYTES:
            self.big[id(new)] = size
        for index in self._by_table.get(table, ()):
            if previous is not None:
                index.discard(previous)
            if new is not None:
                index.add(new)
        layer[key] = new
        tx = self._tx
        if tx is not None:
            tx.undo.append((table, key, old, layered))
            tx.records[(table, key)] = new
        change = (new is not None) - (old is not None)
        if change:
            self._sizes[table] = self._sizes.get(table, 0) + change
        self.version = _next_version()

    def _unput(self, table: str, key: str, current: Record | None, base: Record | None
               ) -> None:
        """Drop the layer's entry for `key` (an undone write's first): the base's record
        (`base`) shows again, and the layer holds nothing for it."""
        layer = self._layer.get(table)
        if layer is None or key not in layer:
            return
        previous = layer.pop(key)
        if not layer:  # the table unchanged again: its lists take the seed's fast path
            del self._layer[table]
        self.held -= entry_bytes(key, previous)
        if previous is not None:
            self.big.pop(id(previous), None)
            for index in self._by_table.get(table, ()):
                index.discard(previous)
        change = (base is not None) - (current is not None)
        if change:
            self._sizes[table] = self._sizes.get(table, 0) + change
        self.version = _next_version()

    def insert(self, table: str, record: Record) -> Record:
        with self.lock:
            if self._tx is None and self.outside is not None:
                result: Record = self.outside(lambda: self.insert(table, record))
                return result
            key = record[self.key_fields[table]]
            self._put(table, key, self.get(table, key), record)
            return record

    def update(self, table: str, key: str, changes: Mapping[str, Any]) -> Record:
        """Replace the record by a copy with `changes` applied; returns the new record."""
        with self.lock:
            if self._tx is None and self.outside is not None:
                result: Record = self.outside(lambda: self.update(table, key, changes))
                return result
            old = self.get(table, key)
            if old is None:
                raise KeyError(key)
            new = {**old, **changes}
            self._put(table, key, old, new)
            return new

    def delete(self, table: str, key: str) -> Record | None:
        with self.lock:
            if self._tx is None and self.outside is not None:
                gone: Record | None = self.outside(lambda: self.delete(table, key))
                return gone
            old = self.get(table, key)
            if old is not None:
                self._put(table, key, old, None)
            return old
