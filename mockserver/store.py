"""In-memory state, seeded from fixtures. No HTTP in here.

Records are plain dicts treated as immutable: every write replaces a record with a new dict, so
`reset()` only copies the seeded tables' top-level mappings (cheap enough to run before every
test) and a page already handed out can never change under a reader.

Lists are served from sorted indexes (one `SortedList` per partition, e.g. per workspace) kept
up to date on every write, so a page costs in proportion to its size, not to the dataset.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

from sortedcontainers import SortedList

from .clock import Clock, format_timestamp

__all__ = ["Index", "Record", "Store"]

Record = Mapping[str, Any]

# Sort keys must be totally ordered even when a field is null: nulls sort after every value.
_NULL = (1, "")


def _sort_value(value: Any) -> tuple[int, Any]:
    if value is None:
        return _NULL
    if isinstance(value, bool):
        return (0, int(value))
    return (0, value)


class Index:
    """Records of one table, partitioned by some fields and sorted by others, then by key.

    A partition field whose value is a list puts the record in one partition per element
    (a user belongs to several workspaces).
    """

    def __init__(self, key_field: str, partition: Sequence[str], order: Sequence[str]) -> None:
        self.key_field = key_field
        self.partition_fields = tuple(partition)
        self.order_fields = tuple(order)
        self._parts: dict[tuple[Any, ...], SortedList] = {}

    def sort_key(self, record: Record) -> tuple[Any, ...]:
        return (*(_sort_value(record.get(f)) for f in self.order_fields), record[self.key_field])

    def _partitions(self, record: Record) -> list[tuple[Any, ...]]:
        parts: list[tuple[Any, ...]] = [()]
        for field in self.partition_fields:
            value = record.get(field)
            values = value if isinstance(value, list) else [value]
            parts = [(*p, v) for p in parts for v in values]
        return parts

    def add(self, record: Record) -> None:
        key = self.sort_key(record)
        for part in self._partitions(record):
            self._parts.setdefault(part, SortedList()).add(key)

    def discard(self, record: Record) -> None:
        key = self.sort_key(record)
        for part in self._partitions(record):
            bucket = self._parts.get(part)
            if bucket is not None:
                bucket.discard(key)

    def take(
        self, partition: tuple[Any, ...], *, after: tuple[Any, ...] | None, descending: bool,
        count: int,
    ) -> list[tuple[Any, ...]]:
        """Up to `count` sort keys of a partition strictly after `after`, in walking order:
        one bisection and one positional slice, whatever the partition's size."""
        bucket = self._parts.get(partition)
        if not bucket:
            return []
        if descending:
            stop = len(bucket) if after is None else bucket.bisect_left(after)
            return bucket[max(0, stop - count):stop][::-1]
        start = 0 if after is None else bucket.bisect_right(after)
        return bucket[start:start + count]

    def keys(
        self, partition: tuple[Any, ...], *, after: tuple[Any, ...] | None, descending: bool
    ) -> Iterator[tuple[Any, ...]]:
        """Sort keys of a partition in order, strictly after `after` (in walking order)."""
        bucket = self._parts.get(partition)
        if not bucket:
            return iter(())
        if after is None:
            return iter(reversed(bucket)) if descending else iter(bucket)
        if descending:
            return bucket.irange(maximum=after, inclusive=(True, False), reverse=True)
        return bucket.irange(minimum=after, inclusive=(False, True))


