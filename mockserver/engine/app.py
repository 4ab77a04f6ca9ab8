"""The request pipeline: one route for every API request, in this order,

    read the body (methods that carry one) -> faults (layers.py; faults.py's effects)
    -> the core (core.py: route -> authenticate -> cache -> write access -> validate
       -> workspace -> rate limit -> prefer -> handle -> encode -> self-check)
    -> journal and request log (layers.py) -> send

run by the mock's runner (`layers.Runner`): `LocalRunner` in memory, or a shared
state's replication layer (replica.py: its view, reruns and one round trip to Redis) around
the same core. One request is one `Exchange`
(exchange.py) from start to end; the ASGI scope carries only what crosses an ASGI boundary
(`mock.state`, `mock.prefix`, `mock.error`; see "One route" below).

`MockApp` is the pipeline over a `MockState` (state.py: store, tokens, limiter, clock,
journal, faults, cache, files), which it changes only through the state's methods;
`create_app` (standalone/server.py) wraps it in a Starlette application.

One route: a synchronous core and the layers around it
------------------------------------------------------

Every API request takes one route, `MockApp.serve` (app.py), and is one `Exchange`
(`exchange.py`, a `__slots__` record built once per request: the state it addresses, the
header pass, the body or why it could not be read, the operation and raw path parameters, the
unknown query parameters it carried, the fault that hit it, a shared state's view, and the
answer). No fact of a request travels in the ASGI scope inside the engine; the scope carries
only what crosses an ASGI boundary: `mock.state` (the session the `Application` resolved, read
by the pipeline, the control API and storage through `MockApp.state_for`), `mock.prefix` (the
session prefix, for the docs page) and `mock.error` (an unexpected exception answered 500,
for embedders: the pytest plugin fails the test with it). replication/ also keeps the request's
Redis ticket there (`mock.ticket`, shared by the `Application`'s session look-up and the
pipeline's calls) and `mock.off_loop`.

```
serve:  read body ─► [faults: before] ─► core ─► [journal, request log: after] ─► send
                                          ▲
          replica.py (shared state): view, transaction, round trip, reruns ─ around
          robust/runtime.py (a session with a variation plan): answer items, paging, extra
                            fields, self-check of the varied answer ─ in the core's place
core:   route ─► authenticate (431, 401) ─► cache ─► write access ─► validate ─► session room
        ─► workspace ─► rate limit ─► prefer ─► handle ─► encode ─► self-check
```

- `core.py`: `Core.answer(ex)` is the synchronous core; it awaits nothing, and a refusal is
  its 4xx, an unexpected exception a logged 500. It is all a quiet in-memory request runs
  (no fault rules; the journal entry is one call after it).
- `layers.py`: the in-memory layers. Faults before the core: a fired rule's effect
  (`faults.py`: `Delay`, `Status`, `Drop`, small `Effect` classes that own what a kind of
  fault does: wait, answer in the core's place, send; a new kind is a new `Effect`); the
  journal entry (`journal.Observed`: one tuple of the fields `OBSERVED_FIELDS` names, what
  `Journal.record` takes) and the request
  log line after it. `serve` sends the answer (or the effect does: a drop sends half of one).
- One runner per mock (`layers.Runner`): `MockApp.serve` is its `serve`, bound once when
  the mock is built (every state of a mock, the default and its sessions, is of one kind),
  so no request asks which state it is on. `LocalRunner` (below) runs the in-memory route
  inline; `replica.Replica` is the runner of a state shared through Redis.
- `replica.py`: the replication layer, which calls a shared state through the state's
  replication port (ports.py's `Replication`: `view`, `confirm`, `transaction`, `settle`,
  `run`, `off_loop`, declared by `MockState` with its in-memory behaviour; `take_fault`,
  `record_request`). Around the core it takes the worker's view, runs the core on the event
  loop (reads) or in a worker thread, settles the read's round trip with its journal entry,
  and reruns on `StaleRead` (at most `MAX_RERUNS`, then 503). The core calls it at three
  points for a request on a view only (`routed`, `transact`, `refused`), through the
  `replica.SharedSteps` it is built with (typed by `core.SharedSteps`).
- The state's parts that differ between memory and Redis are ports (ports.py: the journal,
  the rate limiter, the replication port; `sessions.SessionRegistry`), each with an
  in-memory and a Redis implementation passed in when the state is built (`MockState(parts=
  ...)`); mypy checks both against each port.
- `mockserver/robust/runtime.py`: robustness mode's variation layer, in the core's place.
  On an in-memory state with a plan (`MockState.variations`), `LocalRunner` runs the fault layer
  as always and then, unless a fault answered, `Variations.answer(mock, ex)` instead of the
  core (duck-typed: the engine imports nothing of `robust/`), which answers an answer item's
  call itself (a `faults.Drop` effect for a drop), else runs the core on the exchange (a
  paging item's query swapped in and back) and rewrites and self-checks the answer, leaving
  the plan items that varied it in `Exchange.varied`; the journal layer records them with
  the entry and the request log names them.
- Dependencies point inward: `app.py` → `replica.py` → `layers.py` → `core.py` →
  `exchange.py`; `faults.py` and `journal.py` know nothing of the pipeline (the layers call
  them), and `exchange.py` imports no engine module but `errors.py` at run time.
- The models: stripe-mock's `HandleRequest` (one function, one request, the steps in order)
  and pytest-httpserver's `hooks.py` (behaviour around the answer as small objects). Adding
  a layer (a variation, a recorder) is one more check in `serve` or in the replication
  layer, around `Core.answer`, never inside it.

A request to the API meets these modules in this order (`core.py` wires them):

| step | module | what it does |
|---|---|---|
| load | `spec.py` | loads `spec/openapi.yaml` once (in memory; an installed wheel reads the copy `hatch_build.py` parsed at build time), compiles each operation into an `Operation` (parameters, body schema, responses, write role, `x-mock-resource`, a list's `x-mock-list`, `x-order` and `x-filter`, an action's `x-mock-transition`, where its workspace comes from) |
| route | `routing.py` | literal paths by dict, templated paths by segment count (literal segments first); unknown path 404, other method 405 |
| authenticate | `auth.py` | `Authorization: Bearer <token>` → `Principal` (user, read/write, workspaces); 401 otherwise |
| cached read | `cache.py` | a GET answered before, with the store unchanged since (same handler, path, query string and caller): charged to its rate-limit counter and sent again, skipping the steps below |
| write access | `auth.py` | operations whose security lists the role `write` need a write token; 403 otherwise |
| validate | `validation.py` | path and query parameters coerced by their declared type and checked by compiled jsonschema-rs validators; JSON bodies (Content-Type, size → 413, syntax, schema). Every 400 names the parameter or field. Unknown query parameters are dropped (not part of the query a handler or a cursor sees) unless `Config.strict_params` refuses them; the dropped names are reported to the journal and the request log. The pipeline validates the raw query string (`RequestValidator.query_string`): an unescaped `name=value` part a documented parameter was accepted as is remembered per operation (bounded), the same checks in the same order as over parsed items. Query and body defaults of the document are filled in (nested objects and array items too), so handlers never restate them. A `format: date-time` parameter (schema `DateTimeInput`: any ISO 8601 / RFC 3339 form) reaches the handler normalised to the API's timestamp form, rounded up to the millisecond (`clock.normalise_instant`), so handlers compare it with stored timestamps as text |
| resolve workspace | `core.py` | from the path (`/v1/workspaces/{id}`), the query, the body, or the addressed resource (`x-mock-resource`); 403 without access, 404 when an explicit `workspace_id` does not hold the resource |
| rate limit | `ratelimit.py` | fixed one-minute windows per workspace (per token when no workspace); 429 with `Retry-After` |
| prefer | `core.py` | `Prefer: code=N` answers a documented error only here, after every check above (and counted) |
| handle | `handlers/<family>.py` | one function per operationId (`@operation("listTickets")`), reading and writing the store through a `Context`. Lists are declared in the document: `x-mock-list` (`Operation.listing`: table, partition field, and whether it holds the request's workspace or the addressed resource), `x-order` and `x-filter` (`Operation.order` and `.filters`). `ctx.page()` reads all three by default (`ctx.ordering()`, `where_filtered`), so a declared list without a handler is served from its declaration (`handlers/declared.py`), and a handler of a declared list adds only behaviour (`where`, `render`), never a table, sort field, direction or filter field the document states; a GET with `x-mock-resource` and no handler of its own answers the addressed resource; a state change is the document's `x-mock-transition` (`Operation.transition`: field, the values it leaves from, the value it sets), which the handler applies through `_common.transition` and the gate's state rule reads too |
| store | `store.py` | tables of immutable dict records, sorted indexes per partition, deterministic ids and strictly increasing timestamps; copy-on-write layers over a shared seed (see "Store layers"), `reset()` in O(changes) |
| paginate | `pagination.py` | keyset walk over an index (positions in a seed bucket, or a merge with the layers); HMAC-signed cursors bound to the query; records encoded to JSON once per record version (`orjson.Fragment`: aligned with the seed bucket for seed records, by identity otherwise) |
| respond | `responses.py` | orjson bodies; every error as `{"error": "..."}` from `errors.py`'s hierarchy |
| self-check | `selfcheck.py` | (on in tests) every response validated against the document's *closed* schemas, and refused if any key starts with `_`; a mismatch raises `ResponseContractViolation`. A body found valid for an operation and status is remembered (bounded) and not validated again when the same bytes go out again (headers are checked every time): every test's session answers its first reads with the seed's pages. Any unexpected exception (that one included) is answered 500 `{"error"}` by `Core.answer` (`Core.failed`), logged on `mockserver.errors` and kept in the scope (`mock.error`) for the pytest plugin to raise in the test |

Around the pipeline, each in its own module:

| module | what it adds |
|---|---|
| `journal.py`, `faults.py`, `requestlog.py` | the request journal (bounded in entries and in bytes, bodies over 64 KiB not kept; rendered and redacted only when read); fault injection (status, delay, dropped connection, probability, count; `fault_target_problem` refuses, where a rule is made, a path or method no operation has: `MockApp.check_fault`, called by the control API and the plugin); one log line per request. The pipeline checks once per request whether any of them is active (layers.py) |
| `standalone/control.py`, `standalone/docs.py`, `standalone/storage.py` | `/__mock__/` (routed from `spec/control-openapi.yaml`: paths, methods, success statuses and validation come from it; `operations.py` is the registry: one handler per operationId, and the in-process caller), `/docs` (offline Swagger UI from `static/`), `/openapi.json`, control bodies are read as JSON whatever their Content-Type (`control.read_body`; `/v1` keeps the vendor's rule), the inspector page, and the storage service of attachments (`PUT /__storage__/upload/{token}`, `GET /__storage__/files/{storageId}`: by the signed URL the API hands out or a bearer token of the file's workspace; ids and signatures keyed by `engine/storage.py`'s `StorageKeys`, a server secret) |
| `testing/plugin.py`, `testing/transport.py` | the `mock_api` fixture (`pytest11` entry point): a session server in a thread, a session per test, and in-process httpx transports; `mock_api.client()` calls the server's app in the test's thread as uvicorn would (`DirectTransport`: no socket, no HTTP parsing, no thread switch; DECISIONS S10). Its shape: "The pytest plugin" below |
| `proxy.py` | the validation proxy: forwards to a real server and reports what breaks the document (open schemas) |
| `fixtures.py`, `generate.py`, `yamlload.py` | loading and checking datasets; the deterministic generator; YAML that keeps timestamps as strings |
| `mockserver/cli.py` | the front door: `PARSED` (products adding their subcommands: `standalone/cli.py` `serve`, `fixtures generate`; `record/cli.py`), `OWN_LINE` (products parsing their own line: `conform`, needing the `conform` extra, exit 2 naming it when absent; `proxy`; `robust`) |
| `robust_cli.py`, `robust/ddmin.py` | `python -m mockserver robust -- COMMAND`: the mock served in a thread (`serve_mock`), one session and drawn plan per run through the control API (`Runner`), a failure reduced by `reduce_failure` (empty plan, applied items, then `ddmin`, a pure function over a plan's items) and printed with its `--replay` line |
| `conform/` | the conformance gate (see below) |

Deferred answers
----------------

A handler whose answer takes time (a custom tool's run, `toolexec.py`) returns a
`context.Deferred`: on the in-memory path (`Exchange.offload`) the core leaves it in
`ex.deferred` and `serve` awaits `Core.complete` in a worker thread, outside the store's lock
(the run reads no state), which encodes and self-checks it; elsewhere (a shared state's worker
thread, a variation plan) the core runs it in place. A list page of big records is one too
(`context.HeavyPage`, DECISIONS H38: its body built item by item in the worker), and any answer
past 1 MiB is sent in 1 MiB slices (`exchange.send_slices`).
"""

