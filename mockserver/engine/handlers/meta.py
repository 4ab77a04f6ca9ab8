"""Meta: the API index and the supported models."""

from __future__ import annotations

from typing import Any

from ..context import Context
from . import operation

__all__: list[str] = []


@operation("getApiIndex")
def get_api_index(ctx: Context) -> dict[str, Any]:
    # Every path of the document, read from it: the index can never drift from what is served.
    return {"version": "v1", "resources": list(ctx.resource_paths)}


@operation("listModels")
def list_models(ctx: Context) -> dict[str, Any]:
    models = sorted(ctx.store.all("models"), key=lambda m: m["model_string"])
    return {"data": [ctx.shape(m) for m in models]}
