"""Resource handlers, one module per family, registered by operationId.

A handler takes a `Context` and returns the body to send; the status is the operation's
documented success status. Errors are raised (`mockserver.errors`), never returned.

Writing a handler
-----------------

```python
from ..context import Context
from . import operation
from ._common import data, transition

@operation("closeTicket")
def close_ticket(ctx: Context) -> dict:
    # The addressed ticket (x-mock-resource: resolved, workspace checked) and {"status": "closed"},
    # or a 400 when its status is not one the document's x-mock-transition leaves from.
    ticket, moved = transition(ctx)
    now = ctx.now()
    ticket = ctx.store.update("tickets", ticket["id"], {**moved, "closed_at": now, "updated_at": now})
    return data(ctx, ticket)                     # projected onto the response's schema (Ticket)
```

A list declared in the document (`x-mock-list`, `x-order`, `x-filter`) needs no handler; a
handler that adds behaviour to one calls `ctx.page(where=..., render=...)`, which takes the
table, partition, sort fields and direction from the declaration (a list over a computed
partition passes `table` and `partition=` itself, as `listWorkflows` does);
it handles `limit`, `cursor`, `next_cursor` and `has_more`. The success status comes from the
document (201 for creates), and so does the schema records are projected onto:
`Operation.data_schema` (what the success response's `data` holds or lists) is the default of
`ctx.shape(record)`, `ctx.page(...)` and `data(ctx, record)`; name a schema only for a
sub-object. `ctx.body` is the validated body with the document's defaults filled in: a patch
applies it as it is (it holds only the patch schema's fields), a create reads omitted fields'
defaults from it. `tests/test_single_source.py` scans the handlers (`ast`) for restated schema
names, request defaults and field lists. Handlers run under the store lock, so read-modify-write is atomic.

A GET handler's answer is kept by the response cache (`cache.py`) when the handler neither
wrote to the store nor read the clock (the pipeline compares `store.version` and
`clock.reads` around the call), and dropped at the next write. So a handler must take
everything it depends on from the store, the request, the caller or the clock; state kept
anywhere else would be served stale. Cursors the mock issued are remembered in a bounded
table, so following one skips the signature check; older cursors are verified by HMAC. Query
values a validator accepted are remembered per operation (bounded, successes only).
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from typing import Any

from ...openapi.spec import Spec
from ..context import Context

__all__ = ["HANDLERS", "Handler", "load_handlers", "operation"]

Handler = Callable[[Context], Any]
HANDLERS: dict[str, Handler] = {}


def operation(*operation_ids: str) -> Callable[[Handler], Handler]:
    """Register a handler for one or more operationIds."""

    def register(func: Handler) -> Handler:
        for operation_id in operation_ids:
            if operation_id in HANDLERS and HANDLERS[operation_id] is not func:
                raise RuntimeError(f"two handlers for {operation_id}")
            HANDLERS[operation_id] = func
        return func

    return register


def load_handlers(spec: Spec | None = None) -> dict[str, Handler]:
    """Import every family module (each registers its handlers) and return the registry;
    with the document, also the reads it declares (`declared.handlers_from_document`)."""
    for module in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{module.name}")
    if spec is None:
        return HANDLERS
    from .declared import handlers_from_document

    return handlers_from_document(spec, HANDLERS)
