"""Every change of a mock is a command (engine/commands.py) that `MockState.apply` applies in
one place; the store records a transaction's changes itself. Checked in memory, without
Redis: a state exported and applied to a fresh one is the same state; a transaction undone
leaves the store as it was, and applied elsewhere gives the same records and ids; every
command survives the log's encoding (replication/codec.py) unchanged."""

from __future__ import annotations

import pytest

from mockserver.data.fixtures import Dataset
from mockserver.engine.app import MockApp
from mockserver.engine.commands import (
    AddFault,
    Checkpoint,
    ClearFaults,
    LoadDataset,
    MoveClock,
    Reset,
    TakeFault,
    Write,
)
from mockserver.engine.replication.codec import decode, encode
from mockserver.engine.state import MockState, Settings

FROZEN = "2026-11-01T12:00:00.000Z"


@pytest.fixture(scope="module")
def dataset() -> Dataset:
    return MockApp().state.dataset


def _fingerprint(state: MockState) -> tuple[object, ...]:
    store = state.store
    return (store.export(), state.clock.export(), state.faults.export(),
            state.files.export(), state.settings, state.dataset_key)


def _busy(state: MockState) -> None:
    """Changes of every kind: records, ids, the clock, faults with draws and hits, files."""
    store = state.store
    ticket = next(iter(store.rows("tickets")))
    store.update("tickets", ticket, {"subject": "changed"})
    store.insert("tickets", {**(store.get("tickets", ticket) or {}), "id": store.new_id("tk")})
    state.advance_clock(90)
    state.add_fault(path="/v1/models", status=503, probability=0.5, count=None)
    state.add_fault(method="POST", status=500)
    for _ in range(5):
        state.take_fault("GET", "/v1/models")
    state.files.put("st_1", b"bytes of a file")


def test_a_state_exported_and_applied_to_a_fresh_one_is_the_same_state(dataset: Dataset) -> None:
    state = MockState(dataset, Settings(frozen_clock=FROZEN, seed=3))
    _busy(state)
    fresh = MockState(dataset, Settings())
    fresh.apply(state.export())
    assert _fingerprint(fresh) == _fingerprint(state)
    # ... and goes on alike: the same next id, the same next draw of a probability fault.
    assert fresh.store.new_id("x") == state.store.new_id("x")
    draws = [(fresh.take_fault("GET", "/v1/models") is None,
              state.take_fault("GET", "/v1/models") is None) for _ in range(20)]
    assert all(a == b for a, b in draws)


def test_a_transaction_undone_leaves_the_store_as_it_was(dataset: Dataset) -> None:
    state = MockState(dataset, Settings(frozen_clock=FROZEN))
    store = state.store

    def seen() -> tuple[object, ...]:  # what reads see (the layer may keep an old record)
        return (dict(store.rows("tickets")), store.count("tickets"), store.export()[2:])

    before = seen()
    store.begin()
    ticket = next(iter(store.rows("tickets")))
    store.update("tickets", ticket, {"subject": "one"})
    store.update("tickets", ticket, {"subject": "two"})
    store.delete("tickets", ticket)
    store.insert("tickets", {"id": store.new_id("tk"), "subject": "new",
                             "created_at": store.now()})
    changes = store.end()
    assert changes is not None and changes.records[("tickets", ticket)] is None
    store.undo(changes)
    assert seen() == before
    assert store.end() is None  # nothing open, nothing changed


def test_a_write_applied_elsewhere_gives_the_same_records_and_ids(dataset: Dataset) -> None:
    writer = MockState(dataset, Settings(frozen_clock=FROZEN))
    replica = MockState(dataset, Settings(frozen_clock=FROZEN))
    store = writer.store
    store.begin()
    ticket = next(iter(store.rows("tickets")))
    store.update("tickets", ticket, {"subject": "written"})
    store.delete("tickets", next(k for k in store.rows("tickets") if k != ticket))
    store.new_id("tk")
    changes = store.end()
    assert changes is not None
    write = Write(tuple((t, k, r) for (t, k), r in changes.records.items()), *changes.until)
    replica.apply(write)
    assert replica.store.export() == writer.store.export()
    assert replica.store.new_id("tk") == writer.store.new_id("tk")


def test_reset_is_one_command_that_keeps_fault_ids_going(dataset: Dataset) -> None:
    state = MockState(dataset, Settings(frozen_clock=FROZEN))
    _busy(state)
    state.record_request((0, "GET", "/v1/models", b"", (), None, 200, b"{}", 1.0, None, None,
                          (), None))
    state.reset(seed=7)
    assert state.store.changes == 0 and not state.faults.rules and len(state.journal) == 0
    assert state.settings.seed == 7 and state.files.size == 0
    assert state.add_fault(status=500).id == 3  # ids go on across a reset


COMMANDS = [
    Reset({"seed": 1, "rate_limit": 5, "frozen_clock": None, "workspace_limits": True},
          "mock:{x}:dataset:ab", 4),
    LoadDataset("mock:{x}:dataset:cd"),
    MoveClock(advance_ms=1500),
    MoveClock(target_ms=1_800_000_000_000, wall_ms=1_700_000_000_000),
    AddFault({"path": "/v1/models", "status": 503}),
    TakeFault("GET", "/v1/models"),
    ClearFaults(),
    Write((("tickets", "tk_1", {"id": "tk_1"}), ("tickets", "tk_2", None)), 12, 99,
          {"st_1": b"\x00bytes"}),
]


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: type(c).__name__)
def test_every_command_survives_the_logs_encoding(command: object) -> None:
    fields = encode(command)  # type: ignore[arg-type]
    raw = [x if isinstance(x, bytes) else str(x).encode() for x in fields]
    assert decode(raw) == command


def test_a_checkpoint_survives_the_logs_encoding(dataset: Dataset) -> None:
    state = MockState(dataset, Settings(frozen_clock=FROZEN))
    _busy(state)
    checkpoint = state.export("12-0")
    raw = [x if isinstance(x, bytes) else str(x).encode() for x in encode(checkpoint)]
    decoded = decode(raw)
    fresh = MockState(dataset, Settings())
    fresh.apply(decoded)
    assert _fingerprint(fresh) == _fingerprint(state)
    assert isinstance(decoded, Checkpoint) and decoded.after == "12-0"
    assert (decoded.clock, decoded.faults, decoded.files) == (
        checkpoint.clock, checkpoint.faults, checkpoint.files)