class Store:
    """Tables of records keyed by their id field, with sorted indexes and a seeded reset."""

    def __init__(
        self,
        seed_tables: Mapping[str, Mapping[str, Record]],
        key_fields: Mapping[str, str],
        *,
        clock: Clock,
        seed: int = 0,
    ) -> None:
        self.clock = clock
        self.seed = seed
        self.key_fields = dict(key_fields)
        self.lock = threading.RLock()
        # The seeded tables are kept as given (never written: every write goes to the copy
        # that reset() makes), so a large dataset is not held twice.
        self._seed_tables = seed_tables
        self._tables: dict[str, dict[str, Record]] = {}
        self._indexes: dict[tuple[str, tuple[str, ...], tuple[str, ...]], Index] = {}
        self._by_table: dict[str, list[Index]] = {}
        self._counter = 0
        self._last_ms = 0
        # Moves on every write, reset and load: what a cached answer was computed against.
        self.version = 0
        self.reset()

    # -- lifecycle ----------------------------------------------------------------------

    def reset(self) -> None:
        """Back to the seeded state: tables, indexes, id sequence and timestamp floor."""
        with self.lock:
            self._tables = {name: dict(rows) for name, rows in self._seed_tables.items()}
            for name in self.key_fields:
                self._tables.setdefault(name, {})
            self._indexes = {}
            self._by_table = {}
            self._counter = 0
            self._last_ms = 0
            self.version += 1

    def load(self, tables: Mapping[str, Mapping[str, Record]]) -> None:
        """Replace the seeded state (and the current state) with other tables."""
        with self.lock:
            self._seed_tables = tables
            self.reset()

    # -- identities and time --------------------------------------------------------------

    def new_id(self, prefix: str = "", length: int = 32) -> str:
        """A deterministic id: the same seed and sequence of writes give the same ids."""
        with self.lock:
            self._counter += 1
            digest = hashlib.blake2b(
                f"{self.seed}:{self._counter}".encode(), digest_size=32
            ).hexdigest()
        alphabet = "0123456789abcdefghjkmnpqrstvwxyz"
        body = "".join(alphabet[int(digest[i : i + 2], 16) % 32] for i in range(0, 64, 2))
        return (prefix + body)[:length]

    def new_hex_id(self) -> str:
        """A 24-hex id (knowledge nodes)."""
        with self.lock:
            self._counter += 1
            return hashlib.blake2b(
                f"{self.seed}:{self._counter}".encode(), digest_size=12
            ).hexdigest()

    def now(self) -> str:
        """The clock's time, strictly increasing across calls so that writes order totally."""
        with self.lock:
            ms = max(self.clock.now_ms(), self._last_ms + 1)
            self._last_ms = ms
            return format_timestamp(ms)

    # -- reads --------------------------------------------------------------------------

    def get(self, table: str, key: str) -> Record | None:
        return self._tables[table].get(key)

    def rows(self, table: str) -> Mapping[str, Record]:
        """The live key-to-record mapping of a table (read it under `lock` when walking)."""
        return self._tables[table]

    def all(self, table: str) -> Iterable[Record]:
        return self._tables[table].values()

    def count(self, table: str) -> int:
        return len(self._tables[table])

    def find(self, table: str, predicate: Callable[[Record], bool]) -> list[Record]:
        """A full scan, for small tables and rare lookups."""
        return [r for r in self._tables[table].values() if predicate(r)]

    def index(self, table: str, partition: Sequence[str], order: Sequence[str]) -> Index:
        """The index of `table` partitioned and ordered by these fields, built on first use."""
        ident = (table, tuple(partition), tuple(order))
        index = self._indexes.get(ident)
        if index is None:
            with self.lock:
                index = self._indexes.get(ident)
                if index is None:
                    index = Index(self.key_fields[table], partition, order)
                    for record in self._tables[table].values():
                        index.add(record)
                    self._indexes[ident] = index
                    self._by_table.setdefault(table, []).append(index)
        return index

    # -- writes ---------------------------------------------------------------------------

    def insert(self, table: str, record: Record) -> Record:
        with self.lock:
            key = record[self.key_fields[table]]
            rows = self._tables[table]
            old = rows.get(key)
            self._reindex(table, old, record)
            rows[key] = record
            self.version += 1
            return record

    def update(self, table: str, key: str, changes: Mapping[str, Any]) -> Record:
        """Replace the record by a copy with `changes` applied; returns the new record."""
        with self.lock:
            old = self._tables[table][key]
            new = {**old, **changes}
            self._reindex(table, old, new)
            self._tables[table][key] = new
            self.version += 1
            return new

    def delete(self, table: str, key: str) -> Record | None:
        with self.lock:
            old = self._tables[table].pop(key, None)
            if old is not None:
                self._reindex(table, old, None)
                self.version += 1
            return old

    def _reindex(self, table: str, old: Record | None, new: Record | None) -> None:
        for index in self._by_table.get(table, ()):
            if old is not None:
                index.discard(old)
            if new is not None:
                index.add(new)
