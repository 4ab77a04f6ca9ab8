"""Pages over seed buckets (flat aligned lists: sort keys, records, JSON) agree with a reference
walk over sorted records: nulls in the sort field (after every value), both directions, `after`
keys equal to existing ones or between them, filtered walks, pages across a layer or a
snapshot's delta merged over the seed, and the aligned JSON under its memory bound."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mockserver.engine import pagination
from mockserver.engine.clock import Clock
from mockserver.engine.pagination import Page, encoded, walk
from mockserver.engine.store import Record, Seed, SeedBucket, Store

FIELDS = ("id", "n")  # a projection (the records also carry workspace_id and kind)
CLOCK = "2026-11-01T00:00:00.000Z"


def _sort_key(record: Record) -> tuple[Any, ...]:
    n = record["n"]
    return ((1, "") if n is None else (0, n), record["id"])


def _reference(records: list[Record], ws: str, after: tuple[Any, ...] | None,
               descending: bool, where: Callable[[Record], bool] | None,
               ) -> list[Record]:
    """The partition's records strictly after `after` in walking order, filtered: by sorting
    the records, nothing else."""
    mine = sorted((r for r in records if r["workspace_id"] == ws), key=_sort_key,
                  reverse=descending)
    if after is not None:
        mine = [r for r in mine
                if (_sort_key(r) < after if descending else _sort_key(r) > after)]
    return [r for r in mine if where is None or where(r)]


record_st = st.fixed_dictionaries({
    "workspace_id": st.sampled_from(["ws", "other"]),
    "n": st.none() | st.integers(0, 5),  # ties and nulls in the sort field
    "kind": st.integers(0, 2),
})
records_st = st.lists(record_st, max_size=30).map(
    lambda rs: [{"id": f"r{i:03d}", **r} for i, r in enumerate(rs)])
# An `after` key: None, or one that may equal an existing sort key or fall between keys.
after_st = st.none() | st.tuples(
    st.sampled_from([(0, 0), (0, 2), (0, 5), (1, "")]),
    st.sampled_from(["r000", "r003", "r010", "r0105", "r999", ""]))
where_st = st.none() | st.frozensets(st.integers(0, 2)).map(
    lambda kinds: (lambda r: r["kind"] in kinds))


def _store(records: list[Any]) -> Store:
    return Store({"things": {r["id"]: r for r in records}}, {"things": "id"},
                 clock=Clock(frozen_at=CLOCK))


def _sent(page: Page) -> list[Any]:
    return [orjson.loads(orjson.dumps(f)) for f in encoded(page.items, FIELDS, page)]


def _check_walk(store: Store, records: list[Record], after: tuple[Any, ...] | None,
                descending: bool, where: Callable[[Record], bool] | None,
                limit: int) -> None:
    """One page after `after`, then the rest page by page: the reference's records, in its
    order, and the JSON of each page (encoded, twice: filled, then found) projects them."""
    index = store.index("things", ("workspace_id",), ("n",))
    expected = _reference(records, "ws", after, descending, where)
    got: list[Record] = []
    pages = 0
    while True:
        page = walk(store, "things", index, ("ws",), limit=limit, after=after,
                    descending=descending, where=where)
        assert len(page.items) <= limit
        projected = [{f: r[f] for f in FIELDS} for r in page.items]
        assert _sent(page) == projected == _sent(page)
        got.extend(page.items)
        pages += 1
        if page.next_key is None:
            break
        assert len(page.items) == limit and page.next_key == _sort_key(page.items[-1])
        after = page.next_key
        assert pages <= len(records) + 1
    assert [r["id"] for r in got] == [r["id"] for r in expected]


@settings(max_examples=150, deadline=None)
@given(records=records_st, after=after_st, descending=st.booleans(), where=where_st,
       limit=st.integers(1, 7))
def test_seed_walk_equals_a_walk_over_sorted_records(
        records: list[Record], after: tuple[Any, ...] | None, descending: bool,
        where: Callable[[Record], bool] | None, limit: int) -> None:
    store = _store(records)
    assert store.index("things", ("workspace_id",), ("n",)).seed_bucket(("ws",)) is not None
    _check_walk(store, records, after, descending, where, limit)


write_st = st.lists(st.tuples(st.sampled_from(["insert", "update", "delete"]),
                              st.integers(0, 40), record_st), max_size=8)


def _apply(store: Store, records: list[Record],
           writes: list[tuple[str, int, Record]]) -> list[Record]:
    """The writes on the store, and the records they leave (a model)."""
    model = {r["id"]: r for r in records}
    for action, i, fields in writes:
        key = f"r{i:03d}"
        if action == "insert" and key not in model:
            model[key] = store.insert("things", {"id": key, **fields})
        elif action == "update" and key in model:
            model[key] = store.update("things", key, {"n": fields["n"],
                                                      "workspace_id": fields["workspace_id"]})
        elif action == "delete" and key in model:
            store.delete("things", key)
            del model[key]
    return list(model.values())


@settings(max_examples=100, deadline=None)
@given(records=records_st, frozen=write_st, writes=write_st, after=after_st,
       descending=st.booleans(), where=where_st, limit=st.integers(1, 7))
def test_pages_across_a_layer_and_a_snapshot_merged_over_the_seed(
        records: list[Record], frozen: list[Any], writes: list[Any],
        after: tuple[Any, ...] | None, descending: bool,
        where: Callable[[Record], bool] | None, limit: int) -> None:
    """Writes under a snapshot (its frozen delta) and in the layer above it: the seed bucket's
    keys merge with theirs, skipping what they replaced or deleted."""
    base = _store(records)
    snapshot_model = _apply(base, records, frozen)
    store = Store(base.snapshot(), clock=Clock(frozen_at=CLOCK))
    model = _apply(store, snapshot_model, writes)
    bucket = store.index("things", ("workspace_id",), ("n",)).seed_bucket(("ws",))
    assert (bucket is None) == ("things" in store._layer or (
        store._frozen is not None and "things" in store._frozen.records))
    _check_walk(store, model, after, descending, where, limit)
    store.reset()  # back to the snapshot: the same walks over its delta alone
    _check_walk(store, snapshot_model, after, descending, where, limit)


def test_a_write_after_a_page_is_sent_as_written_and_reset_returns_to_the_seed_json() -> None:
    records = [{"id": f"r{i:03d}", "workspace_id": "ws", "n": i % 3, "kind": 0}
               for i in range(6)]
    store = _store(records)
    index = store.index("things", ("workspace_id",), ("n",))
    for descending in (False, True):
        before = _sent(walk(store, "things", index, ("ws",), limit=6, after=None,
                            descending=descending))
        store.update("things", "r004", {"n": None})
        after = _sent(walk(store, "things", index, ("ws",), limit=6, after=None,
                           descending=descending))
        assert {"id": "r004", "n": None} in after and {"id": "r004", "n": 1} in before
        assert after[-1 if not descending else 0] == {"id": "r004", "n": None}  # nulls last
        store.reset()
        assert _sent(walk(store, "things", index, ("ws",), limit=6, after=None,
                          descending=descending)) == before


def test_a_seed_index_sorts_once_and_list_partitions_hold_each_element() -> None:
    seed = Seed({"users": {
        "u1": {"id": "u1", "ws": ["a", "b"], "email": "z@x"},
        "u2": {"id": "u2", "ws": ["b"], "email": None},
        "u3": {"id": "u3", "ws": [], "email": "a@x"},
        "u4": {"id": "u4", "ws": ["b"], "email": "a@x"},
    }}, {"users": "id"})
    index = seed.index(("users", ("ws",), ("email",)))
    assert set(index.parts) == {("a",), ("b",)}
    bucket = index.parts[("b",)]
    assert isinstance(bucket, SeedBucket)
    assert [r["id"] for r in bucket.records] == ["u4", "u1", "u2"]
    assert bucket.sort_keys == [index.sort_key(r) for r in bucket.records]
    assert seed.index(("users", ("ws",), ("email",))) is index  # built once


def test_aligned_json_stays_within_its_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    """Aligned lists are dropped when their slots would pass the bound, and a bucket larger
    than the bound is encoded by identity; either way the JSON sent is the records'."""
    records = [{"id": f"r{i:03d}", "workspace_id": ws, "n": i, "kind": 0}
               for i in range(40) for ws in ["ws", "w2"][i % 2:i % 2 + 1]]
    store = _store(records)
    index = store.index("things", ("workspace_id",), ("n",))
    monkeypatch.setattr(pagination, "_ALIGNED_SLOTS", 25)
    pagination._drop_aligned()
    ws = walk(store, "things", index, ("ws",), limit=5, after=None, descending=False)
    assert _sent(ws) == [{"id": r["id"], "n": r["n"]} for r in ws.items]
    assert pagination._aligned_slots == 20  # the bucket of "ws": 20 records
    w2 = walk(store, "things", index, ("w2",), limit=5, after=None, descending=True)
    assert _sent(w2) == [{"id": r["id"], "n": r["n"]} for r in w2.items]
    assert pagination._aligned_slots == 20  # "ws"'s list dropped to make room for "w2"'s
    assert ws.bucket is not None and not ws.bucket.encoded
    monkeypatch.setattr(pagination, "_ALIGNED_SLOTS", 10)  # smaller than either bucket
    pagination._drop_aligned()
    assert _sent(ws) == [{"id": r["id"], "n": r["n"]} for r in ws.items]
    assert pagination._aligned_slots == 0 and not ws.bucket.encoded
