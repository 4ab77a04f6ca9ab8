"""Answers to repeated reads, kept while nothing they depend on has changed.

A GET is a function of the store's contents, the caller and the request line, unless its
handler reads the clock (a date range ending "now") or writes. So the pipeline keeps the
answer of a GET whose handler did neither, keyed by (handler, path, query string, caller) and
tagged with the store's version, and sends it again while the version stands. Any write,
reset or load moves the version, and then every entry is dropped at once.

Authentication, the header limits and rate-limit bookkeeping still run on every request; a
hit skips only validation (the same query string passed it before), the walk, rendering,
cursor signing and JSON encoding. A polling client (the documented hot path) is served from
here. Bounded: `size` entries and `max_bytes` bytes of bodies, the oldest dropped first
(an answer larger than a quarter of `max_bytes` is not kept); `size=0` turns the cache off.
A request that carried unknown (ignored) query parameters is not kept either: `_=N` cache
busters would each make a new entry (DECISIONS H36); so a request answered from here ignored
none either (the key holds its query string).
"""

from __future__ import annotations

import threading
from collections.abc import Hashable
from typing import NamedTuple

__all__ = ["CachedResponse", "ResponseCache"]


class CachedResponse(NamedTuple):
    limit_kind: str  # the rate-limit counter the request is charged to: workspace | token
    limit_ident: str
    status: int
    body: bytes
    headers: list[tuple[bytes, bytes]]


MAX_CACHE_BYTES = 32 * 1024 * 1024  # the bodies one state's cache holds at most


class ResponseCache:
    def __init__(self, size: int, max_bytes: int = MAX_CACHE_BYTES) -> None:
        self.size = size
        self.enabled = size > 0  # read on every cacheable request
        self.max_bytes = max_bytes
        self.bytes = 0  # the bodies held
        self._entries: dict[Hashable, CachedResponse] = {}
        self._version = -1
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: Hashable, version: int) -> CachedResponse | None:
        if version != self._version:
            return None
        return self._entries.get(key)

    def put(self, key: Hashable, version: int, entry: CachedResponse) -> None:
        size = len(entry.body)
        if size * 4 > self.max_bytes:
            return
        with self._lock:
            if version < self._version:
                return  # computed before a write that has since landed: already stale
            if version > self._version:
                self._entries.clear()
                self.bytes = 0
                self._version = version
            old = self._entries.pop(key, None)
            if old is not None:
                self.bytes -= len(old.body)
            while self._entries and (len(self._entries) >= self.size
                                     or self.bytes + size > self.max_bytes):
                self.bytes -= len(self._entries.pop(next(iter(self._entries))).body)
            self._entries[key] = entry
            self.bytes += size

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self.bytes = 0
