"""Every change of a mock's state as a value: the commands `MockState.apply` applies.

A state's methods (reset, load a dataset, move the clock, add/take/clear faults) each build
one command and submit it (`MockState.submit`); a request's writes are one `Write`, what the
store recorded in its transaction. In memory a command is applied at once. A state shared
through Redis (replication/) appends it to the namespace's log instead, and every worker
applies it when it catches up, in log order, with the same `apply`: so a command holds
everything that applying it needs (ids, the wall time of a clock move), nothing that differs
between workers.

A *base* command (a reset, a checkpoint) stands for everything before it: a log is trimmed
there.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from .store import Record

__all__ = ["AddFault", "Checkpoint", "ClearFaults", "Command", "LoadDataset", "MoveClock",
           "Reset", "TakeFault", "Write"]


@dataclass(frozen=True, slots=True)
class Command:
    """One change of a mock's state."""

    base: ClassVar[bool] = False


@dataclass(frozen=True, slots=True)
class Reset(Command):
    """Back to the dataset `dataset` (a key; the state's own when it is the one served) with
    these settings (a `Settings` as a dict); fault ids go on from `fault_next`."""

    base: ClassVar[bool] = True
    settings: dict[str, Any]
    dataset: str | None
    fault_next: int


@dataclass(frozen=True, slots=True)
class LoadDataset(Command):
    """Serve another dataset (`dataset`: its key; `shared`, the `Shared` when the submitter
    has it: it is not part of the value)."""

    dataset: str | None
    shared: Any = field(default=None, compare=False)


@dataclass(frozen=True, slots=True)
class MoveClock(Command):
    """The clock moved by `advance_ms`, or to `target_ms` asked at wall time `wall_ms`; then
    frozen (`frozen=True`) or running on (`False`) from where it stands (None: as it was)."""

    advance_ms: int | None = None
    target_ms: int | None = None
    wall_ms: int | None = None
    frozen: bool | None = None


@dataclass(frozen=True, slots=True)
class AddFault(Command):
    """A fault rule added (`spec`: `FaultRule`'s fields but its id, which the state gives)."""

    spec: dict[str, Any]


@dataclass(frozen=True, slots=True)
class TakeFault(Command):
    """A request met the fault rules: the rule that fires (its count consumed), or none."""

    method: str
    path: str


@dataclass(frozen=True, slots=True)
class ClearFaults(Command):
    """Every fault rule removed (ids go on)."""


@dataclass(frozen=True, slots=True)
class Write(Command):
    """What one request (or helper) wrote: records upserted (None: deleted) by table and key,
    the id counter and timestamp floor after it, and uploaded bytes by storageId."""

    records: tuple[tuple[str, str, Record | None], ...]
    counter: int
    last_ms: int
    files: dict[str, bytes] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Checkpoint(Command):
    """Everything a state derives from the commands before it (replication's compaction):
    the dataset served, settings, the store's layer, the clock, the fault rules, the files.
    `after`: the log entry it was taken at (a worker already there has nothing to do)."""

    base: ClassVar[bool] = True
    after: str
    dataset: str | None
    settings: dict[str, Any]
    store: tuple[Any, ...]  # Store.export()
    clock: tuple[int | None, int]  # Clock.export()
    faults: dict[str, Any]  # Faults.export()
    files: tuple[tuple[str, bytes], ...] = ()
