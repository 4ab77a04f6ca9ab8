from __future__ import annotations

import threading

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


def test_concurrent_updates_lose_nothing() -> None:
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
