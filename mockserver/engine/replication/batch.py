"""The round trips of reads, batched: the reads a worker answers in one turn of its event loop
send their scripts to Redis in one write and read the replies in one read (DECISIONS R18).
One `ReadBatches` per connection (transport.py); each read is confirmed against its own log
(the default's or a session's, log.py)."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from typing import TYPE_CHECKING, Any

from ..errors import ApiError, StaleRead
from .transport import REDIS_TIMEOUT, off_loop

if TYPE_CHECKING:
    from .transport import Connection

__all__ = ["ReadBatches"]


class ReadBatches:
    """Reads waiting for their round trip, by event loop (`enqueue`, `_flush`), under a lock
    of their own (never held over a call to Redis: the event loop takes it)."""

    def __init__(self, connection: Connection) -> None:
        self.connection = connection
        self._batches: dict[asyncio.AbstractEventLoop, list[tuple[Any, ...]]] = {}
        self._lock = threading.Lock()
        self._flushes: set[asyncio.Task[None]] = set()

    def enqueue(self, loop: asyncio.AbstractEventLoop, item: tuple[Any, ...]) -> None:
        with self._lock:
            batch = self._batches.get(loop)
            if batch is None:
                batch = self._batches[loop] = []
                task = loop.create_task(self._flush(loop))  # its first step: the next turn
                self._flushes.add(task)
                task.add_done_callback(self._flushes.discard)
            batch.append(item)

    async def _flush(self, loop: asyncio.AbstractEventLoop) -> None:
        """Settle the reads gathered in this turn of `loop`, off the loop (`off_loop`): one
        write and one read under this (the connection's) lock; what the replies mean is
        worked out after it is let go, since that may take a session's lock (catching up, a
        session gone), which is taken before this one everywhere else."""
        with self._lock:
            batch = self._batches.pop(loop, [])
        try:
            settled = await off_loop(self.connection, self._settle_batch, batch)
        except BaseException as exc:  # pragma: no cover - a bug: answered, never hung
            for *_, future in batch:
                if not future.done():
                    future.set_exception(exc)
            if not isinstance(exc, Exception):
                raise
            return
        for future, result, failed in settled:
            if future.done():  # pragma: no cover - its request was cancelled
                continue
            if failed is not None:
                future.set_exception(failed)
            else:
                future.set_result(result)

    def _settle_batch(self, batch: list[tuple[Any, ...]]
                      ) -> list[tuple[asyncio.Future[Any], Any, BaseException | None]]:
        """`_flush`'s work in a thread: each read's future with its result or exception."""
        with self.connection.lock:
            outcomes = self.exchange(batch)
        return self._resolve(outcomes)

    def exchange(self, batch: list[tuple[Any, ...]]
                        ) -> list[tuple[tuple[Any, ...], Any, int]]:
        """Send the scripts of `batch` in one write and read their replies (under the
        lock); each item with its reply (or StaleRead, or the error) and its count's clock."""
        commands: list[tuple[Any, ...]] = []
        outcomes: list[tuple[tuple[Any, ...], Any, int]] = []
        sent: list[tuple[tuple[Any, ...], int, int]] = []  # item, reply index, now
        for item in batch:
            log, view, entry, maxlen, max_bytes, _ = item
            if view.ticket != self.connection.failures:  # came before an exchange failed: not again
                outcomes.append((item, self.connection.unavailable(
                    f"no answer within {REDIS_TIMEOUT:g} s to a call this request waited "
                    "behind"), 0))
                continue
            seen = log.seen_current(view)
            if not seen and (view.last_id != log.last_id or view.epoch != log.epoch):
                outcomes.append((item, StaleRead(), 0))  # applied entries since it read
                continue
            args, before, now_ms = log.sync_args(view.count, entry, maxlen, max_bytes)
            if seen:
                args[0] = "*"
            commands += [*before, ("EVALSHA", log.sync_script.sha, len(log.sync_keys),
                                   *log.sync_keys, *args)]
            sent.append((item, len(commands) - 1, now_ms))
        if not sent:
            return outcomes
        try:
            replies = self.connection.exchange_all(*commands)
        except self.connection.redis_errors as exc:
            self.connection.lost()
            return outcomes + [(item, self.connection.unavailable(exc), 0) for item, _, _ in sent]
        if any(isinstance(replies[index], self.connection.no_script) for _, index, _ in sent):
            with contextlib.suppress(*self.connection.redis_errors):
                self.connection.load_scripts()  # Redis lost its script cache: those items run alone
        return outcomes + [(item, replies[index], now_ms) for item, index, now_ms in sent]

    def _resolve(self, outcomes: list[tuple[tuple[Any, ...], Any, int]]
                 ) -> list[tuple[asyncio.Future[Any], Any, BaseException | None]]:
        """Each read's future with what its reply means (outside the connection's lock; the
        futures are resolved on their loop by `_flush`)."""
        behind: set[Any] = set()
        settled: list[tuple[asyncio.Future[Any], Any, BaseException | None]] = []
        for item, reply, now_ms in outcomes:
            log, view, entry, maxlen, max_bytes, future = item
            try:
                if isinstance(reply, BaseException) and not isinstance(reply, self.connection.no_script):
                    raise reply
                if isinstance(reply, self.connection.no_script):
                    result = log.confirm_now(view, view.count, entry, maxlen, max_bytes,
                                          answer=True)
                else:
                    result = log.outcome(view, view.count, reply, now_ms, answer=True,
                                          absorb=False)
            except StaleRead:
                behind.add(log)
                settled.append((future, None, StaleRead()))
            except self.connection.response_error as exc:
                settled.append((future, None, self.connection.unavailable(exc)))
            except self.connection.failing as exc:  # (ApiError, *redis_errors)
                settled.append((future, None, exc if isinstance(exc, ApiError)
                                else self.connection.unavailable(exc)))
            else:
                settled.append((future, result, None))
        for log in behind:  # their reads run again, on the caught-up copy
            with contextlib.suppress(ApiError, *self.connection.redis_errors):
                log.catch_up()
        return settled
