"""What a handler sees of a request: validated inputs, the caller, the resolved workspace and
resource, and the helpers every handler needs (ids, time, pages, shaping by schema)."""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import orjson

from ..data.tables import TABLES
from ..openapi.spec import Operation
from .auth import Principal
from .errors import NotFound
from .pagination import CursorCodec, Page, encoded, fingerprint, walk
from .progression import KINDS, mode_of
from .progression import view as _view
from .storage import StorageKeys
from .store import Record, Store
from .toolexec import LIMITS, Limits

__all__ = ["Context", "Deferred", "Services", "ToolSettings", "progression_view", "public"]


def public(record: Record) -> dict[str, Any]:
    """A record less its internal fields (`_x`, allowed in fixtures, never sent)."""
    return {k: v for k, v in record.items() if not k.startswith("_")}


def progression_view(store: Store, table: str) -> Callable[[Record], Record]:
    """`table`'s records as the API shows them now (progression.py), the session's mode and
    the clock read once for a page, and only when one of them moves."""
    kind = KINDS[table]
    found: list[Any] = []  # the modes and the instant, read at the first record that moves

    def now(record: Record) -> Record:
        if record.get("_progress") is None and not (
                kind.moving(record.get(kind.field)) and kind.applies(record)):
            return record  # settled: no clock read (the answer may be cached)
        if not found:
            found.extend((mode_of(store, table), store.clock.now_ms()))
        return _view(store, table, record, found[0], found[1])

    return now


def _as_now(where: Callable[[Record], bool], now: Callable[[Record], Record]
            ) -> Callable[[Record], bool]:
    """`where` tested on records as they stand now (`progression_view`)."""
    return lambda record: where(now(record))


class ToolSettings:
    """How custom tools' code runs (toolexec.py): whether it runs at all by default (a state
    may say otherwise: `MockState.run_tool_code`), the directory of `serve --tool-code-dir`
    (`<name>.py` / `<name>.js`, read on every run) and the limits of a run."""

    __slots__ = ("code_dir", "enabled", "limits")

    def __init__(self, enabled: bool = False, code_dir: Path | None = None,
                 limits: Limits = LIMITS) -> None:
        self.enabled = enabled
        self.code_dir = code_dir
        self.limits = limits


class Deferred:
    """A handler's answer that takes time (a custom tool's run): `run()` blocks, touches no
    state, and returns the payload. The core answers it off the event loop and outside the
    store's lock where the pipeline allows it (`Exchange.offload`), else in place."""

    __slots__ = ("run",)

    def __init__(self, run: Callable[[], Any]) -> None:
        self.run = run

    def body(self) -> bytes | bytearray:
        """The answer's bytes: its payload, encoded (`Core.complete`, off the loop)."""
        return orjson.dumps(self.run())


class HeavyPage(Deferred):
    """A heavy page (H38): `run()` gives its envelope (answered in place where the pipeline
    runs deferred answers in place), `body()` its bytes built item by item off the loop."""

    __slots__ = ()

    def body(self) -> bytearray:
        return heavy_page(self.run())


# A page whose records noted as big (store.BIG_RECORD_BYTES or more each) add up to this many
# bytes is encoded off the event loop, as a deferred answer is (DECISIONS H38): a few
# milliseconds of encoding at most stay on the loop.
HEAVY_PAGE_BYTES = 1024 * 1024


def heavy_page(envelope: dict[str, Any]) -> bytearray:
    """A heavy page's body, the bytes `orjson.dumps(envelope)` would give, built one item at a
    time (in a worker thread: no single step holds the interpreter, so the event loop has its
    turn between items; no copy of the whole either: `MockApp.serve` sends it in slices)."""
    items = envelope["data"]
    body = bytearray(b'{"data":[')
    for i, item in enumerate(items):
        if i:
            body += b","
        body += orjson.dumps(item)
    rest = orjson.dumps({k: v for k, v in envelope.items() if k != "data"})
    body += b"]," + rest[1:] if len(rest) > 2 else b"]}"
    return body


class Services:
    """What handlers need of the server besides the request and the store, fixed while it
    runs: cursor signing, the document's schema fields and resource paths, the storage
    secret, how custom tools' code runs."""

    __slots__ = ("cursors", "fields", "resource_paths", "storage", "tools")

    def __init__(self, cursors: CursorCodec, fields: Callable[[str], tuple[str, ...]],
                 resource_paths: Sequence[str], storage: StorageKeys | None = None,
                 tools: ToolSettings | None = None) -> None:
        self.cursors = cursors
        self.storage = storage or StorageKeys()  # upload URLs, storage ids, file URLs
        self.fields = fields  # schema name -> its property names (from the document)
        self.resource_paths = tuple(resource_paths)
        self.tools = tools or ToolSettings()


