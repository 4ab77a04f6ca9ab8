"""Deliberately broken variants of the mock: one planted defect each, for the gate to catch."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson

from mockserver.engine.app import MockApp
from mockserver.engine.context import Context
from mockserver.engine.errors import BadRequest, Conflict
from mockserver.engine.handlers._common import where_filtered

Scope = dict[str, Any]
Handler = Callable[[Context], Any]


def override(mock: MockApp, operation_id: str, wrap: Callable[[Handler], Handler]) -> None:
    """Replace one handler of this mock only (its registry is shared: copy it first)."""
    mock.handlers = dict(mock.handlers)
    mock.handlers[operation_id] = wrap(mock.handlers[operation_id])


class Rewrite:
    """ASGI wrapper: rewrite request headers and/or whole responses."""

    def __init__(self, app: Any, *,
                 request: Callable[[dict[str, str]], dict[str, str]] | None = None,
                 response: Callable[[int, dict[str, str], bytes], tuple[int, dict[str, str], bytes]]
                 | None = None) -> None:
        self.app = app
        self.request = request
        self.response = response

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if self.request is not None:
            headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
            headers = self.request(headers)
            scope = {**scope, "headers": [(k.encode(), v.encode()) for k, v in headers.items()]}
        if self.response is None:
            await self.app(scope, receive, send)
            return
        started: dict[str, Any] = {}
        chunks: list[bytes] = []

        async def capture(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                started.update(message)
            elif message["type"] == "http.response.body":
                chunks.append(message.get("body", b""))
                if not message.get("more_body"):
                    assert self.response is not None
                    headers = {k.decode().lower(): v.decode() for k, v in started["headers"]}
                    status, headers, body = self.response(started["status"], headers,
                                                          b"".join(chunks))
                    headers["content-length"] = str(len(body))
                    await send({"type": "http.response.start", "status": status,
                                "headers": [(k.encode(), v.encode()) for k, v in headers.items()]})
                    await send({"type": "http.response.body", "body": body})

        await self.app(scope, receive, capture)


# -- planted defects -----------------------------------------------------------------------

def duplicate_across_pages(mock: MockApp) -> None:
    """listSkills: every later page starts with the first page's first item again."""
    def wrap(original: Handler) -> Handler:
        def handler(ctx: Context) -> Any:
            result = original(ctx)
            if ctx.query.get("cursor") is not None and result["data"]:
                cursor = ctx.query.pop("cursor")
                first = original(ctx)
                ctx.query["cursor"] = cursor
                result["data"][0] = first["data"][0]
            return result
        return handler
    override(mock, "listSkills", wrap)


def later_pages_fail(mock: MockApp) -> None:
    """listSkills: every page after the first answers 500 (an unexpected error)."""
    def wrap(original: Handler) -> Handler:
        def handler(ctx: Context) -> Any:
            if ctx.query.get("cursor") is not None:
                raise RuntimeError("planted: a later page fails")
            return original(ctx)
        return handler
    override(mock, "listSkills", wrap)


def page_over_limit(mock: MockApp) -> None:
    """listSkills: each page holds one item more than `limit` asks for."""
    def wrap(original: Handler) -> Handler:
        def handler(ctx: Context) -> Any:
            ctx.query["limit"] += 1
            return original(ctx)
        return handler
    override(mock, "listSkills", wrap)


def no_more_beside_cursor(mock: MockApp) -> None:
    """listSkills: `has_more` is false on every page, while `next_cursor` still points on."""
    def wrap(original: Handler) -> Handler:
        def handler(ctx: Context) -> Any:
            result = original(ctx)
            result["has_more"] = False
            return result
        return handler
    override(mock, "listSkills", wrap)


def forged_cursor_is_first_page(mock: MockApp) -> None:
    """listSkills: a cursor the server never issued reads as the first page, not a 400."""
    def wrap(original: Handler) -> Handler:
        def handler(ctx: Context) -> Any:
            try:
                return original(ctx)
            except BadRequest:
                if ctx.query.pop("cursor", None) is None:
                    raise
                return original(ctx)
        return handler
    override(mock, "listSkills", wrap)


