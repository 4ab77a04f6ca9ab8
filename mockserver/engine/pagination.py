"""One cursor pagination for every list.

Cursors are opaque and tamper-evident: base64url of the last item's sort key plus a fingerprint
of the query that produced it, signed with HMAC-SHA256. A forged cursor, a cursor of another
list, or a cursor reused with other filters or sort is refused with 400. Walking is keyset
over a sorted index, so creates and deletes between pages never repeat an item and never skip
one that existed throughout the walk.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import hashlib
import hmac
import threading
import weakref
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import orjson

from .errors import BadRequest
from .store import Index, Record, SeedBucket, Store

__all__ = ["CursorCodec", "Page", "encoded", "fingerprint", "walk"]

# JSON of records as sent, per projection (the fields tuple, or None: all but `_` fields).
#
# Seed pages (a table no layer above the seed changed): per seed bucket and projection, a list
# aligned with the bucket's records (`SeedBucket.encoded`), filled as records are shown, so a
# page's JSON is a slice of it. Other records, by identity: records are never mutated (a write
# replaces the dict), so a record on a polled page is encoded once, not per request. A
# projection's entry holds its fields tuple, its fragments by record id, and beside them the
# records themselves, so no id is reused while the entry lives (even for a request still
# holding an entry just dropped): an id found is the record's.
#
# Bounded in all: past `_ENCODED_SIZE` fragments made, or `_ALIGNED_SLOTS` aligned slots
# allocated, everything is dropped at once (rare; it costs one encoding per record shown
# afterwards).
_Projection = tuple[tuple[str, ...] | None, dict[int, orjson.Fragment], dict[int, Record]]
_ENCODED: dict[int, _Projection] = {}
_ENCODED_SIZE = 16384
_encoded_count = 0
_ALIGNED_SLOTS = 1 << 20  # list slots (8 bytes each) of every aligned list together
_aligned_slots = 0
# The buckets holding aligned lists, weakly (a seed replaced by `load` goes with its lists).
_ALIGNED: dict[int, weakref.ref[SeedBucket]] = {}
_ALIGNED_LOCK = threading.Lock()


def _fragment(record: Record, fields: tuple[str, ...] | None) -> orjson.Fragment:
    shown = ({k: v for k, v in record.items() if not k.startswith("_")} if fields is None
             else {f: record[f] for f in fields if f in record})
    return orjson.Fragment(orjson.dumps(shown))


def _drop_aligned() -> None:
    global _aligned_slots
    with _ALIGNED_LOCK:
        for ref in list(_ALIGNED.values()):
            bucket = ref()
            if bucket is not None:
                bucket.encoded.clear()
        _ALIGNED.clear()
        _aligned_slots = 0


def _make_room() -> None:
    global _encoded_count
    if _encoded_count >= _ENCODED_SIZE:
        _ENCODED.clear()
        _drop_aligned()
        _encoded_count = 0
    _encoded_count += 1


def _aligned(bucket: SeedBucket, fields: tuple[str, ...] | None) -> list[Any] | None:
    """The bucket's aligned list of fragments for this projection (made empty if it has
    none), or None when a bucket that large would not fit the bound."""
    global _aligned_slots
    size = len(bucket)
    if size > _ALIGNED_SLOTS:
        return None
    if _aligned_slots + size > _ALIGNED_SLOTS:
        _drop_aligned()
    with _ALIGNED_LOCK:
        found = bucket.encoded.get(id(fields))
        if found is not None and found[0] is fields:
            return found[1]
        fragments: list[Any] = [None] * size
        bucket.encoded[id(fields)] = (fields, fragments)
        _ALIGNED[id(bucket)] = weakref.ref(bucket)
        _aligned_slots += size
        return fragments


def _encoded_seed(page: Page, bucket: SeedBucket, records: list[Record],
                  fields: tuple[str, ...] | None) -> list[orjson.Fragment] | None:
    aligned = bucket.encoded.get(id(fields))
    fragments = (aligned[1] if aligned is not None and aligned[0] is fields
                 else _aligned(bucket, fields))
    if fragments is None:
        return None
    at = page.at
    positions: Iterable[int]
    if type(at) is tuple:
        start, stop = at
        hits = fragments[start:stop]
        if page.descending:
            hits.reverse()
            positions = range(stop - 1, start - 1, -1)
        else:
            positions = range(start, stop)
    else:
        assert isinstance(at, list)
        hits = [fragments[i] for i in at]
        positions = at
    if all(hits):  # a fragment is always true
        return hits
    for i, (position, hit) in enumerate(zip(positions, hits, strict=True)):
        if hit is None:
            _make_room()
            hits[i] = fragments[position] = _fragment(records[i], fields)
    return hits


def encoded(records: list[Record], fields: tuple[str, ...] | None,
            page: Page | None = None) -> list[orjson.Fragment]:
    """These records projected onto `fields` (None: all but the internal `_` fields) as
    pre-encoded JSON for orjson. `page`, when `records` are its items, lets a page of seed
    records be found by position in its seed bucket."""
    if page is not None and page.bucket is not None:
        aligned = page.bucket.encoded.get(id(fields))
        at = page.at
        if aligned is not None and aligned[0] is fields and type(at) is tuple:
            hits: list[Any] = aligned[1][at[0]:at[1]]
            if all(hits):  # the common case: a page shown before (a fragment is always true)
                if page.descending:
                    hits.reverse()
                return hits
        seed = _encoded_seed(page, page.bucket, records, fields)
        if seed is not None:
            return seed
    return _encoded_by_identity(records, fields)


def _encoded_by_identity(records: list[Record],
                         fields: tuple[str, ...] | None) -> list[orjson.Fragment]:
    found = _ENCODED.get(id(fields))
    if found is None or found[0] is not fields:
        found = _ENCODED[id(fields)] = (fields, {}, {})
    table, kept = found[1], found[2]
    hits: list[Any] = list(map(table.get, map(id, records)))
    if all(hits):  # the common case: every record seen before (a fragment is always true)
        return hits
    out = []
    for record, hit in zip(records, hits, strict=True):
        if hit is not None:
            out.append(hit)
            continue
        fragment = _fragment(record, fields)
        _make_room()
        found = _ENCODED.setdefault(id(fields), (fields, {}, {}))  # gone if room was made
        table, kept = found[1], found[2]
        kept[id(record)] = record
        table[id(record)] = fragment
        out.append(fragment)
    return out


_FINGERPRINTS: dict[Any, str] = {}


def fingerprint(operation_id: str, path: Mapping[str, Any], query: Mapping[str, Any],
                body: Any = None) -> str:
    """What a cursor is bound to: the operation and every parameter except cursor and limit."""
    memo: Any = None
    items: Iterable[tuple[str, Any]]
    if body is None:
        # The same list again (a poll, the next page of a walk): one lookup. The memo key
        # determines the parameters bound (the query's, less cursor and limit): without a
        # cursor it is the query as it is (a poll repeats it, limit and all); with one, the
        # query less cursor and limit (every page of a walk has its own cursor).
        if "cursor" in query:
            bound = dict(query)
            del bound["cursor"]
            bound.pop("limit", None)
            items = bound.items()
        else:
            items = query.items()
        try:
            memo = (operation_id, *path.items(), None, *items)
            found = _FINGERPRINTS.get(memo)
        except TypeError:  # a list value (a repeated parameter): not hashable
            memo = found = None
        if found is not None:
            return found
    bound = {k: v for k, v in query.items() if k not in ("cursor", "limit")}
    material = orjson.dumps([operation_id, path, bound, body], option=orjson.OPT_SORT_KEYS)
    result = hashlib.sha256(material).hexdigest()[:16]
    if memo is not None:
        if len(_FINGERPRINTS) >= 4096:
            with contextlib.suppress(KeyError, RuntimeError, StopIteration):
                del _FINGERPRINTS[next(iter(_FINGERPRINTS))]
        _FINGERPRINTS[memo] = result
    return result


def _tupleize(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(_tupleize(v) for v in value)
    return value


class CursorCodec:
    """Signs cursors and checks them. Cursors issued recently are also remembered (a bounded
    table, cursor -> what it was issued for), so following one costs a lookup; any other
    cursor is checked by its signature, so cursors stay valid past the table and forged
    ones are refused either way."""

    def __init__(self, secret: bytes, remember: int = 4096) -> None:
        self._remember = remember
        self.rekey(secret)

    def rekey(self, secret: bytes) -> None:
        """Sign and check with `secret` from now on (a shared state's namespace changed it);
        cursors issued under the old one are forgotten."""
        # Keyed once; each signature copies the keyed state (cheaper than re-keying).
        self._keyed = hmac.new(secret, digestmod=hashlib.sha256)
        self._issued: dict[str, tuple[str, tuple[Any, ...]]] = {}
        self._minted: dict[tuple[str, tuple[Any, ...]], str] = {}  # the reverse, for reuse

    def _sign(self, payload: bytes) -> bytes:
        mac = self._keyed.copy()
        mac.update(payload)
        return mac.digest()[:16]

    def encode(self, query_fingerprint: str, key: tuple[Any, ...]) -> str:
        """The cursor of a key (deterministic: the same page again gets the same cursor)."""
        try:
            known = self._minted.get((query_fingerprint, key))
        except TypeError:  # a key holding a list
            known = None
        if known is not None:
            return known
        payload = orjson.dumps([query_fingerprint, key])
        token = payload + self._sign(payload)
        cursor = base64.urlsafe_b64encode(token).rstrip(b"=").decode()
        issued = self._issued
        if self._remember <= 0:
            return cursor
        minted = self._minted
        if len(issued) >= self._remember:
            # The oldest goes; a concurrent request may have taken it already.
            with contextlib.suppress(KeyError, RuntimeError, StopIteration):
                del minted[issued.pop(next(iter(issued)))]
        issued[cursor] = (query_fingerprint, key)
        with contextlib.suppress(TypeError):
            minted[(query_fingerprint, key)] = cursor
        return cursor

    def decode(self, cursor: str, query_fingerprint: str) -> tuple[Any, ...]:
        known = self._issued.get(cursor)
        if known is not None:
            bound_to, key = known
        else:
            bound_to, key = self._verify(cursor)
        if bound_to != query_fingerprint:
            raise BadRequest(
                "query parameter 'cursor': the cursor belongs to another list or to other "
                "filters or sort; start again without a cursor"
            )
        return key

    def _verify(self, cursor: str) -> tuple[str, tuple[Any, ...]]:
        try:
            raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        except (binascii.Error, ValueError):
            raise BadRequest("query parameter 'cursor': not a cursor this API issued") from None
        payload, signature = raw[:-16], raw[-16:]
        if len(raw) <= 16 or not hmac.compare_digest(signature, self._sign(payload)):
            raise BadRequest("query parameter 'cursor': not a cursor this API issued")
        bound_to, key = orjson.loads(payload)
        return bound_to, tuple(_tupleize(key))


class Page:
    """One page of records and the sort key to continue after (None at the end). A page of
    seed records also names its seed bucket and where its items are in it (`at`): a
    `(start, stop)` span (walked down when `descending`) or a list of positions."""

    __slots__ = ("at", "bucket", "descending", "items", "next_key")

    def __init__(self, items: list[Record], next_key: tuple[Any, ...] | None,
                 bucket: SeedBucket | None = None,
                 at: tuple[int, int] | list[int] | None = None,
                 descending: bool = False) -> None:
        self.items = items
        self.next_key = next_key
        self.bucket = bucket
        self.at = at
        self.descending = descending


def walk(
    store: Store,
    table: str,
    index: Index,
    partition: tuple[Any, ...],
    *,
    limit: int,
    after: tuple[Any, ...] | None,
    descending: bool,
    where: Callable[[Record], bool] | None = None,
) -> Page:
    """Up to `limit` matching records after the key `after`, and whether more follow."""
    bucket = index.seed_bucket(partition)
    if bucket is not None:
        # The table is the seed's (the common case): positions in the bucket's flat lists.
        records = bucket.records
        at = bucket.position(after, descending)
        if where is None:
            if descending:
                start = at - limit if at > limit else 0
                items = records[start:at]
                items.reverse()
                return Page(items, bucket.sort_keys[start] if start else None,
                            bucket, (start, at), True)
            stop = at + limit
            if stop < len(records):
                return Page(records[at:stop], bucket.sort_keys[stop - 1], bucket, (at, stop))
            return Page(records[at:], None, bucket, (at, len(records)))
        shown: list[Record] = []
        positions: list[int] = []
        for i in range(at - 1, -1, -1) if descending else range(at, len(records)):
            record = records[i]
            if where(record):
                if len(shown) == limit:
                    return Page(shown, bucket.sort_keys[positions[-1]], bucket, positions)
                shown.append(record)
                positions.append(i)
        return Page(shown, None, bucket, positions)
    if where is None:
        # Unfiltered: every key is a hit; take limit + 1 at once. Indexes follow every
        # write under the store lock, so each key has its record.
        taken = index.take(partition, after=after, descending=descending, count=limit + 1)
        return Page(store.records(table, [key[-1] for key in taken[:limit]]),
                    taken[limit - 1] if len(taken) > limit else None)
    rows = store.rows(table)
    keys = index.keys(partition, after=after, descending=descending)
    items = []
    last_key: tuple[Any, ...] | None = None
    for key in keys:
        row = rows.get(key[-1])
        if row is None or not where(row):
            continue
        if len(items) == limit:
            return Page(items, last_key)
        items.append(row)
        last_key = key
    return Page(items, None)
