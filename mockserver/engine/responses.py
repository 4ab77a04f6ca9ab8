"""Every response leaves through here: JSON bodies (orjson) and the one error shape."""

from __future__ import annotations

from typing import Any

import orjson
from starlette.responses import Response

from .errors import ApiError

__all__ = ["error_body", "error_response", "json_response"]


def json_response(status: int, body: Any, headers: dict[str, str] | None = None) -> Response:
    return Response(orjson.dumps(body), status_code=status, headers=headers,
                    media_type="application/json")


def error_body(error: ApiError) -> bytes:
    return orjson.dumps({"error": error.message})


def error_response(error: ApiError) -> Response:
    """The documented error shape, `{"error": "..."}`, with the error's status and headers."""
    return Response(error_body(error), status_code=error.status_code, headers=error.headers,
                    media_type="application/json")
