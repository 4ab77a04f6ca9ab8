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
    "Documented",
    "Forbidden",
    "HeadersTooLarge",
    "MethodNotAllowed",
    "NotFound",
    "PayloadTooLarge",
    "ResponseContractViolation",
    "StaleRead",
    "TooManyRequests",
    "Unauthorized",
    "too_many_requests",
]


class ApiError(Exception):
    """An answer with an error status. `reason` is a code for programs (the control API sends
    it beside the message: `{"error": message, "reason": reason}`); by default the class's
    (`not_found`), a raiser may name a finer one (`no_record`, `unknown_table`, `no_session`)."""

    status_code = 500
    reason = "internal"

    def __init__(self, message: str, *, headers: dict[str, str] | None = None,
                 reason: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.headers = headers or {}
        if reason is not None:
            self.reason = reason


class BadRequest(ApiError):
    status_code = 400
    reason = "bad_request"


class Unauthorized(ApiError):
    status_code = 401
    reason = "unauthorized"


class Forbidden(ApiError):
    status_code = 403
    reason = "forbidden"


class NotFound(ApiError):
    status_code = 404
    reason = "not_found"


class MethodNotAllowed(ApiError):
    status_code = 405
    reason = "method_not_allowed"


class Conflict(ApiError):
    status_code = 409
    reason = "conflict"


class PayloadTooLarge(ApiError):
    status_code = 413
    reason = "too_large"


class UnsupportedMediaType(ApiError):
    status_code = 415
    reason = "unsupported_media_type"


class HeadersTooLarge(ApiError):
    status_code = 431
    reason = "headers_too_large"


class TooManyRequests(ApiError):
    status_code = 429
    reason = "rate_limited"

    def __init__(self, message: str, *, retry_after: int) -> None:
        super().__init__(message, headers={"Retry-After": str(retry_after)})
        self.retry_after = retry_after


def too_many_requests(retry_after: int, limit: int | None = None,
                      kind: str | None = None) -> TooManyRequests:
    """The one 429, worded as the document's example (`Rate limit exceeded; retry after 12
    seconds`) with a `Retry-After` of the same seconds: the rate limiter's (which names its
    limit), a shared state's, `Prefer: code=429`'s and robustness mode's rate-limit item's."""
    per = f": {limit} requests per minute per {kind}" if limit is not None else ""
    unit = "second" if retry_after == 1 else "seconds"
    return TooManyRequests(f"Rate limit exceeded{per}; retry after {retry_after} {unit}",
                           retry_after=retry_after)


class Documented(ApiError):
    """An error answer made on purpose, with any status the operation documents (or a 5xx):
    `Prefer: code=N`, robustness mode's status items (`responses.documented_error`)."""

    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message, headers=headers)
        self.status_code = status


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