from __future__ import annotations

import secrets
import time
from datetime import UTC, datetime
from typing import Any

import anyio.to_thread
import orjson
from starlette.types import Receive, Scope, Send

from ..data.fixtures import Dataset, load_dataset
from ..openapi.spec import Spec, load_spec
from .auth import TokenRegistry
from .cache import ResponseCache
from .clock import Clock
from .config import Config
from .context import Services, ToolSettings
from .core import Core
from .errors import ResponseContractViolation
from .exchange import BODY_METHODS, SEND_SLICE, Exchange, Scanned, read_body, send_slices
from .faults import Faults, fault_target_problem
from .handlers import load_handlers
from .layers import Layers, Runner
from .pagination import CursorCodec
from .ports import JournalPort, LimiterPort
from .replica import Replica, SharedSteps, shared_sessions, shared_state
from .routing import Router
from .selfcheck import SelfCheck
from .sessions import SessionRegistry, Sessions
from .state import MockState, Settings, StateSnapshot
from .storage import FileStore, StorageKeys
from .store import Store
from .validation import RequestValidator

__all__ = ["Config", "LocalRunner", "MockApp"]  # Config is config.py's, imported from here as before

class MockApp:
    """The pipeline over one mock's state: the document and its core (router, validators,
    handlers, self-check: fixed while the server runs), the layers around the core, and
    `state` (state.py), the only mutable part.

    The pipeline reads the state's parts and changes them only through its methods. The
    read-only shortcuts below (`store`, `clock`, `journal` ...) name the parts of `state`.
    """

    def __init__(self, config: Config | None = None, *, dataset: Dataset | None = None) -> None:
        self.config = config = config or Config()
        self.spec: Spec = load_spec(config.spec_path)
        if dataset is None:
            dataset = load_dataset(config.fixtures or None, spec=self.spec)
        settings = Settings(seed=config.seed, rate_limit=config.rate_limit,
                            frozen_clock=config.frozen_clock,
                            workspace_limits=config.workspace_limits)
        # The state and the runner of its requests (layers.Runner): in this process, or one
        # worker's copy of a mock shared through Redis (replica.py). Every state of one mock
        # (the default, its sessions) is of one kind, so the route is chosen here, once.
        self.state: MockState
        if config.state is None:
            self.state = MockState(dataset, settings, journal_size=config.journal_size,
                                   journal_bytes=config.journal_bytes,
                                   response_cache=config.response_cache)
        else:  # one worker of a mock shared through Redis (replica.py)
            self.state = shared_state(config, dataset=dataset, settings=settings,
                                      spec=self.spec)
        self.cursors = CursorCodec(config.cursor_secret or secrets.token_bytes(32))
        # A copy per mock: tests that swap a handler (a planted defect) touch only their mock.
        handlers = dict(load_handlers(self.spec))
        missing = sorted(set(self.spec.by_id) - set(handlers))
        if missing:
            raise RuntimeError(f"operations without a handler: {', '.join(missing)}")
        self._fields: dict[str, tuple[str, ...]] = {}
        secret = config.storage_secret
        self.keys = keys = StorageKeys(None if secret is None else secret.encode())
        self.services = Services(self.cursors, self.fields, self.spec.resource_paths, keys,
                                 ToolSettings(config.run_tool_code, config.tool_code_dir,
                                              config.tool_limits))
        self.state.use_storage_keys(keys)  # one key and one scope per state on every replica
        if config.cursor_secret is None:  # a shared state's: kept in Redis, good on every
            self.state.use_cursors(self.cursors)  # worker (nothing to do in memory)
        self.started_at = datetime.now(UTC).isoformat(timespec="milliseconds").replace(
            "+00:00", "Z")  # wall time: when the default session was created
        caps: dict[str, Any] = {
            "max_sessions": config.max_sessions, "max_change_bytes": config.max_session_memory,
            "idle_seconds": config.session_idle_seconds, "create_on_use": config.sessions_on_use}
        self.sessions: SessionRegistry
        if config.state is None:
            self.sessions = Sessions(self.state, self._new_state, **caps)
        else:  # sessions and snapshots in Redis too
            self.sessions = shared_sessions(self.state, config, caps, keys)
        self.core = Core(self.spec, config, handlers, self.services, self.state, self.sessions,
                         SharedSteps())
        self.layers = Layers(self.core)
        self._stub_check: SelfCheck | None = None  # check_stub's, when self-check is off
        self.runner: Runner = (LocalRunner(self)
                               if config.state is None else Replica(self.core, self.layers))
        # The one route (module docstring), the runner's: bound once, nothing chosen per
        # request (the quiet in-memory path is the benchmarked one).
        self.serve = self.runner.serve

    def _new_state(self, name: str, settings: Settings | None,
                   snapshot: StateSnapshot | None) -> MockState:
        """A session's state: over the default state's dataset and settings, or forked from
        a snapshot (its records, ids and settings)."""
        if snapshot is not None:
            state = MockState(snapshot.shared, settings or snapshot.settings, name=name,
                              base=snapshot.base, journal_size=self.config.journal_size,
                              journal_bytes=self.config.journal_bytes,
                              response_cache=self.config.response_cache)
        else:
            state = MockState(self.state.shared, settings or self.state.settings, name=name,
                              journal_size=self.config.journal_size,
                              journal_bytes=self.config.journal_bytes,
                              response_cache=self.config.response_cache)
        state.seal(self.keys, self.keys.scope(name))  # its own ids and file URLs (H2, H21)
        return state

    # -- helpers the handlers use -----------------------------------------------------------

    def fields(self, schema: str) -> tuple[str, ...]:
        found = self._fields.get(schema)
        if found is None:
            found = self._fields[schema] = self.spec.schema_fields(schema)
        return found

    def reset(self) -> None:
        """The state back to its dataset (`MockState.reset`)."""
        self.state.reset()

    # -- read-only shortcuts to the state's parts (change them through `state`'s methods) ---

    @property
    def store(self) -> Store:
        return self.state.store

    @property
    def clock(self) -> Clock:
        return self.state.clock

    @property
    def journal(self) -> JournalPort:
        return self.state.journal

    @property
    def faults(self) -> Faults:
        return self.state.faults

    @property
    def limiter(self) -> LimiterPort:
        return self.state.limiter

    @property
    def tokens(self) -> TokenRegistry:
        return self.state.tokens

    @property
    def dataset(self) -> Dataset:
        return self.state.dataset

    @property
    def cache(self) -> ResponseCache:
        return self.state.cache

    @property
    def files(self) -> FileStore:
        return self.state.files

    def check_fault(self, method: str | None, path: str | None) -> None:
        """ValueError naming the field when a fault rule with this method and path could
        never fire on the document's operations (faults.fault_target_problem)."""
        problem = fault_target_problem(
            ((op.method, op.path) for op in self.spec.operations), method, path)
        if problem is not None:
            field_name, message = problem
            raise ValueError(f"field '{field_name}': {message}")

    def check_stub(self, method: str, path: str, status: int, body: Any,
                   headers: dict[str, str]) -> None:
        """ValueError naming the field when a stub's answer is not one the document allows
        (decision W4): the path must name one operation (exact or a template, not a prefix),
        the status be documented for it, the body its closed response schema (as the
        self-check holds the mock's own answers) and its documented headers present."""
        found = None if path.endswith("*") else self.router.match(path.rstrip("/") or "/")
        operation = None if found is None else found[0].get(method.upper())
        if operation is None:
            raise ValueError(f"field 'path': a stub checked against the document needs the "
                             f"path of one operation, exact or a template ({method.upper()} "
                             f"{path!r} is not); validate=false stubs it unchecked")
        if status not in operation.responses:
            documented = ", ".join(map(str, sorted(operation.responses)))
            raise ValueError(f"field 'status': {status} is not documented for "
                             f"{operation.operation_id} ({documented}); validate=false "
                             "sends it anyway, marked off-contract")
        if body is None and operation.response_schema(status) is None:
            return
        checker = self.core.selfcheck or self._stub_check
        if checker is None:
            checker = self._stub_check = SelfCheck(self.spec)
        try:
            checker.check(operation, status, orjson.dumps(body), headers)
        except ResponseContractViolation as exc:
            raise ValueError(f"field 'json': not an answer {operation.operation_id} may give "
                             f"with {status}: {'; '.join(exc.errors)}; validate=false sends "
                             "it anyway, marked off-contract") from None

    def state_for(self, scope: Scope) -> MockState:
        """The state a request addresses: its session's (set by `Application`), or the
        default."""
        return scope.get("mock.state") or self.state

    # -- the core's parts (fixed while the server runs; `handlers` may be swapped) -----------

    @property
    def handlers(self) -> dict[str, Any]:
        return self.core.handlers

    @handlers.setter
    def handlers(self, handlers: dict[str, Any]) -> None:
        self.core.handlers = handlers

    @property
    def router(self) -> Router:
        return self.core.router

    @property
    def validators(self) -> dict[str, RequestValidator]:
        return self.core.validators

    @property
    def selfcheck(self) -> SelfCheck | None:
        return self.core.selfcheck

    @property
    def base_url(self) -> str:
        return self.core.base_url

    def base_url_of(self, state: MockState) -> str:
        """Where a state is served (URLs handed out by handlers point there)."""
        return self.core.base_url_of(state)

    # -- the pipeline -----------------------------------------------------------------------
    #
    # The API path works on the raw ASGI scope: no Request or Response objects, headers read
    # from the scope's list in one pass, the answer sent as two ASGI messages. It is the
    # benchmarked path, and a bare Starlette app serving fixed bytes is the yardstick.
    #
    # Only a request body is awaited (besides a fault's delay, a shared state's round trip and
    # sending the answer): it is read first, for the methods that carry one, and the core is
    # synchronous. A read that failed (413, a disconnect) is kept and raised where the body is
    # used, so what is refused before that point (401, 403, 400 ...) is still answered first.

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """The mock as an ASGI app: `serve` (the runner's route)."""
        await self.serve(scope, receive, send)


