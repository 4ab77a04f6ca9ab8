"""The one error hierarchy of the mock. Each error knows its status; `responses.error_response`
turns any of them into the documented `{"error": "..."}` body.

    ApiError
    ├── BadRequest            400  invalid parameters or body (message names the field)
    ├── Unauthorized          401  missing, malformed or unknown token
    ├── Forbidden             403  no access to the workspace, read-only token, not the author
    ├── NotFound              404  unknown path or resource
    ├── MethodNotAllowed      405  known path, other method
    ├── Conflict              409  state conflict (the control API: a session or snapshot name taken, an upload URL used)
    ├── PayloadTooLarge       413  body over the size limit
    ├── HeadersTooLarge       431  request headers over the size limit
    └── TooManyRequests       429  over the rate limit (carries Retry-After)
"""

from __future__ import annotations

__all__ = [
    "ApiError",
    "BadRequest",
    "Conflict",
    "Forbidden",
    "HeadersTooLarge",
    "MethodNotAllowed",
    "NotFound",
    "PayloadTooLarge",
    "ResponseContractViolation",
    "StaleRead",
    "TooManyRequests",
    "Unauthorized",
]


class ApiError(Exception):
    status_code = 500

    def __init__(self, message: str, *, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.headers = headers or {}


class BadRequest(ApiError):
    status_code = 400


class Unauthorized(ApiError):
    status_code = 401


class Forbidden(ApiError):
    status_code = 403


class NotFound(ApiError):
    status_code = 404


class MethodNotAllowed(ApiError):
    status_code = 405


class Conflict(ApiError):
    status_code = 409


class PayloadTooLarge(ApiError):
    status_code = 413


class UnsupportedMediaType(ApiError):
    status_code = 415


class HeadersTooLarge(ApiError):
    status_code = 431


class TooManyRequests(ApiError):
    status_code = 429

    def __init__(self, message: str, *, retry_after: int) -> None:
        super().__init__(message, headers={"Retry-After": str(retry_after)})
        self.retry_after = retry_after


class StaleRead(Exception):
    """Not an answer: the request read a worker's copy of a shared state (replication/) that
    another worker has changed since; the worker has caught up and the pipeline runs the
    request again."""


class ResponseContractViolation(AssertionError):
    """The mock itself produced a response the document does not allow (self-check mode)."""

    def __init__(self, operation_id: str, status: int, errors: list[str]) -> None:
        super().__init__(
            f"self-check: {operation_id} answered {status} with a body the document does not allow: "
            + "; ".join(errors)
        )
        self.operation_id = operation_id
        self.status = status
        self.errors = errors
