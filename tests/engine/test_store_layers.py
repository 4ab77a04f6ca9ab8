"""Copy-on-write layers on a large generated dataset: arbitrary creates, updates and deletes,
then `reset()` restores exactly the seed state (every record and every index walk, both
directions, whole and page by page), and forks over a snapshot stay isolated from each other
and from the store they were taken from. A model (plain dicts) says what each store holds."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mockserver.data.fixtures import load_dataset
from mockserver.data.generate import generate
from mockserver.data.tables import TABLES
from mockserver.engine.clock import Clock
from mockserver.engine.store import Seed, Store
from mockserver.openapi.spec import load_spec

# (table, partition fields, order fields): the indexes the lists walk, one list-partitioned.
INDEXES = [
    ("contacts", ("workspace_id",), ("last_message_at",)),
    ("conversations", ("workspace_id",), ("follow_up_at",)),
    ("conversations", ("workspace_id", "status"), ("last_message_at",)),
    ("tickets", ("conversation_id",), ("created_at",)),
    ("users", ("_workspace_ids",), ("email",)),
]
WRITTEN = sorted({t for t, _, _ in INDEXES})
SORT_FIELDS = {"contacts": "last_message_at", "conversations": "follow_up_at",
               "tickets": "created_at", "users": "email"}
Model = dict[str, dict[str, dict[str, Any]]]


@pytest.fixture(scope="module")
def seed(tmp_path_factory: pytest.TempPathFactory) -> Seed:
    out: Path = tmp_path_factory.mktemp("big")
    generate(2000, 1, out)
    dataset = load_dataset([out], spec=load_spec(None), validate=False)
    assert len(dataset.tables["contacts"]) == 2000
    return Seed(dataset.tables, {name: t.key for name, t in TABLES.items()})


def _value(v: Any) -> tuple[int, Any]:
    return (1, "") if v is None else (0, v)


def _partitions(record: dict[str, Any], fields: tuple[str, ...]) -> Iterator[tuple[Any, ...]]:
    parts: list[tuple[Any, ...]] = [()]
    for f in fields:
        v = record.get(f)
        parts = [(*p, x) for p in parts for x in (v if isinstance(v, list) else [v])]
    return iter(parts)


def expected_walks(model: Model) -> dict[Any, list[str]]:
    """Every partition of every index, in ascending order, from the model alone."""
    walks: dict[Any, list[tuple[Any, ...]]] = {}
    for table, partition, order in INDEXES:
        for key, record in model[table].items():
            sort = (*(_value(record.get(f)) for f in order), key)
            for part in _partitions(record, partition):
                walks.setdefault((table, partition, order, part), []).append(sort)
    return {k: [s[-1] for s in sorted(v)] for k, v in walks.items()}


def check(store: Store, model: Model, parts: set[Any]) -> None:
    """Records, counts, and the walks of these partitions (whole and paged, both ways)."""
    walks = _walks(model)
    for table in WRITTEN:
        assert dict(store.rows(table)) == model[table]
        assert store.count(table) == len(model[table]) == len(list(store.all(table)))
    for table, partition, order, part in parts:
        keys = walks.get((table, partition, order, part), [])
        index = store.index(table, partition, order)
        assert [k[-1] for k in index.keys(part, after=None, descending=False)] == keys
        assert [k[-1] for k in index.keys(part, after=None, descending=True)] == keys[::-1]
        for descending in (False, True):
            paged: list[str] = []
            after = None
            while True:
                taken = index.take(part, after=after, descending=descending, count=7)
                paged += [k[-1] for k in taken]
                if len(taken) < 7:
                    break
                after = taken[-1]
            assert paged == (keys[::-1] if descending else keys)


_MEMO: dict[int, tuple[Model, dict[Any, list[str]]]] = {}


def _walks(model: Model) -> dict[Any, list[str]]:
    """expected_walks, once per model object (the models are not changed once checked)."""
    found = _MEMO.get(id(model))
    if found is None or found[0] is not model:
        found = _MEMO[id(model)] = (model, expected_walks(model))
    return found[1]


def changed(*models: Model) -> set[Any]:
    """The partitions whose walks differ between any of these models (all the others are
    the same in each), plus one that none of them touched."""
    walks = [_walks(m) for m in models]
    every = set().union(*walks)
    found = {k for k in every if len({tuple(w.get(k, [])) for w in walks}) > 1}
    return found | {min(every - found, key=repr)} if every - found else found


INITIAL: dict[int, Model] = {}

op = st.tuples(
    st.sampled_from(["create", "update", "delete", "move"]),
    st.sampled_from(WRITTEN),
    st.integers(min_value=0, max_value=10**6),
    st.sampled_from([None, "2026-01-01T00:00:00.000Z", "2026-06-01T00:00:00.000Z",
                     "2027-01-01T00:00:00.000Z"]),
)


def apply(store: Store, model: Model, ops: list[tuple[str, str, int, str | None]]) -> None:
    for action, table, pick, value in ops:
        rows = model[table]
        keys = sorted(rows)
        key_field = store.key_fields[table]
        sort_field = SORT_FIELDS[table]
        if action == "create" or not keys:
            template = dict(rows[keys[pick % len(keys)]]) if keys else {}
            if not template:
                continue
            key = f"new{pick}"
            record = {**template, key_field: key, sort_field: value or template[sort_field]}
            store.insert(table, record)
            rows[key] = record
            continue
        key = keys[pick % len(keys)]
        if action == "delete":
            assert store.delete(table, key) == rows.pop(key)
        elif action == "update":
            changes = {sort_field: value if table != "users" else f"u{pick}@x.test"}
            rows[key] = {**rows[key], **changes}
            assert store.update(table, key, changes) == rows[key]
        else:  # move to another partition
            field = {"users": "_workspace_ids", "tickets": "conversation_id"}.get(
                table, "workspace_id")
            other = rows[keys[(pick // 7) % len(keys)]][field]
            rows[key] = {**rows[key], field: other}
            store.update(table, key, {field: other})


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                  HealthCheck.too_slow])
@given(first=st.lists(op, max_size=40), second=st.lists(op, max_size=40),
       third=st.lists(op, max_size=20))
def test_reset_restores_the_seed_and_forks_stay_isolated(
    seed: Seed, first: list[Any], second: list[Any], third: list[Any]
) -> None:
    initial = INITIAL.setdefault(
        id(seed), {t: {k: dict(r) for k, r in seed.tables[t].items()} for t in WRITTEN})
    clock = Clock(frozen_at="2026-11-01T00:00:00.000Z")
    store = Store(seed, clock=clock)
    for ident in INDEXES:  # the seed's indexes exist before any write (as after a warm-up)
        store.index(*ident).take((), after=None, descending=False, count=1)

    model: Model = {t: dict(rows) for t, rows in initial.items()}
    apply(store, model, first)
    check(store, model, changed(model, initial))

    snap = store.snapshot()
    at_snapshot: Model = {t: dict(rows) for t, rows in model.items()}
    a, b = Store(snap, clock=clock), Store(snap, clock=clock)
    model_a: Model = {t: dict(rows) for t, rows in model.items()}
    apply(a, model_a, second)
    model_b: Model = {t: dict(rows) for t, rows in model.items()}
    apply(b, model_b, third)
    apply(store, model, third[::-1])  # the original store moves on on its own
    everything = changed(initial, at_snapshot, model, model_a, model_b)
    check(a, model_a, everything)
    check(b, model_b, everything)
    a.reset()  # back to the snapshot, not to the seed
    check(a, at_snapshot, everything)
    check(b, model_b, everything)  # a's reset leaves its sibling alone

    store.reset()
    check(store, initial, everything)
    for key in [k for k in _MEMO if k != id(initial)]:
        del _MEMO[key]
    assert {t: dict(seed.tables[t]) for t in WRITTEN} == initial  # the seed was never written
