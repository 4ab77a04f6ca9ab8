"""Knowledge base: nodes (files and folders) in a tree, structured search and a deterministic
stand-in for semantic search.

Tree invariants the handlers keep: `ancestors` lists the ids from the root down to the parent,
`depth` is 0 at the root and the parent's depth + 1 below; a move rewrites both for the node
and its whole subtree. Indexing is simulated: a file's `chunk_count` is one per started 1000
characters of body (at least one), folders are never indexed (`skipped`, 0 chunks).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from ..clock import parse_timestamp
from ..context import Context, progression_view
from ..errors import BadRequest
from ..progression import pinned, view
from ..store import Record
from . import operation
from ._common import where_filtered

__all__: list[str] = []

def _renderer(ctx: Context, include_body: bool) -> Callable[[Record], dict[str, Any]]:
    def render(node: Record) -> dict[str, Any]:
        shaped = ctx.shape(node, "KnowledgeNode")
        if not include_body:
            shaped["body"] = ""  # reference: bodies are left out unless asked for
        return shaped

    return render


def _folder(ctx: Context, node_id: str) -> Record:
    """The folder `node_id` of the request's workspace, or 400 naming parent_id."""
    # Inferred: a parent that does not resolve is an invalid body field (400), like every other
    # reference carried in a body (an agent's skill_ids); 404 stays for the addressed resource.
    parent = ctx.store.get("kb_nodes", node_id)
    if parent is None or parent["workspace_id"] != ctx.workspace_id:
        raise BadRequest(f"body field 'parent_id': node {node_id!r} does not exist in "
                         f"workspace {ctx.workspace_id!r}")
    if not parent["is_directory"]:
        raise BadRequest(f"body field 'parent_id': node {node_id!r} is a file; only a folder "
                         "can hold other nodes")
    return parent


def _subtree(ctx: Context, node: Record) -> list[Record]:
    """Every node below `node` (not the node itself)."""
    return ctx.store.find("kb_nodes", lambda n: n["workspace_id"] == node["workspace_id"]
                          and node["id"] in n.get("ancestors", ()))


@operation("listKnowledgeNodes")
def list_knowledge_nodes(ctx: Context) -> dict[str, Any]:
    # Inferred: an unknown parent_id is a filter matching nothing (an empty page), as in the
    # structured search; it is not checked for existence.
    return ctx.page(where=where_filtered(ctx),
                    render=_renderer(ctx, ctx.query["include_body"]))


@operation("createKnowledgeNode")
def create_knowledge_node(ctx: Context) -> dict[str, Any]:
    body: dict[str, Any] = ctx.body
    is_directory = body["is_directory"]
    parent = _folder(ctx, body["parent_id"]) if body.get("parent_id") else None
    if is_directory and body.get("entity_ids"):
        # Documented for patches (entity scope is for files only); applied to creation too.
        raise BadRequest("body field 'entity_ids': a folder has no entity scope; only files do")
    text = "" if is_directory else body["body"]  # documented: ignored for folders
    now = ctx.now()
    node = ctx.store.insert("kb_nodes", {
        "id": ctx.store.new_hex_id(),
        "workspace_id": ctx.workspace_id,
        "title": body["title"],
        "body": text,
        "chunk_body": not is_directory,
        "entity_ids": list(body["entity_ids"]),
        "parent_id": parent["id"] if parent else None,
        "ancestors": [*parent["ancestors"], parent["id"]] if parent else [],
        "depth": parent["depth"] + 1 if parent else 0,
        # Inferred: nodes created through the API are manual notes with no upstream file.
        "source": "manual",
        "source_type": None,
        "source_id": None,
        "is_directory": is_directory,
        "metadata": body["metadata"],
        "enabled": body["enabled"],
        "created_by": ctx.principal.user_id,
        # A file is indexed on the mock's clock (progression.py): pending, then processing,
        # then indexed with its chunks (spec/DECISIONS.md C9, P5).
        "embed_status": "skipped" if is_directory else "pending",
        "chunk_count": 0,
        "_progress": None if is_directory else {"start": parse_timestamp(now)},
        "version": 1,
        "tags": list(body["tags"]),
        "created_at": now,
        "updated_at": now,
    })
    indexed(node)  # indexed with the write, not at the next search
    return {"data": ctx.shape(view(ctx.store, "kb_nodes", node))}