class Context:
    """One request as a handler sees it: the validated inputs, the caller, the resolved
    workspace and resource, the store of the state it addresses, and `base_url` (where this
    state is served: file URLs handed out point there)."""

    __slots__ = ("_run_code", "base_url", "body", "operation", "path", "principal", "query",
                 "resource", "services", "store", "workspace_id")

    def __init__(
        self,
        services: Services,
        store: Store,
        base_url: str,
        operation: Operation,
        principal: Principal,
        path: dict[str, Any],
        query: dict[str, Any],
        body: Any,
        workspace_id: str | None,
        resource: Record | None,
        run_code: bool | None = None,
    ) -> None:
        self.services = services
        self._run_code = run_code  # the state's `run_tool_code` (None: the server's default)
        self.store = store
        self.base_url = base_url
        self.operation = operation
        self.principal = principal
        self.path = path
        self.query = query
        self.body = body
        self.workspace_id = workspace_id
        self.resource = resource

    @property
    def run_code(self) -> bool:
        """Whether custom tools' code runs for this request's state (read by the two handlers
        that need it, not worked out for every request)."""
        run_code = self._run_code
        return self.services.tools.enabled if run_code is None else run_code

    # -- identities and time --------------------------------------------------------------

    def now(self) -> str:
        return self.store.now()

    def new_id(self, table: str) -> str:
        return self.store.new_id(TABLES[table].prefix)

    @property
    def resource_paths(self) -> tuple[str, ...]:
        """The document's resource paths (the API index)."""
        return self.services.resource_paths

    # -- reading --------------------------------------------------------------------------

    def require(self, table: str, key: str | None, what: str) -> Record:
        """The record of `table` with this key in the request's workspace, or 404."""
        record = self.store.get(table, key) if key is not None else None
        ws_field = TABLES[table].workspace_field
        if record is None or (
            ws_field is not None and self.workspace_id is not None
            and record.get(ws_field) != self.workspace_id
        ):
            raise NotFound(f"{what} {key!r} not found")
        return record

    def shape(self, record: Record, schema: str | None = None) -> dict[str, Any]:
        """The record projected onto the properties of a document schema (drops `_` fields);
        by default the schema the operation's success response sends (`data_schema`)."""
        name = schema or self.operation.data_schema
        assert name is not None, f"{self.operation.operation_id} sends no named schema"
        return {field: record[field] for field in self.services.fields(name) if field in record}

    def user(self) -> Record:
        """The workspace user the calling token belongs to."""
        user = self.store.get("users", self.principal.user_id)
        if user is None:  # refused at load (fixtures.py); only a user deleted since
            raise NotFound(f"the token's user {self.principal.user_id!r} no longer exists")
        return user

    def page(
        self,
        table: str | None = None,
        *,
        partition: dict[str, Any] | None = None,
        order: Sequence[str] | None = None,
        descending: bool | None = None,
        where: Callable[[Record], bool] | None = None,
        render: Callable[[Record], Any] | str | None = None,
        limit: int | None = None,
        cursor: str | None = None,
        bound_to: Any = None,
        extra: dict[str, Any] | None = None,
    ) -> Any:
        """A `{data, next_cursor, has_more}` page of `table`, walked over a sorted index (a
        `Deferred` of it when its records are heavy: encoded off the event loop, H38).

        `table` and `partition` (which selects the records, e.g. {"workspace_id": ws}) are by
        default the list's declaration in the document (`x-mock-list`); `order` names the sort
        fields (the key breaks ties) and `descending` the direction, by default the document's
        (`ordering()`: `x-order` and the request's `order`); `where` filters further; `render`
        turns a record into what is sent (a schema name projects onto that schema; by default
        the operation's `data_schema`, from the document). The cursor is bound to the
        operation, path and query (and `bound_to`, for bodies that carry filters).
        """
        if table is None or partition is None:  # the document's x-mock-list
            listing = self.operation.listing
            assert listing is not None, f"{self.operation.operation_id} declares no x-mock-list"
            if table is None:
                table = listing.table
            if partition is None:
                if listing.of == "workspace":
                    partition = {listing.partition: self.workspace_id}
                else:
                    resource = self.resource
                    assert resource is not None, f"{self.operation.operation_id}: no resource"
                    partition = {listing.partition: resource["id"]}
        if order is None:
            order, stated_descending = self.ordering()
            if descending is None:
                descending = stated_descending
        elif descending is None:
            descending = self.ordering()[1]
        index = self.store.index(table, tuple(partition), tuple(order))
        fp = fingerprint(self.operation.operation_id, self.path, self.query, bound_to)
        if cursor is None:
            cursor = self.query.get("cursor")
        after = self.services.cursors.decode(cursor, fp) if cursor else None
        now = None
        if table in KINDS:  # work that progresses: filtered and shown as it stands now
            now = progression_view(self.store, table)
            if where is not None:
                where = _as_now(where, now)
        found = walk(
            self.store, table, index, tuple(partition.values()),
            limit=limit if limit is not None else self.query["limit"],
            after=after, descending=descending, where=where,
        )
        if render is None and self.operation.data_schema is not None:
            render = self.operation.data_schema
        items: list[Any]
        if now is not None or self.store.big:  # a store holding no big record: one test
            page = self.moved_or_heavy(found, now, render, fp, extra)
            if page is not None:
                return page
        if isinstance(render, str):
            # Encoded once per record version and schema (pagination.encoded), not per request.
            items = encoded(found.items, self.services.fields(render), found)
        elif render is not None:
            items = list(map(render, found.items))  # (no comprehension: no cell for `render`)
        else:  # records as stored, less their internal (`_`) fields
            items = encoded(found.items, None, found)
        # `envelope`, inline: no call on the quiet path
        next_cursor = self.services.cursors.encode(fp, found.next_key) if found.next_key else None
        envelope = {"data": items, "next_cursor": next_cursor, "has_more": next_cursor is not None}
        if extra:
            envelope.update(extra)
        return envelope

    def moved_or_heavy(self, found: Page, now: Callable[[Record], Record] | None,
                       render: Callable[[Record], Any] | str | None, fp: str,
                       extra: dict[str, Any] | None) -> Any:
        """The page of `found` when it is heavy (a `HeavyPage`) or some record on it moved
        (`now`: progression_view); None when neither: `page` takes the usual way. Out of
        `page`, so that the quiet path makes no closure cells."""
        shown = found.items if now is None else [now(r) for r in found.items]
        big = self.store.big
        if big and sum(big.get(id(r), 0) for r in found.items) >= HEAVY_PAGE_BYTES:
            # Heavy (H38): shaped here (references to the records' values, no bytes copied),
            # encoded off the event loop by `heavy_page`, as a deferred answer is.
            envelope = self.envelope(self.shaped(shown, render), fp, found.next_key, extra)
            return HeavyPage(lambda: envelope)
        if shown is not found.items and any(map(operator.is_not, shown, found.items)):
            # Some record moved: shown as it stands now (not cached: it changes as the clock
            # moves). A page of settled records takes the usual way.
            return self.envelope(self.shaped(shown, render), fp, found.next_key, extra)
        return None

    def shaped(self, records: list[Record], render: Callable[[Record], Any] | str | None
               ) -> list[Any]:
        """Records as a page shows them, not encoded: projected onto `render`'s schema, or
        rendered by it, or as stored less their internal fields (None)."""
        fields = self.services.fields(render) if isinstance(render, str) else None
        if fields is not None:
            return [{f: r[f] for f in fields if f in r} for r in records]
        if callable(render):
            return [render(r) for r in records]
        return [public(r) for r in records]

    def envelope(self, items: list[Any], fp: str, next_key: tuple[Any, ...] | None,
                 extra: dict[str, Any] | None) -> dict[str, Any]:
        """A page's `{data, next_cursor, has_more}` (and `extra`)."""
        next_cursor = self.services.cursors.encode(fp, next_key) if next_key else None
        envelope = {"data": items, "next_cursor": next_cursor, "has_more": next_cursor is not None}
        if extra:
            envelope.update(extra)
        return envelope

    def ordering(self) -> tuple[tuple[str, ...], bool]:
        """The list's sort fields and direction, from the document's `x-order`: the fields
        for the request's `sort_by` (`by-sort`) or the fixed `by`, and the request's `order`
        where the operation documents one (its default filled in), else the stated direction."""
        order = self.operation.order
        assert order is not None, f"{self.operation.operation_id} states no x-order"
        fields = order.fields(self.query.get("sort_by"))
        assert fields, f"{self.operation.operation_id}: no x-order field for this sort_by"
        return fields, (self.query.get("order") or order.direction) == "desc"

    @property
    def descending(self) -> bool:
        """The request's `order` (its default comes from the document)."""
        return bool(self.query["order"] == "desc")
