"""The connection of one worker to Redis: every call of its shared states goes through it.

One connection per worker (a session's log uses the default's), used under one lock: one
buffer written and one reply read per call (the pool's checkout and per-argument writes cost
more than Redis's work), and an order for what `post` sends unanswered. Failures become 503
(`StateUnavailable`); a request that came before an exchange failed is refused at once rather
than wait again (its ticket, `off_loop`). The event loop never calls Redis (`OffLoop`).
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable, MutableMapping
from typing import TYPE_CHECKING, Any, TypeVar

import anyio
import anyio.to_thread
from anyio.lowlevel import RunVar

from ..errors import ApiError, StaleRead

if TYPE_CHECKING:
    import redis as redis_module

__all__ = ["REDIS_TIMEOUT", "Connection", "OffLoop", "SharedStateError", "StateUnavailable",
           "connect", "off_loop"]

log = logging.getLogger("mockserver.shared")

T = TypeVar("T")

INSTALL_HINT = "shared state needs redis-py: pip install 'workspace-api-mock[redis]'"
# What Redis reads from a client's socket at once (PROTO_IOBUF_LEN): a posted command up to
# this size is read and run in one go (Connection.post).
POST_MAX = 16 * 1024
# How long one exchange with Redis may take (connecting, a command's reply): a request that
# needs a Redis that does not answer is answered 503 this long after it needed it, or at
# once when the exchange it waited behind failed meanwhile (Connection.failures).
REDIS_TIMEOUT = 2.0
# Threads of a worker that run requests needing Redis, so that a Redis that does not answer
# never holds up the event loop (`off_loop`): the docs and what needs no Redis go on.
REDIS_THREADS = 16


class SharedStateError(RuntimeError):
    """Shared state cannot start (redis-py missing, Redis unreachable, another mock's
    namespace): a start-up error with a plain message."""


class StateUnavailable(ApiError):
    """Redis went away while serving: 503, nothing applied."""

    status_code = 503
    reason = "state_unavailable"


def _redis() -> Any:
    try:
        import redis
    except ImportError:  # pragma: no cover - the message is the point
        raise SharedStateError(INSTALL_HINT) from None
    return redis


def connect(url: str) -> redis_module.Redis:
    """A client for `url` (redis://HOST:PORT/DB), checked with a PING."""
    redis = _redis()
    try:
        client = redis.Redis.from_url(url, socket_timeout=REDIS_TIMEOUT,
                                      socket_connect_timeout=REDIS_TIMEOUT)
        client.ping()
    except (redis.RedisError, ValueError) as exc:
        raise SharedStateError(f"cannot reach Redis at {url}: {exc}") from None
    return client


# -- off the event loop ------------------------------------------------------------------------

_LIMITER: RunVar[anyio.CapacityLimiter] = RunVar("mockserver_shared_threads")
# Per thread: `ticket`, (the connection's log, its failures when the request being run came);
# `inline`, whether it runs on the event loop (no call to Redis allowed: OffLoop).
_REQUEST = threading.local()


class OffLoop(StaleRead):
    """A call to Redis attempted on the event loop (`SharedMockState.run`, inline): nothing
    is sent, what the request changed is undone as for a stale read, and it runs again in
    one of the worker's threads."""


def _on_loop() -> None:
    """Refuse a call to Redis from the event loop (before any lock of the connection)."""
    if getattr(_REQUEST, "inline", False):
        raise OffLoop


async def off_loop(connection: Connection, fn: Callable[..., T], *args: Any,
                   scope: MutableMapping[str, Any] | None = None) -> T:
    """Run `fn(*args)` (the part of a request that may call Redis through
    `connection`) in one of the worker's `REDIS_THREADS` threads: the event loop goes on
    serving what needs no Redis. The request's ticket is the connection's failure count when
    it came (kept in its ASGI `scope` for its later steps): an exchange it makes after one
    failed meanwhile answers 503 at once (`Connection._send`), so requests queued behind a
    Redis that does not answer are not each kept waiting, nor is one twice."""
    try:
        limiter = _LIMITER.get()
    except LookupError:
        limiter = anyio.CapacityLimiter(REDIS_THREADS)
        _LIMITER.set(limiter)
    owner = connection
    if scope is None:
        ticket = (owner, owner.failures)
    else:
        ticket = (owner, scope.setdefault("mock.ticket", owner.failures))

    def run() -> T:
        _REQUEST.ticket = ticket
        try:
            return fn(*args)
        finally:
            _REQUEST.ticket = None

    return await anyio.to_thread.run_sync(run, limiter=limiter)


class Connection:
    """A worker's connection to one Redis (see the module docstring). `lock` is held over
    every exchange (the default state's lock: a session's is always taken before it)."""

    def __init__(self, client: redis_module.Redis, url: str, lock: Any) -> None:
        redis = _redis()
        self.redis_errors: tuple[type[BaseException], ...] = (redis.RedisError, OSError)
        # A refusal of ours or Redis's failure (one `except` clause of a batch's reply).
        self.failing: tuple[type[BaseException], ...] = (ApiError, *self.redis_errors)
        self.response_error: type[BaseException] = redis.ResponseError
        self.no_script: type[BaseException] = redis.exceptions.NoScriptError
        self.client = client
        self.url = url
        self.lock = lock
        self._conn: Any = None
        self._posted = 0  # replies of what `post` sent, not yet read
        # Loaded again when Redis lost its script cache (each log adds its own).
        self.scripts: tuple[Any, ...] = ()
        # Exchanges with Redis that failed (a broken connection, a timeout): a request that
        # came before the last one answers 503 at once rather than wait again (`off_loop`).
        self.failures = 0
        self.batches: Any = None  # its reads' round trips (batch.ReadBatches), set by log.py

    def unavailable(self, exc: BaseException | str) -> StateUnavailable:
        return StateUnavailable(f"shared state unavailable: Redis at {self.url}: {exc}")

    def call(self, script: Any, keys: list[str], args: list[Any],
             *before: tuple[Any, ...]) -> Any:
        """Run a Lua script (after the commands `before`, in the same write) and return its
        reply."""
        _on_loop()
        with self.lock:
            try:
                try:
                    return self.exchange(*before,
                                          ("EVALSHA", script.sha, len(keys), *keys, *args))
                except self.no_script:  # Redis lost its script cache (a restart, a flush)
                    self.load_scripts()
                    return self.exchange(*before,
                                          ("EVALSHA", script.sha, len(keys), *keys, *args))
            except self.response_error as exc:  # answered: the connection is in step
                raise self.unavailable(exc) from None
            except self.redis_errors as exc:
                self.lost()
                raise self.unavailable(exc) from None

    def command(self, name: str, *args: Any) -> Any:
        """Run one command (in order with what was posted)."""
        _on_loop()
        with self.lock:
            try:
                return self.exchange((name, *args))
            except self.response_error as exc:
                raise self.unavailable(exc) from None
            except self.redis_errors as exc:
                self.lost()
                raise self.unavailable(exc) from None

    def atomically(self, *commands: tuple[Any, ...]) -> list[Any]:
        """Run commands in one MULTI (one round trip); their replies."""
        _on_loop()
        with self.lock:
            try:
                replies: list[Any] = self.exchange(("MULTI",), *commands, ("EXEC",))
            except self.response_error as exc:
                raise self.unavailable(exc) from None
            except self.redis_errors as exc:
                self.lost()
                raise self.unavailable(exc) from None
        for reply in replies:
            if isinstance(reply, Exception):
                raise self.unavailable(reply)
        return replies

    def exchange(self, *commands: tuple[Any, ...]) -> Any:
        """Send commands in one write, then read the replies of what was posted before them
        (Redis answers in order: they are usually in the same read) and theirs; the last
        command's reply. An error reply is raised once all are read."""
        self._send(*commands)
        self._read_posted()
        failed: BaseException | None = None
        reply = None
        for _ in commands:
            try:
                reply = self._conn.read_response()
            except self.response_error as exc:
                failed = failed or exc
        if failed is not None:
            raise failed
        return reply

    def exchange_all(self, *commands: tuple[Any, ...]) -> list[Any]:
        """Send commands in one write; all their replies, an error reply in its place."""
        self._send(*commands)
        self._read_posted()
        replies: list[Any] = []
        for _ in commands:
            try:
                replies.append(self._conn.read_response())
            except self.response_error as exc:
                replies.append(exc)
        return replies

    def post(self, *commands: tuple[Any, ...]) -> None:
        """Send commands in one write without waiting for their replies (the next call on
        this connection reads them); only commands whose failure the caller can shrug off.

        Redis has the whole write before this returns, with nothing unanswered before it on
        this connection, and serves its connections in the order they have something to
        read; so a command sent later, by any worker, runs after these (DECISIONS R16). A
        write longer than what Redis reads from a client at once (`POST_MAX`) is waited for,
        so that it is never run after a command sent later on another connection.
        """
        _on_loop()
        with self.lock:
            try:
                self._read_posted()
                size = self._send(*commands)
                self._posted += len(commands)
                if size > POST_MAX:
                    self._read_posted()
            except self.redis_errors as exc:
                self.lost()
                raise self.unavailable(exc) from None

    def _send(self, *commands: tuple[Any, ...]) -> int:
        """Write commands to the worker's connection in one buffer; its size. A request that
        came before an exchange failed (`off_loop`) is refused instead: it has waited for a
        Redis that did not answer, and the next request tries again."""
        _on_loop()
        ticket = getattr(_REQUEST, "ticket", None)
        if ticket is not None and ticket[0] is self and ticket[1] != self.failures:
            raise self.unavailable(f"no answer within {REDIS_TIMEOUT:g} s to a call this "
                                   "request waited behind")
        conn = self._conn
        if conn is None:
            conn = self._conn = self.client.connection_pool.make_connection()
        elif conn._sock is not None and self._closed(conn):
            # Redis closed it (a restart) before this request sent anything: a new one, so
            # that the first request after Redis returns is answered, not refused.
            if self._posted:
                log.warning("request journal: the last entry may be lost with the connection "
                            "to Redis at %s", self.url)
                self._posted = 0
            conn.disconnect()
        packed = b"".join(b"".join(conn.pack_command(*command)) for command in commands)
        conn.send_packed_command([packed], check_health=False)
        return len(packed)

    def _closed(self, conn: Any) -> bool:
        """Whether Redis closed `conn` while it was idle: once the replies due on it are
        read, anything more to read is the end of the connection."""
        try:
            if not conn.can_read(timeout=0):
                return False
            if not self._posted:
                return True
            self._read_posted()  # due, and come
            return bool(conn.can_read(timeout=0))
        except self.redis_errors:
            return True

    def _read_posted(self) -> None:
        """Read the replies of what `post` sent."""
        while self._posted:
            self._posted -= 1
            try:
                reply = self._conn.read_response()
            except self.response_error as exc:  # pragma: no cover - a bug of ours
                reply = [exc]
            for failed in reply if isinstance(reply, list) else ():
                if isinstance(failed, Exception):  # pragma: no cover - a bug of ours
                    log.warning("shared state: a posted command failed: %s", failed)

    def load_scripts(self) -> None:
        self.exchange(*[("SCRIPT", "LOAD", script.script) for script in self.scripts])

    def lost(self) -> None:
        """The connection broke: what was posted and not confirmed may be lost."""
        self.failures += 1
        if self._posted:
            log.warning("request journal: the last entry may be lost with the connection to "
                        "Redis at %s", self.url)
            self._posted = 0
        if self._conn is not None:
            self._conn.disconnect()

    def close(self) -> None:
        with self.lock:
            with contextlib.suppress(*self.redis_errors):
                self._read_posted()
            if self._conn is not None:
                self._conn.disconnect()
        self.client.close()
