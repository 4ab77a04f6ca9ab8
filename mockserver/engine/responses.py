"""Every response leaves through here: JSON bodies (orjson) and the one error shape."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import orjson
from starlette.responses import Response

from .errors import ApiError, Documented, too_many_requests

if TYPE_CHECKING:
    from ..openapi.spec import Operation

__all__ = ["control_error_response", "documented_error", "error_body", "error_response",
           "internal_error_body", "json_response", "message_body"]


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


def documented_error(operation: Operation, status: int, why: str,
                     retry_after: int = 1) -> ApiError:
    """The error answer `status` of `operation`, made on purpose (`Prefer: code=N`, robustness
    mode's status and rate-limit items): a 429 is `too_many_requests(retry_after)`, worded as
    the rate limiter's with its `Retry-After`; another status answers the document's example
    message, else its description with `why`; a 5xx (the document lists none) asks to retry,
    with `Retry-After: 1`."""
    if status == 429:
        return too_many_requests(retry_after)
    documented = operation.responses.get(status, {})
    example = documented.get("content", {}).get("application/json", {}).get("example")
    if isinstance(example, dict) and isinstance(example.get("error"), str):
        message = example["error"]
    elif status >= 500:
        message = f"service unavailable ({status}); retry"
    else:
        message = f"{documented.get('description', 'error').strip()} ({why})"
    return Documented(status, message, {"Retry-After": "1"} if status >= 500 else None)
