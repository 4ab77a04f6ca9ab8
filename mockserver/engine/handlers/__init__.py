"""Resource handlers, one module per family, registered by operationId.

A handler takes a `Context` and returns the body to send; the status is the operation's
documented success status. Errors are raised (`mockserver.errors`), never returned.
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
