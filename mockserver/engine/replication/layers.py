"""Serialized states for shared state (log.py): log checkpoints and snapshots in Redis.

Two things are written to Redis as a state's serialized form, both built on the store's
copy-on-write layers (store.py: `Store.layer()`/`restore()`, `Snapshot.of()`):

- a *checkpoint* is a base entry of a log (`k: checkpoint`) holding everything a worker's
  state derives from the entries before it: the dataset it serves (a key in Redis, or its
  initial one), the settings, the store's layer over its base with the id counter and
  timestamp floor, the clock, the fault rules with their counts and random draws, the next
  fault id and the uploaded bytes (as `f:<storageId>` fields, as write entries carry them).
  A worker appends one when its log has grown past `SharedLog.compact_after` entries since
  the last base, with a Lua script that also trims everything before it, only if the log
  still ends where the worker is (so the checkpoint is exactly the state at that point). A
  worker that starts later replays from the checkpoint, not from the beginning.
- a *snapshot* (`POST /__mock__/snapshots`) is the flattened delta of a state over its
  dataset's seed, its id counter, timestamp floor and settings (a frozen clock where it
  stood), and the dataset: what a fork needs on any worker. Journal, faults, windows and
  files are not part of it, as in memory (decision S5).

Nothing here talks to Redis but through the log it is given.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import orjson

from ..faults import FaultRule, Faults
from ..state import Settings, Shared, StateSnapshot
from ..storage import FileStore
from ..store import Snapshot, Store

__all__ = ["checkpoint_fields", "decode_snapshot", "encode_snapshot",
           "restore_checkpoint"]

def checkpoint_fields(state: Any) -> list[Any]:
    """The stream fields of a checkpoint of `state` (a `SharedMockState`: not imported, which
    imports this module) as it stands (call under its lock)."""
    store = state.store
    layer, sizes = store.layer()
    clock = state.clock
    faults = state.faults
    rng_version, rng_state, rng_gauss = faults._random.getstate()
    entry = {
        "k": "checkpoint", "after": state.log.last_id, "dataset": state._dataset_key,
        "settings": dataclasses.asdict(state.settings),
        "layer": layer, "sizes": sizes, "c": store._counter, "m": store._last_ms,
        "clock": {"frozen_ms": clock._frozen_ms, "offset_ms": clock._offset_ms},
        "faults": [{k: v for k, v in dataclasses.asdict(rule).items() if k != "_pattern"}
                   for rule in faults.rules],
        "random": [rng_version, list(rng_state), rng_gauss],
        "fault_next": state._fault_next,
    }
    fields: list[Any] = ["d", orjson.dumps(entry)]
    files = state.files
    with files._lock:
        kept = list(files._files.items())
    for storage_id, content in kept:
        fields += [f"f:{storage_id}", content]
    return fields


def restore_checkpoint(state: Any, entry: dict[str, Any],
                       fields: dict[bytes, bytes]) -> None:
    """Make `state` what the checkpoint says (a worker that applied every entry before it is
    there already: nothing to do)."""
    if entry["after"] == state.log.last_id:
        return
    state._use_dataset(entry["dataset"])
    settings = Settings(**entry["settings"])
    state.settings = settings
    store = state.store
    store.seed = settings.seed
    Store.restore(store, entry["layer"], entry["sizes"], entry["c"], entry["m"])
    clock = state.clock
    with clock._lock:
        clock._frozen_ms = entry["clock"]["frozen_ms"]
        clock._offset_ms = entry["clock"]["offset_ms"]
    faults = state.faults
    Faults.clear(faults)
    rules = [FaultRule(**spec) for spec in entry["faults"]]
    version, internal, gauss = entry["random"]
    with faults._lock:
        faults.rules = rules
        faults._random.setstate((version, tuple(internal), gauss))
    state._fault_next = entry["fault_next"]
    FileStore.clear(state.files)
    for name, value in fields.items():
        if name.startswith(b"f:"):
            FileStore.put(state.files, name[2:].decode(), value)
    state.cache.clear()


def encode_snapshot(snap: StateSnapshot, dataset: str | None) -> bytes:
    """A snapshot as stored in Redis: its delta over the seed of `dataset` (a dataset key in
    Redis; None: the namespace's fixtures), id counter, timestamp floor and settings."""
    delta = snap.base.delta
    return orjson.dumps({
        "records": delta.records if delta is not None else {},
        "sizes": delta.sizes if delta is not None else {},
        "c": snap.base.counter, "m": snap.base.last_ms,
        "settings": dataclasses.asdict(snap.settings), "dataset": dataset,
        "source": snap.source,
    })


def decode_snapshot(name: str, blob: bytes, shared: Shared) -> StateSnapshot:
    """The snapshot `encode_snapshot` stored, over `shared` (the dataset it names)."""
    data = orjson.loads(blob)
    base = Snapshot.of(shared.seed, data["records"], data["sizes"], data["c"], data["m"])
    return StateSnapshot(name, shared, base, Settings(**data["settings"]), data["source"])


def snapshot_dataset(blob: bytes) -> str | None:
    """The dataset key a stored snapshot is over."""
    dataset: str | None = orjson.loads(blob)["dataset"]
    return dataset

