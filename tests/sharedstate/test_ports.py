"""The state's ports (engine/ports.py) answer for the state's kind, so callers never ask it:
one way to run a state operation (`off_loop`: at once in memory, in one of the worker's
threads on Redis), a capability refused by the state itself (`check_local`: 409 saying why on
Redis), the session registry's look-up that never waits on the loop (`resolve_on_loop`), and
the journal and rate limiter each state was built with (DECISIONS R24-R26).

Each was seen to fail under a planted break: `SharedMockState.off_loop` running `fn` inline;
`check_local` refusing nothing; `SharedSessions.resolve_on_loop` resolving through Redis.
"""

from __future__ import annotations

import asyncio
import threading

import pytest

from mockserver.engine.app import Config, MockApp
from mockserver.engine.errors import Conflict
from mockserver.engine.journal import Journal
from mockserver.engine.ratelimit import RateLimiter
from mockserver.engine.replication.parts import RedisJournal, RedisRateLimiter

from .conftest import Workers


def _thread_of(mock: MockApp) -> int:
    async def run() -> int:
        return await mock.state.off_loop(threading.get_ident)
    return asyncio.run(run())


def test_in_memory_a_state_operation_runs_at_once_and_nothing_is_refused() -> None:
    mock = MockApp(Config())
    assert _thread_of(mock) == threading.get_ident()
    mock.state.check_local("variations")  # nothing to refuse
    assert mock.state.namespace is None and mock.state.view() is None
    assert isinstance(mock.state.journal, Journal)
    assert isinstance(mock.state.limiter, RateLimiter)
    assert mock.sessions.resolve_on_loop("default") is mock.state
    mock.sessions.create("s1")
    assert mock.sessions.resolve_on_loop("s1") is mock.sessions.state("s1")
    mock.state.close()  # nothing held outside this process


def test_on_redis_a_state_operation_runs_off_the_loop_and_local_needs_are_refused(
        workers: Workers) -> None:
    workers.add()
    mock = workers.mocks[0]
    assert _thread_of(mock) != threading.get_ident()  # one of the worker's threads
    with pytest.raises(Conflict) as refused:
        mock.state.check_local("variations (why)")
    assert refused.value.status_code == 409
    assert "variations (why)" in refused.value.message
    assert workers.namespace in refused.value.message
    assert mock.state.namespace == workers.namespace
    # Built with Redis's parts, not given in-memory ones replaced afterwards.
    assert isinstance(mock.state.journal, RedisJournal)
    assert isinstance(mock.state.limiter, RedisRateLimiter)
    # A session not materialised on this worker needs Redis: None, resolved off the loop.
    mock.sessions.create("s1")
    assert mock.sessions.resolve_on_loop("s1") is None
    state = mock.sessions.resolve("s1")
    assert mock.sessions.resolve_on_loop("s1") is state
