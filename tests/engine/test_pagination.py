"""Keyset pagination: the exactly-once law under interleaved writes, and cursor integrity."""

from __future__ import annotations

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mockserver.engine.clock import Clock
from mockserver.engine.errors import BadRequest
from mockserver.engine.pagination import CursorCodec, encoded, fingerprint, walk
from mockserver.engine.store import Store


def make_store(n: int) -> Store:
    rows = {
        f"r{i:04d}": {"id": f"r{i:04d}", "workspace_id": "ws", "kind": i % 3,
                      "created_at": f"2026-10-01T00:00:{i % 60:02d}.000Z"}
        for i in range(n)
    }
    return Store({"things": rows}, {"things": "id"}, clock=Clock(frozen_at="2026-11-01T00:00:00.000Z"))


operations = st.lists(
    st.one_of(
        st.tuples(st.just("create"), st.integers(0, 59)),
        st.tuples(st.just("delete"), st.integers(0, 10_000)),
        st.tuples(st.just("page"), st.integers(1, 7)),
    ),
    max_size=60,
)


@settings(max_examples=150, deadline=None)
@given(size=st.integers(0, 40), steps=operations, descending=st.booleans(),
       kinds=st.none() | st.frozensets(st.integers(0, 2)))
def test_walk_yields_every_survivor_exactly_once(size: int, steps: list, descending: bool,
                                                 kinds: frozenset[int] | None) -> None:
    """Unfiltered walks (kinds None: index.take) and filtered ones (a `where`, as about 25
    lists use): every record that matches and exists throughout is seen exactly once, and
    nothing that does not match is seen."""
    store = make_store(size)
    where = None if kinds is None else (lambda r: r["kind"] in kinds)
    codec = CursorCodec(b"secret")
    fp = fingerprint("listThings", {}, {"workspace_id": "ws"})
    index = store.index("things", ("workspace_id",), ("created_at",))
    initial = set(store.rows("things"))
    deleted: set[str] = set()
    seen: list[str] = []
    cursor: str | None = None
    finished = False
    created = 0
    for action, arg in [*steps, ("page", 100)] * 2:
        if action == "create":
            created += 1
            key = f"n{created:04d}"
            store.insert("things", {"id": key, "workspace_id": "ws", "kind": arg % 3,
                                    "created_at": f"2026-10-01T00:00:{arg:02d}.000Z"})
        elif action == "delete" and store.rows("things"):
            keys = sorted(store.rows("things"))
            victim = keys[arg % len(keys)]
            store.delete("things", victim)
            deleted.add(victim)
        elif action == "page" and not finished:
            after = codec.decode(cursor, fp) if cursor else None
            page = walk(store, "things", index, ("ws",), limit=arg, after=after,
                        descending=descending, where=where)
            assert len(page.items) <= arg
            assert where is None or all(where(r) for r in page.items), "a non-match was sent"
            seen.extend(r["id"] for r in page.items)
            if page.next_key is None:
                finished = True
            else:
                cursor = codec.encode(fp, page.next_key)
    assert finished
    assert len(seen) == len(set(seen)), "an item was repeated"
    survivors = {k for k in initial - deleted
                 if kinds is None or int(k[1:]) % 3 in kinds}
    assert survivors <= set(seen), "an item that existed throughout was skipped"


def test_pages_follow_the_sort_order_with_the_key_breaking_ties() -> None:
    store = make_store(10)
    index = store.index("things", ("workspace_id",), ("created_at",))
    page = walk(store, "things", index, ("ws",), limit=100, after=None, descending=True)
    keys = [(r["created_at"], r["id"]) for r in page.items]
    assert keys == sorted(keys, reverse=True)


def test_forged_cursor_is_refused() -> None:
    codec = CursorCodec(b"secret")
    good = codec.encode("fp", ((0, "2026"), "r1"))
    forged = good[:-2] + ("AA" if not good.endswith("AA") else "BB")
    with pytest.raises(BadRequest, match="cursor"):
        codec.decode(forged, "fp")
    with pytest.raises(BadRequest, match="cursor"):
        codec.decode("not-a-cursor", "fp")
    with pytest.raises(BadRequest, match="cursor"):
        CursorCodec(b"other").decode(good, "fp")


def test_cursor_is_bound_to_its_query() -> None:
    codec = CursorCodec(b"secret")
    fp_desc = fingerprint("listThings", {}, {"workspace_id": "ws", "order": "desc", "limit": 2})
    fp_same = fingerprint("listThings", {}, {"workspace_id": "ws", "order": "desc", "limit": 9,
                                              "cursor": "x"})
    fp_asc = fingerprint("listThings", {}, {"workspace_id": "ws", "order": "asc"})
    fp_other = fingerprint("listOther", {}, {"workspace_id": "ws", "order": "desc"})
    assert fp_desc == fp_same  # limit and cursor may change between pages
    cursor = codec.encode(fp_desc, ((0, "2026"), "r1"))
    assert codec.decode(cursor, fp_same) == ((0, "2026"), "r1")
    for other in (fp_asc, fp_other):
        with pytest.raises(BadRequest, match="other filters or sort"):
            codec.decode(cursor, other)


