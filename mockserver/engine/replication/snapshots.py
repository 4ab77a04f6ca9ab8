"""Snapshots of a shared state as Redis stores them (sessions.py).

A *snapshot* (`POST /__mock__/snapshots`) is the flattened delta of a state over its dataset's
seed, its id counter, timestamp floor and settings (a frozen clock where it stood), and the
dataset: what a fork needs on any worker. Journal, faults, windows and files are not part of
it, as in memory (decision S5). (A log's *checkpoint* is a command, `commands.Checkpoint`,
which `MockState.export` builds and `apply` restores; codec.py writes it.)
"""

from __future__ import annotations

import dataclasses

import orjson

from ..state import Settings, Shared, StateSnapshot
from ..store import Snapshot

__all__ = ["decode_snapshot", "encode_snapshot", "snapshot_dataset"]


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

