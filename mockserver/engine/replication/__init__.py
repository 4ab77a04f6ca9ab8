"""Replication: one mock served by several workers and processes through Redis.

Imported only when `Config.state` names a Redis (the in-memory default never imports it, nor
redis-py). See log.py's docstring for how the log works, and below for
the pieces and which way they depend.

Shared state (`engine/replication/`): several workers as one mock
-----------------------------------------------------------------

`serve --state redis://HOST:PORT/DB` (`Config.state`) makes the mock's state a
`SharedMockState`, a `MockState` whose commands go through Redis; only then is
`replication/` (and redis-py) imported. Its pieces:

| module | what it is |
|---|---|
| `state.py` | `SharedMockState`: `submit` appends a command and applies the log up to it; built with Redis's journal and rate limiter (`parts`, ports.py); the Redis implementation of the replication port `MockState` declares (`view`, `confirm`, `settle`, `count_request`, `transaction`, `run`, `off_loop`, `sync`, `use_cursors`, `use_storage_keys`, `check_local`, `close`) |
| `transport.py` | `Connection`: a worker's one connection and its calls (one write, one read; `post`; failures and tickets), `off_loop`, `StateUnavailable` (503) |
| `batch.py` | `ReadBatches`: the round trips of the reads answered in one turn of the event loop, in one write and one read (R18) |
| `log.py` | `SharedLog`: one log's place (the default's or a session's, over the same connection), catching up (decode, `MockState.apply`), a request's one round trip, transactions (the store's `Changes` appended as a `Write`, undone when they lose), compaction |
| `codec.py` | commands as stream entries (`d`: JSON; `f:<storageId>`: bytes) and back |
| `parts.py` | `RedisRateLimiter`, `RedisJournal`: the parts Redis keeps in place (no subclass of the in-memory ones; their interface) |
| `sessions.py`, `snapshots.py` | sessions and snapshots in Redis (below); a snapshot's stored form |
| `lua.py`, `lua/*.lua` | the Lua scripts, package data, joined and filled in with the Python side's constants (the rate-limit window, a session's keys) |
 Each worker still serves reads from its own in-memory store and
indexes. What Redis holds is the order of changes:

| Redis key (`mock:{namespace}:…`) | what it is |
|---|---|
| `log` (stream) and `last` | every change, in the one order all workers apply: `w` (a request's effects: records upserted or deleted, id counter, timestamp floor, uploaded bytes), `reset`, `load`, `clock`, `fault_add`/`fault_take`/`fault_clear` |
| `epoch` | which incarnation of the namespace the log belongs to (gone after a Redis restart without data) |
| `windows`, `limits` | rate-limit windows (`start count` per workspace or token, on the mock clock) and limits |
| `journal`, `jsizes`, `jmeta` | the request journal (a list of entries: their fields as JSON, then the bodies as sent), each entry's size, and `seq` (the last entry's number), `bytes` (kept in all), `dropped`: bounded by `--journal-size` and `--journal-bytes` as in memory |
| `meta`, `dataset:<hash>` | the fixtures and seed the namespace was started with; datasets loaded through the control API (content-addressed, shared by the namespace's sessions) |
| `sessions`, `session-used`, `changes` | the session registry (name -> incarnation id, created_at, settings, dataset, the snapshot forked from), each session's last use (wall ms), each session's and snapshot's changes (the memory cap) |
| `session:{name}:log`, `:last`, `:epoch`, `:journal`, `:windows`, `:limits` … | one session's own log and structures, as the default's above (its epoch is its incarnation id) |
| `snapshots`, `snapshot:<id>`, `snaprefs` | snapshot name -> description and stored id; the serialized snapshot; how many hold each stored id (the name and each fork) |

A request costs one round trip to Redis. As a request starts, the pipeline (its replication
layer, `replica.py`) takes the worker's
`state.view()` (where it is in the log: no call) and reads the local copy. One Lua script
(`_SYNC`) checks that the log still ends at that view and counts the request in its
rate-limit window (`count_request`). When another worker appended since, the script returns
the new entries instead (nothing counted); the worker applies them (`MockState.apply`) and the pipeline runs the request again from the start (`StaleRead`: nothing of the
first run answered or kept, a fault it fired not fired again). The pipeline marks the
request's view `deferrable`: the check and count wait for the end of the request. A request
that writes is counted by the script that appends its write (`transaction`: over the limit,
nothing is appended and its local changes are undone). Any other runs the script once its
answer is made (`state.settle`), and the script also records the journal entry, which the
same write staged with a plain `RPUSH` (DECISIONS R16); the requests a worker answers in one
turn of its event loop send their scripts in one write and read the replies in one read
(R18). A request
refused before it is counted (unknown token, record or path) confirms its view with the same
script (`state.confirm`) before answering. Other requests' journal entries are written before
the answer leaves, without waiting for the reply (`SharedLog.post`, read with the next
call's). Every call of a worker goes through its own connection, one write and one read
each. A write's handler runs inside
`state.transaction()`: the store records each write in its own transaction (and how to undo
it; a write made outside any opens one through `Store.outside`); at the end one Lua script
appends them as a `Write` **only if the log still ends at the worker's last entry**.
If another worker appended first, the worker undoes its changes, catches up and runs the
handler again; so writes are serialised by Redis and each runs on the state every earlier
write left (no lost update, ids as in memory). Control actions are appended first and applied
on reaching them, by the sender too (deterministic replay). A reset trims the log to itself
(everything before it is void), so a worker that starts late replays only what followed the
last reset. Control routes and file downloads catch up with `state.sync()` first.

Log compaction: a log that has grown by `SharedLog.compact_after` entries (10,000) since its
last base gets a *checkpoint*, a `Checkpoint` command (`MockState.export()`): the worker whose
write or control action crossed the mark exports its state (dataset key, settings, the store's
layer over its base with id counter and timestamp floor, clock, fault rules with their hits,
random state and next id, uploaded bytes) and appends it with a Lua script that checks the
log still ends at that worker's last entry (same optimistic check as a write) and trims
everything before it. A worker already at that point skips the entry; any other (new,
restarted, lagging) applies it (the parts' `restore()`), so catching up costs at most one
checkpoint and `compact_after` entries.

Consistency: linearizable writes (one order, decided by the append); a read sees every write
answered before the request started, on any worker (read-your-writes across workers); a
read runs on the worker's local copy and never waits for other writers.

Redis faults (DECISIONS R19-R22). The event loop never calls Redis: a read's pipeline runs on
the loop only while its state's lock is free and it calls Redis nowhere but in its round trip
(`SharedMockState.run`; a call attempted there raises `OffLoop`, a `StaleRead` that undoes
what the request changed and runs it again in a thread); everything else that may call Redis
(writes, fired faults, posted journal entries, the batched round trips of R18, control
calls, session look-ups, storage routes) runs in one of the worker's 16 threads (`off_loop`,
an anyio capacity limiter per loop). Each exchange waits at most `REDIS_TIMEOUT` (2 s); a
request carries a ticket, the connection's failure count when it came (`mock.ticket` in the
scope), and an exchange it would make after one failed answers 503 at once, so a paused
Redis costs each request at most one timeout. Before sending, `_send` checks without
blocking that Redis has not closed the connection (a restart) and replaces it if so. `_SYNC`
also tells a worker when its last applied entry is no longer in the log while older ones are
(Redis restored an older snapshot): the worker rebuilds from its start-up state and the whole
log (`SharedLog._rebuild`). Cursors are signed with the namespace's secret (`meta` field
`cursor_secret`), read at start and again after a new epoch (`SharedLog.read_secret`,
`CursorCodec.rekey`).

Sessions and snapshots under shared state (`replication/sessions.py`)
---------------------------------------------------------------------

`MockApp` builds a `SharedSessions` (the engine's `sessions.SessionRegistry` port over Redis)
when its state is shared. A session is a `SessionState`: the shared state above over the session's own keys
(`session:{name}:…`), sharing the default's Redis connection, with its store a copy-on-write
layer over the shared seed, or over the `Snapshot` it was forked from. A worker materialises a
session the first time a request names it (`resolve`: one `HGET` of the registry, then a
catch-up of the session's log) and keeps it; snapshots are decoded once per worker and shared
by all the forks of one snapshot (`Snapshot.of()` over the dataset's seed).

The session's catch-up script (one round trip, as the default's) also checks that the session
is in the registry and notes its use. Not registered: 404 on this worker, its copy dropped.
Registered under another incarnation (deleted and created again): the epoch differs, the
script returns the new registration, and the worker rebuilds the session from it before
replaying its log. A session's append checks the session's epoch first, so a write never lands
in a session deleted or re-created since the worker caught up.

The registry changes only through Lua scripts (`lua/session_create.lua`, `session_delete`,
`session_expire`, `session_clear`, `snapshot_save`, `snapshot_delete`): each decides conflicts and caps and writes everything it writes
at once. A session's changes (for the memory cap and `GET /__mock__/sessions`) are noted by
the worker that committed its last write. Idle expiry runs at most once a second per worker
and also drops that worker's copies of sessions deleted elsewhere. A snapshot is stored as
its serialized delta (`encode_snapshot`), with a holder count: a fork holds its snapshot's
stored form, so deleting the snapshot's name leaves its forks whole. Redis errors become
`StateUnavailable` (503), with local changes undone. Writes that the store does not see
(a part's internals assigned directly) are not shared: everything goes through the state's
methods and the store's record API, which `test_state_api.py` enforces.
"""

from __future__ import annotations

from .log import SharedLog
from .state import SharedMockState, shared_state
from .transport import SharedStateError, StateUnavailable

__all__ = ["SharedLog", "SharedMockState", "SharedStateError", "StateUnavailable",
           "shared_state"]
