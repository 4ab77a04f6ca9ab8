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
from collections.abc import Callable, Mapping
from typing import Any

import orjson

from .errors import BadRequest
from .store import Index, Record, Store

__all__ = ["CursorCodec", "Page", "encoded", "fingerprint", "walk"]

# JSON of records as sent, per projection (the fields tuple, or None: all but `_` fields),
# by record identity: records are never mutated (a write replaces the dict), so a record on a
# polled page is encoded once, not per request. A projection's entry holds its fields tuple,
# its fragments by record id, and beside them the records themselves, so no id is reused while
# the entry lives (even for a request still holding an entry just dropped): an id found is the
# record's, and a page of hits costs two lookups per record. Bounded in all: past the bound
# everything is dropped at once (rare; it costs one encoding per record shown afterwards).
_Projection = tuple[tuple[str, ...] | None, dict[int, orjson.Fragment], dict[int, Record]]
_ENCODED: dict[int, _Projection] = {}
_ENCODED_SIZE = 16384
_encoded_count = 0


def _fragment(record: Record, fields: tuple[str, ...] | None) -> orjson.Fragment:
    shown = ({k: v for k, v in record.items() if not k.startswith("_")} if fields is None
             else {f: record[f] for f in fields if f in record})
    return orjson.Fragment(orjson.dumps(shown))


def _make_room() -> None:
    global _encoded_count
    if _encoded_count >= _ENCODED_SIZE:
        _ENCODED.clear()
        _SEED_ENCODED.clear()
        _encoded_count = 0
    _encoded_count += 1


# Seed records (a table no layer above the seed changed) never change while their seed lives,
# so their JSON is also kept by key, per seed table and projection: a lookup by key costs half
# one by identity (`id()` makes an int per record). The entry holds the seed's rows mapping,
# so its id is not reused while the entry lives. Counted in the same bound as `_ENCODED`.
_SeedProjection = tuple[Mapping[str, Record], tuple[str, ...] | None, dict[str, orjson.Fragment]]
_SEED_ENCODED: dict[tuple[int, int], _SeedProjection] = {}


def encoded(records: list[Record], fields: tuple[str, ...] | None, *,
            keys: list[str] | None = None,
            seed_rows: Mapping[str, Record] | None = None) -> list[orjson.Fragment]:
    """These records projected onto `fields` (None: all but the internal `_` fields) as
    pre-encoded JSON for orjson. `keys` and `seed_rows`, when the records are the seed's
    (`Store.seed_rows`), let them be found by key."""
    if seed_rows is not None and keys is not None:
        memo = _SEED_ENCODED.get((id(seed_rows), id(fields)))
        if memo is None or memo[0] is not seed_rows or memo[1] is not fields:
            memo = _SEED_ENCODED[(id(seed_rows), id(fields))] = (seed_rows, fields, {})
        by_key = memo[2]
        hits: list[Any] = [*map(by_key.get, keys)]
        if all(hits):
            return hits
        for i, (key, hit) in enumerate(zip(keys, hits, strict=True)):
            if hit is None:
                _make_room()
                hits[i] = by_key[key] = _fragment(records[i], fields)
        return hits
    found = _ENCODED.get(id(fields))
    if found is None or found[0] is not fields:
        found = _ENCODED[id(fields)] = (fields, {}, {})
    table, kept = found[1], found[2]
    hits = list(map(table.get, map(id, records)))
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
    bound = {k: v for k, v in query.items() if k not in ("cursor", "limit")}
    memo: Any = None
    if body is None:
        try:  # the same list again (a poll, the next page of a walk): a lookup
            memo = (operation_id, *path.items(), None, *bound.items())
            found = _FINGERPRINTS.get(memo)
        except TypeError:  # a list value (a repeated parameter): not hashable
            memo = found = None
        if found is not None:
            return found
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
        # Keyed once; each signature copies the keyed state (cheaper than re-keying).
        self._keyed = hmac.new(secret, digestmod=hashlib.sha256)
        self._remember = remember
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
    """One page of records and the sort key to continue after (None at the end)."""

    __slots__ = ("items", "keys", "next_key", "seed_rows")

    def __init__(self, items: list[Record], next_key: tuple[Any, ...] | None,
                 keys: list[str] | None = None,
                 seed_rows: Mapping[str, Record] | None = None) -> None:
        self.items = items
        self.next_key = next_key
        # The items' keys and the seed's rows when every item is a seed record (`encoded`).
        self.keys = keys
        self.seed_rows = seed_rows


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
    if where is None:
        # Unfiltered (the common polling case): every key is a hit; take limit + 1 at once.
        # Indexes follow every write under the store lock, so each key has its record.
        taken = index.take(partition, after=after, descending=descending, count=limit + 1)
        shown = [key[-1] for key in taken[:limit]]
        return Page(store.records(table, shown), taken[limit - 1] if len(taken) > limit else None,
                    shown, store.seed_rows(table))
    rows = store.rows(table)
    keys = index.keys(partition, after=after, descending=descending)
    items: list[Record] = []
    last_key: tuple[Any, ...] | None = None
    for key in keys:
        record = rows.get(key[-1])
        if record is None or (where is not None and not where(record)):
            continue
        if len(items) == limit:
            return Page(items, last_key)
        items.append(record)
        last_key = key
    return Page(items, None)