@operation("updateKnowledgeNode")
def update_knowledge_node(ctx: Context) -> dict[str, Any]:
    node = ctx.resource
    assert node is not None
    body: dict[str, Any] = ctx.body
    # Every check runs before any write: a refused patch changes nothing.
    if "entity_ids" in body:
        others = sorted(k for k in body if k != "entity_ids")
        if others:
            raise BadRequest("body field 'entity_ids' must be sent alone; the request also "
                             f"sends {', '.join(others)}")
        if node["is_directory"]:
            raise BadRequest(f"body field 'entity_ids': node {node['id']!r} is a folder; "
                             "only files carry an entity scope")
        node = ctx.store.update("kb_nodes", node["id"], {**pinned("kb_nodes", node),
                                                         "entity_ids": list(body["entity_ids"]),
                                                         "updated_at": ctx.now()})
        return {"data": ctx.shape(view(ctx.store, "kb_nodes", node))}

    # The validated body holds only KnowledgeNodePatch fields: all but body and parent_id
    # (checked and derived below) are copied as sent.
    changes: dict[str, Any] = {k: v for k, v in body.items() if k not in ("body", "parent_id")}
    if "body" in body:
        if node["is_directory"]:
            # Inferred: a folder holds no body (creation ignores it; a patch says so).
            raise BadRequest(f"body field 'body': node {node['id']!r} is a folder; folders "
                             "have no body")
        if body["body"] != node["body"]:
            # Documented: a body change re-indexes. Inferred: sending the same text is no change.
            # The edited body goes back through indexing (progression.py: pending, then
            # processing, then indexed), from now.
            changes.update(body=body["body"], version=node["version"] + 1, chunk_count=0,
                           embed_status="pending",
                           _progress={"start": parse_timestamp(ctx.now())})

    moved: list[tuple[str, dict[str, Any]]] = []
    if "parent_id" in body:
        parent_id = body["parent_id"]
        if parent_id is None:
            ancestors: list[str] = []
            depth = 0
        else:
            if parent_id == node["id"]:
                raise BadRequest(f"body field 'parent_id': node {node['id']!r} cannot be its "
                                 "own parent")
            parent = _folder(ctx, parent_id)
            if node["id"] in parent.get("ancestors", ()):
                raise BadRequest(f"body field 'parent_id': folder {parent_id!r} is inside node "
                                 f"{node['id']!r}; a node cannot move below itself")
            ancestors = [*parent["ancestors"], parent["id"]]
            depth = parent["depth"] + 1
        changes.update(parent_id=parent_id, ancestors=ancestors, depth=depth)
        if ancestors != node["ancestors"]:
            for child in _subtree(ctx, node):
                below = child["ancestors"][child["ancestors"].index(node["id"]):]
                moved.append((child["id"], {"ancestors": [*ancestors, *below],
                                            "depth": child["depth"] - node["depth"] + depth}))

    now = ctx.now()
    for child_id, child_changes in moved:
        # Inferred: the subtree's records change (ancestors, depth), so their updated_at moves.
        below_node = ctx.store.get("kb_nodes", child_id)
        keep = pinned("kb_nodes", below_node) if below_node is not None else {}
        ctx.store.update("kb_nodes", child_id, {**keep, **child_changes, "updated_at": now})
    # A file still indexing keeps its start when a patch moves updated_at (progression.py).
    node = ctx.store.update("kb_nodes", node["id"], {**pinned("kb_nodes", node), **changes,
                                                     "updated_at": now})
    indexed(node)  # indexed with the write, not at the next search
    return {"data": ctx.shape(view(ctx.store, "kb_nodes", node))}


@operation("deleteKnowledgeNode")
def delete_knowledge_node(ctx: Context) -> dict[str, Any]:
    node = ctx.resource
    assert node is not None
    doomed = [node, *_subtree(ctx, node)]  # a folder takes its whole subtree with it
    for record in doomed:
        ctx.store.delete("kb_nodes", record["id"])
    return {"deleted_count": len(doomed)}


@operation("searchKnowledgeNodes")
def search_knowledge_nodes(ctx: Context) -> dict[str, Any]:
    body: dict[str, Any] = ctx.body
    filters: dict[str, Any] = body.get("filters") or {}
    pagination: dict[str, Any] = body["pagination"]  # page_size from the document's default
    needle = filters["title_contains"].casefold() if "title_contains" in filters else None
    # Every other filter the document lets through (source, enabled, is_directory, parent_id)
    # is the node field of the same name, compared exactly. `parent_id: null` (present)
    # selects root nodes; absent means any parent.
    exact = [(field, wanted) for field, wanted in filters.items() if field != "title_contains"]

    def matches(node: Record) -> bool:
        if any(node.get(field) != wanted for field, wanted in exact):
            return False
        return needle is None or needle in node["title"].casefold()

    now = progression_view(ctx.store, "kb_nodes")
    total = sum(1 for n in ctx.store.all("kb_nodes")
                if n["workspace_id"] == ctx.workspace_id and matches(now(n)))
    return ctx.page(
        "kb_nodes", partition={"workspace_id": ctx.workspace_id}, where=matches,
        render=_renderer(ctx, body["include_body"]),
        # JSON Schema counts 28.0 as an integer; the page needs a real one.
        limit=int(pagination["page_size"]), cursor=pagination.get("cursor"),
        # The cursor is bound to the filters (what selects the items); include_body only
        # changes how they are rendered, so it may differ from page to page.
        bound_to=filters,
        extra={"total_count": total},
    )


# -- semantic search, approximated ----------------------------------------------------------

