"""The parts of a shared state that Redis keeps in place (not replicated by the log): the
rate-limit windows and limits, and the request journal. Lua scripts (lua/) keep each update
atomic; a journal entry is posted before the answer leaves (`SharedLog.post`)."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Iterator, MutableMapping
from typing import TYPE_CHECKING

import orjson

from ..clock import Clock
from ..journal import _ENTRY_OVERHEAD, JournalEntry, Observed, header_size, kept_bodies, select
from ..ratelimit import set_limit
from .log import _RECORD, SharedLog, _too_many
from .transport import StateUnavailable

__all__ = ["RedisJournal", "RedisRateLimiter"]

log = logging.getLogger("mockserver.shared")


class _Limits(MutableMapping[str, int]):
    """Per-workspace limits, in the namespace's limits hash (fields `ws:<id>`)."""

    def __init__(self, shared: SharedLog) -> None:
        self.shared = shared

    def _all(self) -> dict[str, int]:
        raw = self.shared.command("HGETALL", self.shared.keys["limits"])  # field, value, ...
        return {k.decode()[3:]: int(v) for k, v in zip(raw[::2], raw[1::2], strict=True)
                if k.startswith(b"ws:")}

    def __getitem__(self, key: str) -> int:
        value = self.shared.command("HGET", self.shared.keys["limits"], f"ws:{key}")
        if value is None:
            raise KeyError(key)
        return int(value)

    def __setitem__(self, key: str, value: int) -> None:
        self.shared.command("HSET", self.shared.keys["limits"], f"ws:{key}", value)

    def __delitem__(self, key: str) -> None:
        if not self.shared.command("HDEL", self.shared.keys["limits"], f"ws:{key}"):
            raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        return iter(self._all())

    def __len__(self) -> int:
        return len(self._all())

    def clear(self) -> None:
        fields = [f"ws:{k}" for k in self._all()]
        if fields:
            self.shared.command("HDEL", self.shared.keys["limits"], *fields)


class RedisRateLimiter:
    """Windows and limits in Redis: one window per workspace (or token) for all workers.
    `RateLimiter`'s interface (ratelimit.py), nothing kept in this process."""

    def __init__(self, clock: Clock, shared: SharedLog) -> None:
        self.clock = clock
        self.shared = shared
        self.per_workspace = _Limits(shared)
        self._hash = shared.keys["limits"]

    def _setting(self, name: str) -> str | None:
        value = self.shared.command("HGET", self._hash, name)
        return None if value is None else value.decode()

    @property
    def default(self) -> int:
        return int(self._setting("default") or 0)

    @property
    def enabled(self) -> bool:
        return self._setting("enabled") == "1"

    def configure(self, *, per_minute: int | None = None, enabled: bool | None = None) -> None:
        changes: dict[str, int] = {}
        if per_minute is not None:
            changes["default"] = per_minute
        if enabled is not None:
            changes["enabled"] = int(enabled)
        if per_minute is not None and enabled is None:
            changes["enabled"] = int(per_minute > 0)
        if changes:
            self.shared.command("HSET", self._hash, *[x for kv in changes.items() for x in kv])

    def set_workspace_limit(self, workspace_id: str, per_minute: int | None) -> None:
        """A workspace's own limit; None returns it to the default."""
        set_limit(self.per_workspace, workspace_id, per_minute)

    def limit_for(self, kind: str, ident: str) -> int:
        if kind == "workspace":
            value = self._setting(f"ws:{ident}")
            if value is not None:
                return int(value)
        return self.default

    def reset(self) -> None:
        self.shared.command("DEL", self.shared.keys["windows"])

    def hit(self, kind: str, ident: str) -> None:
        now_ms = self.clock.now_ms()
        reply = self.shared.call(self.shared.hit_script, [self._hash, self.shared.keys["windows"]],
                                 [kind, ident, now_ms])
        if reply[0]:
            raise _too_many(kind, int(reply[1]), int(reply[2]), now_ms)