def test_cursors_stay_valid_past_the_table_of_issued_cursors() -> None:
    """Recently issued cursors are looked up; older ones (and those of a codec that remembers
    none) are checked by their signature, with the same key and the same binding."""
    key = ((0, "2026-10-01T00:00:05.000Z"), "r5")
    for remember in (2, 0):
        codec = CursorCodec(b"secret", remember=remember)
        oldest = codec.encode("fp", key)
        for i in range(3):
            codec.encode("fp", ((0, "2026"), f"x{i}"))
        assert len(codec._issued) == min(remember, 3)
        assert oldest not in codec._issued
        assert codec.decode(oldest, "fp") == key
        with pytest.raises(BadRequest, match="other filters or sort"):
            codec.decode(oldest, "other-fp")
    remembered = CursorCodec(b"secret")
    cursor = remembered.encode("fp", key)
    assert cursor in remembered._issued
    assert remembered.decode(cursor, "fp") == CursorCodec(b"secret").decode(cursor, "fp") == key


def test_a_page_costs_in_proportion_to_its_size() -> None:
    """The walk touches only the records it returns (plus one), not the whole partition: over
    the seed's bucket (records tested by `where`) and over a layer merged with it (records
    looked up by key)."""
    store = make_store(5000)
    index = store.index("things", ("workspace_id",), ("created_at",))
    touched = 0

    def where(record: object) -> bool:
        nonlocal touched
        touched += 1
        return True

    first = walk(store, "things", index, ("ws",), limit=20, after=None, descending=False)
    deep_after = index.sort_key(store.get("things", "r4000") or {})
    for descending in (False, True):
        touched = 0
        deep = walk(store, "things", index, ("ws",), limit=20, after=deep_after,
                    descending=descending, where=where)
        assert len(deep.items) == 20 and deep.next_key is not None
        assert touched <= 21  # the page and one look-ahead, out of 5000 records
    assert len(first.items) == 20

    store.delete("things", "r0001")  # the table leaves the seed: a merged walk
    original = store.rows

    class Counting(dict):
        def get(self, key, default=None):  # type: ignore[override]
            nonlocal touched
            touched += 1
            return super().get(key, default)

        def __getitem__(self, key):  # type: ignore[no-untyped-def]
            nonlocal touched
            touched += 1
            return super().__getitem__(key)

    counting = Counting(original("things"))
    store.rows = lambda table: counting  # type: ignore[method-assign]
    for descending in (False, True):
        touched = 0
        deep = walk(store, "things", index, ("ws",), limit=20, after=deep_after,
                    descending=descending, where=lambda record: True)
        assert len(deep.items) == 20 and deep.next_key is not None
        assert touched <= 21


def test_encoded_records_follow_writes_and_projections() -> None:
    """Page items are encoded once per record version and projection: a write (which
    replaces the record) is sent as written, and two projections of one record differ."""
    store = make_store(3)
    first = store.get("things", "r0001") or {}
    fields = ("id", "created_at")
    [whole] = encoded([first], None)
    assert encoded([first], None)[0] is whole  # remembered
    assert orjson.loads(orjson.dumps(whole)) == first
    assert orjson.loads(orjson.dumps(encoded([first], fields)[0])) == {
        "id": "r0001", "created_at": first["created_at"]}
    store.update("things", "r0001", {"created_at": "2027-01-01T00:00:00.000Z"})
    [after] = encoded([store.get("things", "r0001") or {}], fields)
    assert orjson.loads(orjson.dumps(after))["created_at"] == "2027-01-01T00:00:00.000Z"
    internal = {"id": "x", "_workspace_id": "ws"}
    assert orjson.loads(orjson.dumps(encoded([internal], None)[0])) == {"id": "x"}
    other_fields = ("id",)  # another projection: its own entry
    assert orjson.loads(orjson.dumps(encoded([first], other_fields)[0])) == {"id": "r0001"}


def test_seed_pages_are_encoded_by_position_until_a_write_leaves_the_seed() -> None:
    """A page of seed records is found by position in its seed bucket; once a write changes
    the table it is not, so the page sends what was written, never the seed's JSON of the
    position."""
    store = make_store(5)
    index = store.index("things", ("workspace_id",), ("created_at",))

    def sent(descending: bool = False) -> list[dict[str, object]]:
        page = walk(store, "things", index, ("ws",), limit=5, after=None, descending=descending)
        fragments = encoded(page.items, ("id", "created_at"), page)
        return [orjson.loads(orjson.dumps(f)) for f in fragments]

    assert index.seed_bucket(("ws",)) is not None
    before = sent()
    assert before == sent() == [{"id": r["id"], "created_at": r["created_at"]}
                                for r in walk(store, "things", index, ("ws",), limit=5,
                                              after=None, descending=False).items]
    assert sent(descending=True) == before[::-1]
    store.update("things", "r0001", {"created_at": "2025-01-01T00:00:00.000Z"})
    assert index.seed_bucket(("ws",)) is None
    assert {"id": "r0001", "created_at": "2025-01-01T00:00:00.000Z"} in sent()
    store.reset()
    assert sent() == before


def test_fingerprint_and_cursor_memos_agree_with_computing_afresh() -> None:
    codec = CursorCodec(b"secret")
    query = {"workspace_id": "ws", "status": "open", "limit": 5}
    fp = fingerprint("listThings", {}, query)
    assert fingerprint("listThings", {}, {**query, "cursor": "c", "limit": 9}) == fp
    assert fingerprint("listThings", {}, {**query, "status": "closed"}) != fp
    assert fingerprint("listThings", {}, {**query, "tags": ["a", "b"]}) != fp  # unhashable
    assert fingerprint("listOthers", {}, query) != fp
    key = ((0, "2026-10-01T00:00:00.000Z"), "r0001")
    cursor = codec.encode(fp, key)
    assert codec.encode(fp, key) == cursor == CursorCodec(b"secret").encode(fp, key)
    assert CursorCodec(b"secret", remember=0).decode(cursor, fp) == key