_STOPWORDS = frozenset({
    "a", "an", "and", "are", "as", "at", "be", "by", "can", "do", "does", "for", "from", "how",
    "i", "in", "is", "it", "my", "of", "on", "or", "our", "the", "this", "to", "what", "when",
    "where", "which", "who", "why", "with", "you", "your",
})


def _tokens(text: str) -> set[str]:
    """Lower-case words, plurals folded; a hyphenated word also counts joined (Wi-Fi, wifi)."""
    words: list[str] = []
    for compound in re.findall(r"[a-z0-9]+(?:-[a-z0-9]+)*", text.casefold()):
        parts = compound.split("-")
        words += parts if len(parts) == 1 else [*parts, "".join(parts)]
    return {w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w
            for w in words}


def _chunks(node: Record) -> list[str]:
    text = node["body"].strip()
    if not text:
        return []
    if not node.get("chunk_body", True):
        return [text]  # chunk_body false: the body is indexed as one chunk
    return [p.strip() for p in re.split(r"\n[ \t]*\n", text) if p.strip()]


# The search index: each body's chunks and their words, made once per body (when a node is
# written through the API, else at its first search) rather than on every search, so a search
# costs set intersections, not a pass over every body's bytes (DECISIONS H32: one search over
# twenty 1 MB nodes held the event loop 2.5 s). Keyed by the body string's identity (records
# are immutable: a changed body is a new string), bounded in bytes (cleared when full).
_INDEX: dict[int, tuple[str, bool, list[tuple[str, frozenset[str]]]]] = {}
_INDEX_BYTES = [0]
MAX_INDEX_BYTES = 64 * 1024 * 1024  # counted as three times the bodies' bytes (chunks, words)


def indexed(node: Record) -> list[tuple[str, frozenset[str]]]:
    """The node's chunks with their words (see `_INDEX`)."""
    body, whole = node["body"], not node.get("chunk_body", True)
    found = _INDEX.get(id(body))
    if found is not None and found[0] is body and found[1] == whole:
        return found[2]
    chunks = [(chunk, frozenset(_tokens(chunk))) for chunk in _chunks(node)]
    cost = 3 * len(body)
    if _INDEX_BYTES[0] + cost > MAX_INDEX_BYTES:
        _INDEX.clear()
        _INDEX_BYTES[0] = 0
    _INDEX[id(body)] = (body, whole, chunks)
    _INDEX_BYTES[0] += cost
    return chunks


@operation("searchKnowledgeBase")
def search_knowledge_base(ctx: Context) -> dict[str, Any]:
    # Inferred: semantic search is approximated deterministically. Bodies split into chunks at
    # blank lines (paragraphs); a chunk's relevance is the share of the query's words (stop
    # words dropped unless nothing else is left) found in the chunk or its node's title.
    body: dict[str, Any] = ctx.body
    words = _tokens(body["query"])
    query = (words - _STOPWORDS) or words
    if not query:
        return {"data": []}
    scope = set(body["entity_ids"]) if "entity_ids" in body else None
    now = progression_view(ctx.store, "kb_nodes")
    nodes = {n["id"]: now(n) for n in ctx.store.all("kb_nodes")
             if n["workspace_id"] == ctx.workspace_id}
    disabled = {key for key, n in nodes.items() if not n["enabled"]}
    hits: list[tuple[float, str, str, int, dict[str, Any]]] = []
    for node in nodes.values():
        if node["is_directory"] or not node["enabled"] or node["embed_status"] != "indexed":
            continue  # documented (C8): search covers the chunks of indexed files
        if disabled.intersection(node.get("ancestors", ())):
            continue  # a disabled folder hides everything below it
        if scope is not None and node["entity_ids"] and not scope.intersection(node["entity_ids"]):
            continue  # scoped to other entities (workspace-wide nodes always match)
        titles = [nodes[a]["title"] for a in node.get("ancestors", ()) if a in nodes]
        title_words = _tokens(node["title"])
        for index, (chunk, chunk_words) in enumerate(indexed(node)):
            score = len(query & (chunk_words | title_words)) / len(query)
            if score <= 0:
                continue
            hits.append((-score, node["title"], node["id"], index, {
                "node_id": node["id"],
                "chunk_id": f"{node['id']}:{index}",
                "node_title": node["title"],
                "chunk_text": chunk,
                "context": " / ".join(titles) if titles else None,
                "chunk_index": index,
                "source": node["source"],
                "knowledge_type": _knowledge_type(node),
                "relevance_score": round(score, 4),
            }))
    hits.sort(key=lambda h: h[:4])
    return {"data": [h[4] for h in hits[: int(body["max_results"])]]}


def _knowledge_type(node: Record) -> str:
    # Inferred: metadata.knowledge_type when it names one of the types; otherwise an uploaded
    # document (source_type set) is a file and anything else a note.
    declared = (node.get("metadata") or {}).get("knowledge_type")
    if declared in ("file", "faq", "note"):
        return str(declared)
    return "file" if node.get("source_type") else "note"
