"""Commands (engine/commands.py) as entries of a Redis stream, and back.

An entry's field `d` is the command as JSON (`k` names its kind); bytes travel beside it as
fields of their own, `f:<storageId>` (uploaded files of a write or a checkpoint), so they
never pass through JSON.
"""

from __future__ import annotations

from typing import Any

import orjson

from ..commands import (
    AddFault,
    Checkpoint,
    ClearFaults,
    Command,
    LoadDataset,
    MoveClock,
    Reset,
    TakeFault,
    Write,
)

__all__ = ["decode", "encode"]


def _files(files: Any) -> list[Any]:
    return [x for storage_id, content in files for x in (f"f:{storage_id}", content)]


def encode(command: Command) -> list[Any]:
    """The stream fields of `command`."""
    match command:
        case Write():
            entry: dict[str, Any] = {"k": "w", "o": [list(r) for r in command.records],
                                     "c": command.counter, "m": command.last_ms}
            return ["d", orjson.dumps(entry), *_files(command.files.items())]
        case Reset():
            entry = {"k": "reset", "settings": command.settings, "dataset": command.dataset,
                     "fault_id": command.fault_next}
        case LoadDataset():
            entry = {"k": "load", "dataset": command.dataset}
        case MoveClock():
            entry = {"k": "clock", "advance_ms": command.advance_ms,
                     "target_ms": command.target_ms, "wall_ms": command.wall_ms,
                     "frozen": command.frozen}
        case AddFault():
            entry = {"k": "fault_add", "spec": command.spec}
        case TakeFault():
            entry = {"k": "fault_take", "method": command.method, "path": command.path}
        case ClearFaults():
            entry = {"k": "fault_clear"}
        case Checkpoint():
            layer, sizes, counter, last_ms = command.store
            entry = {"k": "checkpoint", "after": command.after, "dataset": command.dataset,
                     "settings": command.settings, "layer": layer, "sizes": sizes,
                     "c": counter, "m": last_ms, "clock": list(command.clock),
                     "faults": command.faults}
            return ["d", orjson.dumps(entry), *_files(command.files)]
        case _:
            raise TypeError(f"not a command: {command!r}")
    return ["d", orjson.dumps(entry)]


def decode(raw_fields: list[bytes]) -> Command:
    """The command of an entry's fields (as XRANGE gives them: name, value, ...);
    ValueError for an entry of no known kind."""
    fields = dict(zip(raw_fields[::2], raw_fields[1::2], strict=True))
    entry = orjson.loads(fields[b"d"])
    files = [(name[2:].decode(), value) for name, value in fields.items()
             if name.startswith(b"f:")]
    match entry["k"]:
        case "w":
            return Write(tuple((t, k, r) for t, k, r in entry["o"]), entry["c"], entry["m"],
                         dict(files))
        case "reset":
            return Reset(entry["settings"], entry["dataset"], entry["fault_id"])
        case "load":
            return LoadDataset(entry["dataset"])
        case "clock":
            return MoveClock(entry.get("advance_ms"), entry.get("target_ms"),
                             entry.get("wall_ms"), entry.get("frozen"))
        case "fault_add":
            return AddFault(entry["spec"])
        case "fault_take":
            return TakeFault(entry["method"], entry["path"])
        case "fault_clear":
            return ClearFaults()
        case "checkpoint":
            return Checkpoint(entry["after"], entry["dataset"], entry["settings"],
                              (entry["layer"], entry["sizes"], entry["c"], entry["m"]),
                              tuple(entry["clock"]), entry["faults"], tuple(files))
    raise ValueError(f"unknown entry kind {entry['k']!r}")
