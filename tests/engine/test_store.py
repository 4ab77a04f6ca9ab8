from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from mockserver.engine.clock import Clock
from mockserver.engine.store import Seed, Store


def make_store() -> Store:
    seed = {"things": {"a": {"id": "a", "workspace_id": "ws", "n": 1}}}
    return Store(seed, {"things": "id"}, clock=Clock(frozen_at="2026-11-01T00:00:00.000Z"), seed=7)


def test_reset_returns_to_the_seeded_state() -> None:
    store = make_store()
    store.update("things", "a", {"n": 2})
    store.insert("things", {"id": "b", "workspace_id": "ws", "n": 3})
    store.delete("things", "a")
    store.reset()
    assert dict(store.rows("things")) == {"a": {"id": "a", "workspace_id": "ws", "n": 1}}


def test_records_are_replaced_not_mutated() -> None:
    store = make_store()
    before = store.get("things", "a")
    after = store.update("things", "a", {"n": 5})
    assert before == {"id": "a", "workspace_id": "ws", "n": 1}
    assert after["n"] == 5 and store.get("things", "a") is after


def test_ids_are_deterministic_per_seed_and_reset() -> None:
    first = [make_store().new_id("xd") for _ in range(1)]
    store = make_store()
    ids = [store.new_id("xd"), store.new_id("xd")]
    store.reset()
    assert [store.new_id("xd"), store.new_id("xd")] == ids
    assert ids[0] == first[0] and ids[0] != ids[1]
    assert all(len(i) == 32 and i.startswith("xd") for i in ids)
    assert len(store.new_hex_id()) == 24


def test_timestamps_strictly_increase_on_a_frozen_clock() -> None:
    store = make_store()
    stamps = [store.now() for _ in range(5)]
    assert stamps == sorted(stamps) and len(set(stamps)) == 5
    assert stamps[0] == "2026-11-01T00:00:00.000Z"


def test_indexes_follow_writes() -> None:
    store = make_store()
    index = store.index("things", ("workspace_id",), ("n",))
    store.insert("things", {"id": "b", "workspace_id": "ws", "n": 0})
    store.update("things", "a", {"workspace_id": "other"})
    assert [k[-1] for k in index.keys(("ws",), after=None, descending=False)] == ["b"]
    assert [k[-1] for k in index.keys(("other",), after=None, descending=False)] == ["a"]


def test_list_valued_partition_fields_index_each_element() -> None:
    store = Store({"users": {"u": {"id": "u", "_ws": ["a", "b"], "email": "x"}}}, {"users": "id"},
                  clock=Clock())
    index = store.index("users", ("_ws",), ("email",))
    assert list(index.keys(("a",), after=None, descending=False)) == [((0, "x"), "u")]
    assert list(index.keys(("b",), after=None, descending=False)) == [((0, "x"), "u")]


@pytest.fixture
def fine_switching() -> Iterator[None]:
    # Threads switch after a microsecond instead of 5 ms, so they interleave inside the store's
    # methods: what the store's own lock must make atomic is really contended.
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        yield
    finally:
        sys.setswitchinterval(before)


def _in_threads(count: int, work: Callable[[int], None]) -> None:
    start = threading.Barrier(count, timeout=30)
    errors: list[BaseException] = []

    def run(i: int) -> None:
        start.wait()
        try:
            work(i)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[:3]


def test_concurrent_writers_get_distinct_ids_and_instants_and_consistent_indexes(
        fine_switching: None) -> None:
    # The store's own methods, called from several threads with no lock taken by the caller.
    store = make_store()
    index = store.index("things", ("workspace_id",), ("at",))
    made: list[tuple[str, str]] = []

    def write(i: int) -> None:
        for _ in range(1000):
            key, at = store.new_id("t_"), store.now()
            store.insert("things", {"id": key, "workspace_id": "ws", "n": i, "at": at})
            made.append((key, at))

    _in_threads(8, write)
    assert len({key for key, _ in made}) == len(made) == 8 * 1000, "an id was issued twice"
    assert len({at for _, at in made}) == len(made), "two writes got the same instant"
    listed = [k[-1] for k in index.keys(("ws",), after=None, descending=False)]
    assert sorted(listed) == sorted({"a", *(key for key, _ in made)})
    assert store.count("things") == 1 + len(made)


