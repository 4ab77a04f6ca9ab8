"""Delta debugging (Zeller and Hildebrandt's ddmin): the smallest failing sub-list of a plan.

`ddmin(items, fails)` takes a list on which `fails` is true and returns a sub-list (order
kept) on which it is still true and which is 1-minimal: removing any one item makes `fails`
false. It tries the list in ever finer chunks, first each chunk alone, then each chunk's
complement, and restarts coarse whenever one of them still fails. A pure function: `fails`
is the only way it learns anything, and each distinct sub-list is asked about at most once.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

__all__ = ["ddmin"]

T = TypeVar("T")


def _chunks(indexes: list[int], n: int) -> list[list[int]]:
    """`indexes` cut into `n` consecutive chunks of (nearly) equal size, none empty."""
    size, extra = divmod(len(indexes), n)
    out, start = [], 0
    for i in range(n):
        end = start + size + (1 if i < extra else 0)
        out.append(indexes[start:end])
        start = end
    return [chunk for chunk in out if chunk]


def ddmin(items: Sequence[T], fails: Callable[[list[T]], bool]) -> list[T]:
    """A 1-minimal sub-list of `items` on which `fails` is true (see the module docstring).

    `fails(items)` is assumed true and is not asked again; `fails([])` is never asked (the
    caller knows the empty list passes). Items may be unhashable (dicts): sub-lists are
    remembered by position.
    """
    seen: dict[tuple[int, ...], bool] = {tuple(range(len(items))): True}

    def test(indexes: list[int]) -> bool:
        key = tuple(indexes)
        if key not in seen:
            seen[key] = fails([items[i] for i in indexes])
        return seen[key]

    current = list(range(len(items)))
    n = 2
    while len(current) >= 2:
        chunks = _chunks(current, n)
        reduced = False
        for chunk in chunks:  # a chunk alone still fails: keep only it
            if test(chunk):
                current, n, reduced = chunk, 2, True
                break
        if not reduced and len(chunks) > 2:  # (with two chunks, a complement is a chunk)
            for chunk in chunks:  # a chunk's complement still fails: drop the chunk
                dropped = set(chunk)
                complement = [i for i in current if i not in dropped]
                if test(complement):
                    current, n, reduced = complement, max(n - 1, 2), True
                    break
        if not reduced:
            if n >= len(current):  # single items, none removable: 1-minimal
                break
            n = min(2 * n, len(current))
    return [items[i] for i in current]
