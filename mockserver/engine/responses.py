"""Every response leaves through here: JSON bodies (orjson) and the one error shape."""

from __future__ import annotations

from typing import Any

import orjson
from starlette.responses import Response

from .errors import ApiError

__all__ = ["control_error_response", "error_body", "error_response", "internal_error_body",
           "json_response", "message_body"]


def json_response(status: int, body: Any, headers: dict[str, str] | None = None) -> Response:
    return Response(orjson.dumps(body), status_code=status, headers=headers,
                    media_type="application/json")


def error_body(error: ApiError) -> bytes:
    return orjson.dumps({"error": error.message})


def error_response(error: ApiError) -> Response:
    """The documented error shape, `{"error": "..."}`, with the error's status and headers."""
    return Response(error_body(error), status_code=error.status_code, headers=error.headers,
                    media_type="application/json")


def message_body(message: str) -> bytes:
    """`{"error": message}`: the error shape for an answer made without an `ApiError` (a
    fault's status, a refusal of the HTTP layer)."""
    return orjson.dumps({"error": message})


def internal_error_body(exc: BaseException) -> bytes:
    """The 500 of an unexpected exception (a bug of ours), still in the error shape."""
    return orjson.dumps({"error": f"internal error: {type(exc).__name__}: {exc}"})


def control_error_response(error: ApiError) -> Response:
    """A control API refusal: the error shape with the error's `reason` beside the message
    (`{"error": "...", "reason": "no_record"}`), so a program decides on the code, never on
    the words (spec/control-openapi.yaml, `Error`)."""
    return Response(orjson.dumps({"error": error.message, "reason": error.reason}),
                    status_code=error.status_code, headers=error.headers,
                    media_type="application/json")