class RedisJournal:
    """The request journal as a Redis list that every worker records into, bounded as in
    memory by its number of entries (`--journal-size`) and by the bytes they keep
    (`--journal-bytes`, counted as `Journal.record` counts an entry); bodies over 64 KiB are kept as
    their size. Entries are numbered by Redis. `Journal`'s interface (journal.py), nothing
    kept in this process."""

    def __init__(self, maxlen: int, max_bytes: int, shared: SharedLog) -> None:
        self.maxlen = maxlen
        self.max_bytes = max_bytes
        self.enabled = maxlen > 0
        self.shared = shared
        keys = shared.keys
        self._keys = [keys[k] for k in ("journal", "jsizes", "jmeta", "stage")]
        # A session's entries are recorded only while it exists (_RECORD).
        self._record_keys = [*self._keys, keys["epoch"]] if shared.guarded else self._keys

    def record(self, entry: Observed, variations: tuple[int, ...] = ()) -> None:
        """`Journal.record` (no robustness plan varies a shared state's answers: `variations`
        is always empty); sent before the answer, its reply read on the next call
        (SharedLog.post)."""
        data, size = self.encode(*entry)
        # EVAL rather than EVALSHA: posted, a script cache Redis lost would lose the entry.
        try:
            keys = self._record_keys
            self.shared.post(("RPUSH", keys[3], data),
                             ("EVAL", _RECORD, len(keys), *keys, size, self.maxlen,
                              self.max_bytes))
        except StateUnavailable as exc:  # the answer is sent all the same; the entry is lost
            log.warning("request journal: %s", exc.message)

    def encode(self, time_ms: int, method: str, path: str, query_string: bytes,
               raw_headers: Iterable[tuple[bytes, bytes]], body: bytes | None, status: int,
               response_body: bytes | None, latency_ms: float, operation_id: str | None,
               fault: str | None, ignored_params: tuple[str, ...] = (),
               header_bytes: int | None = None) -> tuple[bytes, int]:
        """An entry as stored in Redis (`Journal.record`'s fields), and its size."""
        body, response_body, truncated, body_size, response_size = kept_bodies(
            body, response_body)
        headers = tuple(raw_headers)
        if header_bytes is None:
            header_bytes = header_size(headers)
        size = (len(body or b"") + len(response_body or b"") + len(query_string) + header_bytes
                + _ENTRY_OVERHEAD)  # as Journal.record counts an entry's size
        # The fields as JSON, a newline (never in orjson's output), then both bodies as they are.
        data = b"".join((orjson.dumps({
            "t": time_ms, "m": method, "p": path, "q": query_string.decode("latin-1"),
            "h": [[k.decode("latin-1"), v.decode("latin-1")] for k, v in headers],
            "b": None if body is None else len(body), "s": status,
            "r": None if response_body is None else len(response_body), "l": latency_ms,
            "o": operation_id, "f": fault, "i": list(ignored_params),
            "x": list(truncated), "bs": body_size, "rs": response_size,
            "w": int(time.time() * 1000 - latency_ms),  # wall time of arrival
        }), b"\n", body or b"", response_body or b""))
        return data, size

    def clear(self) -> int:
        return int(self.shared.call(self.shared.clear_script, self._keys, []))

    @property
    def dropped(self) -> int:
        """Entries that fell off (either bound) since the last clear."""
        return int(self.shared.command("HGET", self.shared.keys["jmeta"], "dropped") or 0)

    @property
    def kept_bytes(self) -> int:
        return int(self.shared.command("HGET", self.shared.keys["jmeta"], "bytes") or 0)

    @property
    def recorded(self) -> int:
        """The last entry's `seq` (numbered by Redis)."""
        return int(self.shared.command("HGET", self.shared.keys["jmeta"], "seq") or 0)

    def __len__(self) -> int:
        return int(self.shared.command("LLEN", self.shared.keys["journal"]))

    def _all(self) -> list[JournalEntry]:
        keys = self.shared.keys
        last, raws = self.shared.atomically(("HGET", keys["jmeta"], "seq"),
                                            ("LRANGE", keys["journal"], 0, -1))
        out = []
        for seq, raw in enumerate(raws, int(last or 0) - len(raws) + 1):
            meta, _, bodies = raw.partition(b"\n")
            e = orjson.loads(meta)
            body_length = e["b"] or 0
            out.append(JournalEntry(
                seq=seq, time_ms=e["t"], method=e["m"], path=e["p"],
                query_string=e["q"].encode("latin-1"),
                raw_headers=tuple((k.encode("latin-1"), v.encode("latin-1")) for k, v in e["h"]),
                body=None if e["b"] is None else bodies[:body_length], status=e["s"],
                response_body=None if e["r"] is None else bodies[body_length:],
                latency_ms=e["l"], operation_id=e["o"], fault=e["f"],
                ignored_params=tuple(e["i"]), truncated=tuple(e["x"]), body_size=e["bs"],
                response_size=e["rs"], wall_ms=e.get("w", 0)))
        return out

    def __iter__(self) -> Iterator[JournalEntry]:
        return iter(self._all())

    def entries(self, *, method: str | None = None, path: str | None = None,
                status: int | None = None, after: int | None = None) -> list[JournalEntry]:
        """Entries oldest first, filtered as `Journal.entries` filters."""
        return select(self._all(), method=method, path=path, status=status, after=after)

    def drop_oldest(self, nbytes: int) -> int:
        """Nothing to free in this process (the entries are Redis's)."""
        return 0


if TYPE_CHECKING:  # the Redis implementations of the engine's ports (ports.py)
    from ..ports import JournalPort, LimiterPort

    _JOURNAL: type[JournalPort] = RedisJournal
    _LIMITER: type[LimiterPort] = RedisRateLimiter