def test_concurrent_updates_lose_nothing(fine_switching: None) -> None:
    store = make_store()

    def bump() -> None:
        for _ in range(200):
            with store.lock:
                current = store.get("things", "a") or {}
                store.update("things", "a", {"n": current["n"] + 1})

    threads = [threading.Thread(target=bump) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert (store.get("things", "a") or {})["n"] == 1 + 8 * 200


# -- layers: Seed / Snapshot / Store(base) (STORE_CONTRACT) ---------------------------------

def _seed() -> Seed:
    rows = {f"r{i}": {"id": f"r{i}", "workspace_id": "ws", "n": i} for i in range(10)}
    return Seed({"things": rows}, {"things": "id"})


def _walk(store: Store, descending: bool = False) -> list[str]:
    index = store.index("things", ("workspace_id",), ("n",))
    return [k[-1] for k in index.keys(("ws",), after=None, descending=descending)]


def _state(store: Store) -> tuple[dict[str, Any], list[str], list[str], int]:
    return dict(store.rows("things")), _walk(store), _walk(store, True), store.count("things")


def test_reset_returns_to_the_base_seed() -> None:
    seed = _seed()
    store = Store(seed, clock=Clock(frozen_at="2026-11-01T00:00:00.000Z"))
    before = _state(store)
    store.insert("things", {"id": "x", "workspace_id": "ws", "n": -1})
    store.update("things", "r3", {"n": 100})
    store.delete("things", "r5")
    assert _walk(store) == ["x", *[f"r{i}" for i in (0, 1, 2, 4, 6, 7, 8, 9)], "r3"]
    assert store.count("things") == 10 and "r5" not in store.rows("things")
    store.reset()
    assert _state(store) == before
    assert seed.tables["things"]["r3"]["n"] == 3 and "x" not in seed.tables["things"]


def test_snapshot_then_fork_and_reset_returns_to_the_snapshot() -> None:
    store = Store(_seed(), clock=Clock(frozen_at="2026-11-01T00:00:00.000Z"))
    store.update("things", "r0", {"n": 50})
    store.delete("things", "r1")
    store.insert("things", {"id": "y", "workspace_id": "ws", "n": 4})
    at_snapshot = _state(store)
    snap = store.snapshot()
    store.update("things", "r2", {"n": 70})  # after the snapshot: not in it
    fork = Store(snap, clock=Clock(frozen_at="2026-11-01T00:00:00.000Z"))
    assert _state(fork) == at_snapshot
    fork.delete("things", "y")
    fork.update("things", "r0", {"n": -5})
    fork.insert("things", {"id": "z", "workspace_id": "ws", "n": 1})
    assert _walk(fork)[:3] == ["r0", "z", "r2"]
    fork.reset()
    assert _state(fork) == at_snapshot
    # a snapshot of a fork (flattened) and its own fork
    fork.delete("things", "r9")
    second = Store(fork.snapshot(), clock=Clock())
    assert "r9" not in second.rows("things") and "y" in second.rows("things")
    assert second.count("things") == 9


def test_forks_are_isolated_from_each_other_and_from_the_base() -> None:
    seed = _seed()
    a = Store(seed, clock=Clock())
    b = Store(seed, clock=Clock())
    a.update("things", "r4", {"n": 99})
    a.insert("things", {"id": "only-a", "workspace_id": "ws", "n": 0})
    b.delete("things", "r4")
    assert (a.get("things", "r4") or {})["n"] == 99 and b.get("things", "r4") is None
    assert "only-a" not in b.rows("things") and "only-a" in a.rows("things")
    assert Store(seed, clock=Clock()).get("things", "r4") == {"id": "r4", "workspace_id": "ws",
                                                              "n": 4}
    snap = a.snapshot()
    f1, f2 = Store(snap, clock=Clock()), Store(snap, clock=Clock())
    f1.delete("things", "only-a")
    assert "only-a" in f2.rows("things") and "only-a" in a.rows("things")
    a.update("things", "r4", {"n": 1})  # the snapshot does not follow its store
    assert (f2.get("things", "r4") or {})["n"] == 99


def test_ids_and_timestamps_continue_the_base_sequence() -> None:
    def run(snapshot_between: bool) -> list[str]:
        store = Store(_seed(), clock=Clock(frozen_at="2026-11-01T00:00:00.000Z"), seed=3)
        out = [store.new_id("a"), store.now()]
        if snapshot_between:
            store = Store(store.snapshot(), clock=Clock(frozen_at="2026-11-01T00:00:00.000Z"),
                          seed=3)
        out += [store.new_id("a"), store.new_hex_id(), store.now()]
        return out

    assert run(True) == run(False)
    store = Store(_seed(), clock=Clock(frozen_at="2026-11-01T00:00:00.000Z"), seed=3)
    store.new_id()
    fork = Store(store.snapshot(), clock=Clock(frozen_at="2026-11-01T00:00:00.000Z"), seed=3)
    first = fork.new_id()
    fork.reset()
    assert fork.new_id() == first  # the reset returns to the snapshot's counter


def test_versions_never_repeat_across_resets_and_stores() -> None:
    seed = _seed()
    a, b = Store(seed, clock=Clock()), Store(seed, clock=Clock())
    seen = {a.version, b.version}
    for store in (a, b, a):
        store.insert("things", {"id": "v", "workspace_id": "ws", "n": 0})
        seen.add(store.version)
        store.reset()
        seen.add(store.version)
    assert len(seen) == 8


def test_take_merges_in_both_directions_after_a_cursor() -> None:
    store = Store(_seed(), clock=Clock())
    store.update("things", "r2", {"n": 7})  # ties with r7 on n: after it by key ("new" < "r3" too)
    store.delete("things", "r5")
    store.insert("things", {"id": "new", "workspace_id": "ws", "n": 3})
    index = store.index("things", ("workspace_id",), ("n",))
    walk = _walk(store)
    assert walk == ["r0", "r1", "new", "r3", "r4", "r6", "r2", "r7", "r8", "r9"]
    keys = list(index.keys(("ws",), after=None, descending=False))
    for i, after in enumerate(keys):
        assert [k[-1] for k in index.take(("ws",), after=after, descending=False, count=3)] \
            == walk[i + 1:i + 4]
        assert [k[-1] for k in index.take(("ws",), after=after, descending=True, count=3)] \
            == walk[:i][::-1][:3]
