from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterator

import pytest

from mockserver.clock import Clock
from mockserver.store import Store


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