class LocalRunner:
    """The route of a request on a state held in this process (layers.Runner): the body,
    the fault layer, the core (or robustness mode's layer in its place), the journal and
    request log, the answer sent. The quiet path (no fault rule, no plan, no request log)
    runs the bare core and one journal call."""

    def __init__(self, mock: MockApp) -> None:
        self.mock = mock  # robustness mode's layer reads its core and self-check
        self.core = mock.core
        self.layers = mock.layers
        self.config = mock.config
        self.state = mock.state

    async def serve(self, scope: Scope, receive: Receive, send: Send,
                    scanned: Scanned | None = None) -> None:
        """Answer one API request: the one route (module docstring). `scanned`: the header
        pass (exchange.scan_headers) when the caller made it already; the state addressed is
        the scope's `mock.state` (a session, set by the served `Application`) or the default."""
        state = scope.get("mock.state") or self.state
        ex = Exchange(scope, state, time.perf_counter(), scanned)
        if ex.method in BODY_METHODS:
            await read_body(ex, receive, self.config.max_body_bytes)
        layers = self.layers
        if state.faults.rules:
            await layers.fault(ex)
        if ex.effect is None or not layers.injected(ex):
            if state.variations is None:
                ex.offload = True
                self.core.answer(ex)
                if ex.deferred is not None:  # a custom tool's run, off the event loop
                    await anyio.to_thread.run_sync(self.core.complete, ex)
            else:  # robustness mode's layer (robust/runtime.py), in the core's place
                await state.variations.answer(self.mock, ex)
        logged = self.config.request_log
        if state.journal.enabled or logged:  # after: journal, log
            latency_ms = (time.perf_counter() - ex.started) * 1000
            entry = layers.observed(ex, latency_ms)
            if entry is not None:
                state.record_request(entry, ex.varied)
            if logged:
                layers.log(ex, latency_ms)
        # (exchange.send_answer's lines, inline: the benchmarked path awaits nothing more)
        if ex.effect is None:
            await send({"type": "http.response.start", "status": ex.status,
                        "headers": ex.headers})
            body = ex.response
            if len(body) <= SEND_SLICE:
                await send({"type": "http.response.body", "body": body})
            else:  # a large body in slices: the server copies and drains each in turn (H38)
                await send_slices(body, send)
        else:  # as the fault's effect sends it (a dropped connection: half an answer)
            await ex.effect.send(ex.status, ex.response, ex.headers, send)