def out_of_range_limit_ignored(app: Any) -> Any:
    """GET /v1/skills: `limit` outside 1..100 is dropped (the default page) instead of refused."""
    def valid(part: bytes) -> bool:
        value = part.partition(b"=")[2]
        return not part.startswith(b"limit=") or (value.isdigit() and 1 <= int(value) <= 100)

    async def wrapped(scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"] == "/v1/skills":
            query = [part for part in scope["query_string"].split(b"&") if valid(part)]
            scope = {**scope, "query_string": b"&".join(query)}
        await app(scope, receive, send)
    return wrapped


def ignore_scope_alone(mock: MockApp) -> None:
    """updateKnowledgeNode: entity_ids sent alone are silently ignored."""
    def wrap(original: Handler) -> Handler:
        def handler(ctx: Context) -> Any:
            if set(ctx.body or {}) == {"entity_ids"}:
                assert ctx.resource is not None
                return {"data": ctx.shape(ctx.resource, "KnowledgeNode")}
            return original(ctx)
        return handler
    override(mock, "updateKnowledgeNode", wrap)


def accept_scope_with_other_fields(mock: MockApp) -> None:
    """updateKnowledgeNode: entity_ids with another field applies the other field."""
    def wrap(original: Handler) -> Handler:
        def handler(ctx: Context) -> Any:
            body = dict(ctx.body or {})
            if "entity_ids" in body and len(body) > 1:
                body.pop("entity_ids")
                ctx.body = body
            return original(ctx)
        return handler
    override(mock, "updateKnowledgeNode", wrap)


def bump_version_on_description(mock: MockApp) -> None:
    def wrap(original: Handler) -> Handler:
        def handler(ctx: Context) -> Any:
            result = original(ctx)
            if "description" in (ctx.body or {}) and "code" not in (ctx.body or {}):
                record = ctx.store.get("custom_tools", result["data"]["id"])
                assert record is not None
                record = ctx.store.update("custom_tools", record["id"],
                                          {"version": record["version"] + 1})
                result = {"data": ctx.shape(record, "CustomTool")}
            return result
        return handler
    override(mock, "updateCustomTool", wrap)


def close_any_ticket(mock: MockApp) -> None:
    def wrap(original: Handler) -> Handler:
        def handler(ctx: Context) -> Any:
            assert ctx.resource is not None
            now = ctx.now()
            ticket = ctx.store.update("tickets", ctx.resource["id"],
                                      {"status": "closed", "closed_at": now, "updated_at": now})
            return {"data": ctx.shape(ticket, "Ticket")}
        return handler
    override(mock, "closeTicket", wrap)


def skip_reviewer(mock: MockApp) -> None:
    def wrap(original: Handler) -> Handler:
        def handler(ctx: Context) -> Any:
            result = original(ctx)
            record = ctx.store.update("escalations", result["data"]["id"], {"reviewed_by": None})
            return {"data": ctx.shape(record, "Escalation")}
        return handler
    override(mock, "resolveEscalation", wrap)


def write_not_visible(mock: MockApp) -> None:
    """updateSkill answers with the change but never stores it."""
    def wrap(original: Handler) -> Handler:
        def handler(ctx: Context) -> Any:
            assert ctx.resource is not None
            data = ctx.shape(ctx.resource, "Skill")
            data.update({k: v for k, v in (ctx.body or {}).items() if k in data})
            return {"data": data}
        return handler
    override(mock, "updateSkill", wrap)


def create_keeps_nothing(mock: MockApp) -> None:
    """createAgent answers 201 with the new agent, its id included, but keeps nothing: a GET,
    PATCH or DELETE on that id answers 404."""
    def wrap(original: Handler) -> Handler:
        def handler(ctx: Context) -> Any:
            result = original(ctx)
            ctx.store.delete("agents", result["data"]["id"])
            return result
        return handler
    override(mock, "createAgent", wrap)


def drop_required_field(mock: MockApp) -> None:
    """getSkill: the response lacks a required property (a schema violation)."""
    def wrap(original: Handler) -> Handler:
        def handler(ctx: Context) -> Any:
            result = original(ctx)
            result["data"].pop("name", None)
            return result
        return handler
    override(mock, "getSkill", wrap)


def refuse_limit_1(mock: MockApp) -> None:
    """listSkills: limit=1 refused with 409, a status the operation does not document."""
    def wrap(original: Handler) -> Handler:
        def handler(ctx: Context) -> Any:
            if ctx.query.get("limit") == 1:
                raise Conflict("limit 1 is not supported")
            return original(ctx)
        return handler
    override(mock, "listSkills", wrap)


def error_with_code(app: Any) -> Rewrite:
    """Every 4xx body gains a `code` key: not exactly {error: string}."""
    def response(status: int, headers: dict[str, str], body: bytes) -> tuple[int, dict[str, str], bytes]:
        if 400 <= status < 500:
            data = orjson.loads(body)
            data["code"] = status
            body = orjson.dumps(data)
        return status, headers, body
    return Rewrite(app, response=response)


def without_retry_after(app: Any) -> Rewrite:
    def response(status: int, headers: dict[str, str], body: bytes) -> tuple[int, dict[str, str], bytes]:
        headers.pop("retry-after", None)
        return status, headers, body
    return Rewrite(app, response=response)


def token_swap(app: Any, swap: dict[str | None, str]) -> Rewrite:
    """Treat some tokens (or no token: key None) as another: scoping/role/authentication ignored."""
    def request(headers: dict[str, str]) -> dict[str, str]:
        current = headers.get("authorization")
        token = current.removeprefix("Bearer ") if current else None
        if token in swap:
            headers["authorization"] = f"Bearer {swap[token]}"
        return headers
    return Rewrite(app, request=request)


# -- planted defects against the laws --------------------------------------------------------

def ignore_order(mock: MockApp) -> None:
    """listTickets: `order` ignored, always newest activity first."""
    def wrap(original: Handler) -> Handler:
        def handler(ctx: Context) -> Any:
            ctx.query["order"] = "desc"
            return original(ctx)
        return handler
    override(mock, "listTickets", wrap)


def default_page_of_50(app: Any) -> Any:
    """GET /v1/contacts: 50 items when `limit` is omitted (the description says 20)."""
    async def wrapped(scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"] == "/v1/contacts" and \
                b"limit=" not in scope["query_string"]:
            query = scope["query_string"]
            scope = {**scope, "query_string": query + (b"&" if query else b"") + b"limit=50"}
        await app(scope, receive, send)
    return wrapped


def resolve_as_reviewed(mock: MockApp) -> None:
    """resolveEscalation: an escalation resolved without a status is recorded `reviewed`."""
    # The mock fills the document's default (`resolved`) before the handler runs; this server
    # has a default of its own, so it sees the body as sent.
    mock.validators["resolveEscalation"]._body_defaults = None

    def wrap(original: Handler) -> Handler:
        def handler(ctx: Context) -> Any:
            if "status" not in (ctx.body or {}):
                ctx.body = {**(ctx.body or {}), "status": "reviewed"}
            return original(ctx)
        return handler
    override(mock, "resolveEscalation", wrap)


def nodes_by_title_alone(mock: MockApp) -> None:
    """listKnowledgeNodes: sorted by title alone, not by depth then title (the stated order)."""
    def handler(ctx: Context) -> Any:
        return ctx.page("kb_nodes", partition={"workspace_id": ctx.workspace_id},
                        order=("title",), descending=False, where=where_filtered(ctx),
                        render="KnowledgeNode")
    mock.handlers = dict(mock.handlers)
    mock.handlers["listKnowledgeNodes"] = handler


def open_filter_leaks(mock: MockApp) -> None:
    """listTickets: `status=open` also returns resolved tickets."""
    def wrap(original: Handler) -> Handler:
        def handler(ctx: Context) -> Any:
            if ctx.query.get("status") == "open":
                ctx.query.pop("status")
                result = original(ctx)
                ctx.query["status"] = "open"
                return result
            return original(ctx)
        return handler
    override(mock, "listTickets", wrap)


def list_leaks_other_workspace(mock: MockApp) -> None:
    """listSkills: the first item of another workspace is appended to every page."""
    def wrap(original: Handler) -> Handler:
        def handler(ctx: Context) -> Any:
            result = original(ctx)
            other = next((r for r in ctx.store.all("skills")
                          if r["workspace_id"] != ctx.workspace_id), None)
            if other is not None:
                result["data"].append(ctx.shape(other, "Skill"))
            return result
        return handler
    override(mock, "listSkills", wrap)


def delete_does_not_stick(mock: MockApp) -> None:
    """deleteAgent: answers as deleted but keeps the agent."""
    def wrap(original: Handler) -> Handler:
        def handler(ctx: Context) -> Any:
            assert ctx.resource is not None
            return {"data": {"id": ctx.resource["id"], "deleted": True}}
        return handler
    override(mock, "deleteAgent", wrap)


def events_through_any_workflow(mock: MockApp) -> None:
    """listWorkflowExecutionEvents: an execution's events read through any workflow."""
    def handler(ctx: Context) -> Any:
        return ctx.page("workflow_events", partition={"execution_id": ctx.path["execution_id"]},
                        order=("sequence",), descending=False, render="WorkflowExecutionEvent")
    mock.handlers = dict(mock.handlers)
    mock.handlers["listWorkflowExecutionEvents"] = handler


def note_through_any_ticket(mock: MockApp) -> None:
    """updateTicketNote: a note edited through any ticket of the workspace, not only its own."""
    original = mock.handlers["updateTicketNote"]

    def handler(ctx: Context) -> Any:
        note = ctx.store.get("ticket_notes", ctx.path["note_id"])
        if note is not None and ctx.resource is not None:
            ctx.resource = ctx.store.get("tickets", note["ticket_id"]) or ctx.resource
        return original(ctx)
    mock.handlers = dict(mock.handlers)
    mock.handlers["updateTicketNote"] = handler


def _json_or_none(raw: bytes) -> Any:
    """A request body parsed as JSON, or None when it is not JSON."""
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None


async def _request_body(receive: Any) -> bytes:
    """A request's whole body, read from the ASGI `receive`."""
    chunks = []
    while True:
        message = await receive()
        chunks.append(message.get("body", b""))
        if not message.get("more_body"):
            return b"".join(chunks)


class HalfAppliedPatch:
    """ASGI wrapper: a PATCH to a skill whose body the mock refuses first applies the fields
    that are valid on their own (a server that validates field by field while writing)."""

    method, prefix = "PATCH", "/v1/skills/"

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != self.method or \
                not scope["path"].startswith(self.prefix):
            await self.app(scope, receive, send)
            return
        raw = await _request_body(receive)
        body = _json_or_none(raw)
        if isinstance(body, dict):
            for name, value in body.items():
                part = orjson.dumps({name: value})
                await self.app(_with_length(scope, len(part)), _once(part), _discard)
        await self.app(scope, _once(raw), send)


class HalfAppliedAction(HalfAppliedPatch):
    """ASGI wrapper: an action on a ticket (a reply, a note, resolve ...) whose body the mock
    refuses first applies the fields that are valid on their own: a refused reply is sent."""

    method, prefix = "POST", "/v1/tickets/"


class CounterOnRefusedAction:
    """ASGI wrapper: a ticket's resolve, reopen or close that is refused with a 4xx has
    already flipped the AI pause of the ticket's contact (another record, which the action
    itself leaves as it was)."""

    def __init__(self, app: Any) -> None:
        self.app = app

    def ticket(self, method: str, parts: list[str]) -> str | None:
        """The id of the ticket whose contact a refused request flips, if it is one."""
        if method == "POST" and len(parts) == 5 and parts[2] == "tickets" and \
                parts[4] in ("resolve", "reopen", "close"):
            return parts[3]
        return None

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        parts = scope["path"].split("/") if scope["type"] == "http" else []
        ticket_id = self.ticket(scope.get("method", ""), parts)
        if ticket_id is None:
            await self.app(scope, receive, send)
            return
        sent: list[dict[str, Any]] = []

        async def hold(message: dict[str, Any]) -> None:
            sent.append(message)
        await self.app(scope, receive, hold)
        if 400 <= sent[0]["status"] < 500:
            _, ticket = await _internal(self.app, scope, "GET", f"/v1/tickets/{ticket_id}")
            contact_id = orjson.loads(ticket)["data"]["contact_id"]
            _, contact = await _internal(self.app, scope, "GET", f"/v1/contacts/{contact_id}")
            paused = orjson.loads(contact)["data"]["ai_paused"]
            await _internal(self.app, scope, "POST", f"/v1/contacts/{contact_id}/"
                            f"{'resume-ai' if paused else 'pause-ai'}")
        for message in sent:
            await send(message)


class CounterOnRefusedPatch(CounterOnRefusedAction):
    """ASGI wrapper: a PATCH of a ticket note that is refused with a 4xx has already flipped
    the AI pause of the ticket's contact (a record the note refers to by `contact_id`), while
    the note itself reads as it was."""

    def ticket(self, method: str, parts: list[str]) -> str | None:
        if method == "PATCH" and len(parts) == 6 and parts[2] == "tickets" and \
                parts[4] == "notes":
            return parts[3]
        return None


class RecordOnRefusedCreate(HalfAppliedPatch):
    """ASGI wrapper: an agent create that the mock refuses (a property of the wrong type) is
    stored anyway without the property it could not take, and still answers the refusal."""

    method, prefix = "POST", "/v1/agents"

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != self.method or \
                scope["path"] != self.prefix:
            await self.app(scope, receive, send)
            return
        raw = await _request_body(receive)
        sent: list[dict[str, Any]] = []
        fresh = dict(scope)  # the mock keeps what it read of a request in its scope

        async def hold(message: dict[str, Any]) -> None:
            sent.append(message)
        await self.app(scope, _once(raw), hold)
        body = orjson.loads(raw) if 400 <= sent[0]["status"] < 500 and raw else None
        fields: dict[str, Any] = body if isinstance(body, dict) else {}
        for name in fields:
            part = orjson.dumps({k: v for k, v in fields.items() if k != name})
            if await _status(self.app, _with_length(fresh, len(part)), part) < 300:
                break
        for message in sent:
            await send(message)


async def _internal(app: Any, scope: Scope, method: str, path: str) -> tuple[int, bytes]:
    """Send one request to `app` with the caller's credentials: (status, body)."""
    headers = [(k, v) for k, v in scope["headers"] if k.lower() == b"authorization"]
    inner = {**scope, "method": method, "path": path, "raw_path": path.encode(),
             "query_string": b"", "headers": [*headers, (b"content-length", b"0")]}
    answer: dict[str, Any] = {"body": b""}

    async def keep(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            answer["status"] = message["status"]
        else:
            answer["body"] += message.get("body", b"")
    await app(inner, _once(b""), keep)
    return answer["status"], answer["body"]


async def _status(app: Any, scope: Scope, body: bytes) -> int:
    """Send `body` to `app` as `scope` says and keep only the status of the answer."""
    status: list[int] = []

    async def keep(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            status.append(message["status"])
    await app(scope, _once(body), keep)
    return status[0]


def _with_length(scope: Scope, length: int) -> Scope:
    headers = [(k, v) for k, v in scope["headers"] if k.lower() != b"content-length"]
    return {**scope, "headers": [*headers, (b"content-length", str(length).encode())]}


def _once(body: bytes) -> Any:
    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": body, "more_body": False}
    return receive


async def _discard(message: dict[str, Any]) -> None:
    return None


def refuse_invalid_with_413(app: Any) -> Any:
    """A CORRECT variant: every write refused with 400 is refused with 413 instead, where the
    operation documents 413 (a server that checks the size budget of an invalid body first)."""
    from mockserver.conform.document import Document
    doc = Document()
    guard = {(op.method, op.path) for op in doc.operations if 413 in op.responses}
    import re
    patterns = [(m, re.compile(re.sub(r"\\\{[^}]+\\\}", "[^/]+", re.escape(p)) + "$"))
                for m, p in guard]

    async def wrapped(scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or not any(
                m == scope["method"] and pat.match(scope["path"]) for m, pat in patterns):
            await app(scope, receive, send)
            return

        async def rewrite(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start" and message["status"] == 400:
                message = {**message, "status": 413}
            await send(message)
        await app(scope, receive, rewrite)
    return wrapped


def accept_any_limit(app: Any) -> Any:
    """GET /v1/skills: a `limit` outside 1..100 (or not a number) is ignored, not refused
    (and so is any cursor, so that the bad limit alone decides)."""
    def valid(part: bytes) -> bool:
        value = part.partition(b"=")[2]
        if part.startswith(b"cursor="):
            return False
        return not part.startswith(b"limit=") or (value.isdigit() and 1 <= int(value) <= 100)

    async def wrapped(scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"] == "/v1/skills":
            query = [part for part in scope["query_string"].split(b"&") if valid(part)]
            scope = {**scope, "query_string": b"&".join(query)}
        await app(scope, receive, send)
    return wrapped


def ignore_sort_by(mock: MockApp) -> None:
    """listConversations: `sort_by` ignored, always by last_message_at."""
    def wrap(original: Handler) -> Handler:
        def handler(ctx: Context) -> Any:
            ctx.query["sort_by"] = "last_message_at"
            return original(ctx)
        return handler
    override(mock, "listConversations", wrap)


def filter_drops_items(mock: MockApp) -> None:
    """listTickets: a status-filtered page loses its last item."""
    def wrap(original: Handler) -> Handler:
        def handler(ctx: Context) -> Any:
            result = original(ctx)
            if ctx.query.get("status") is not None and len(result["data"]) > 1:
                result["data"] = result["data"][:-1]
            return result
        return handler
    override(mock, "listTickets", wrap)


class AgentsCreatedIn:
    """ASGI wrapper (not a defect by itself): every agent create names `workspace` in its body.

    schemathesis generates a create's `workspace_id` at random (refused 403) and only rarely
    one the token can write to, taken from a response it saw; this made every create land in
    `workspace`, so that the stateful phase followed the create's links deterministically.
    The gate now fixes a body's `workspace_id` in its stateful phase itself (DECISIONS F8);
    this still makes sure of it for a test that depends on it."""

    def __init__(self, app: Any, workspace: str) -> None:
        self.app, self.workspace = app, workspace

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "POST" or scope["path"] != "/v1/agents":
            await self.app(scope, receive, send)
            return
        raw = await _request_body(receive)
        body = _json_or_none(raw)
        if isinstance(body, dict) and isinstance(body.get("workspace_id"), str):
            raw = orjson.dumps({**body, "workspace_id": self.workspace})
        await self.app(_with_length(scope, len(raw)), _once(raw), send)


class PinnedAgentDeletedOnCreate(AgentsCreatedIn):
    """A CORRECT server under a run that deleted a record: the first agent create in the
    workspace comes after the pinned agent `pinned` was deleted (as the run's own DELETEs may
    do), so the link from the create to `updateAgent`/`getAgent` (its id pinned by the gate to
    `pinned`) is rightly answered 404."""

    def __init__(self, app: Any, workspace: str, pinned: str) -> None:
        super().__init__(app, workspace)
        self.pinned, self.deleted = pinned, False

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if not self.deleted and scope["type"] == "http" and scope["method"] == "POST" and \
                scope["path"] == "/v1/agents":
            self.deleted = True
            await _internal(self.app, scope, "DELETE", f"/v1/agents/{self.pinned}")
        await super().__call__(scope, receive, send)


class ServerErrorOn:
    """Answers 500 (or, with `hang`, no answer for that many seconds) to the requests that
    match: `method`, a path, and every query part in `query` (bytes such as b"order=desc");
    `authorized` None matches any, False only requests without an Authorization header;
    `header` only requests carrying that header (b"x-schemathesis-testcaseid": schemathesis').
    `times` bounds how many requests meet the fault (None: all). A one-off fault on one
    family's requests, the others answered by the mock."""

    def __init__(self, app: Any, method: str, path: str, *, query: tuple[bytes, ...] = (),
                 authorized: bool | None = None, times: int | None = None,
                 hang: float | None = None, header: bytes | None = None) -> None:
        self.app, self.method, self.path, self.query = app, method, path, query
        self.header = header
        self.authorized, self.left, self.hang = authorized, times, hang

    def _matches(self, scope: Scope) -> bool:
        if scope["type"] != "http" or scope["method"] != self.method or scope["path"] != self.path:
            return False
        parts = scope["query_string"].split(b"&")
        if any(part not in parts for part in self.query):
            return False
        has_token = any(k.lower() == b"authorization" for k, _ in scope["headers"])
        if self.authorized is not None and has_token != self.authorized:
            return False
        if self.header is not None and not any(k.lower() == self.header
                                               for k, _ in scope["headers"]):
            return False
        return self.left is None or self.left > 0

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if not self._matches(scope):
            await self.app(scope, receive, send)
            return
        if self.left is not None:
            self.left -= 1
        if self.hang is not None:
            import asyncio
            await asyncio.sleep(self.hang)
        body = b'{"error": "planted: internal error"}'
        await send({"type": "http.response.start", "status": 500,
                    "headers": [(b"content-type", b"application/json"),
                                (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})
