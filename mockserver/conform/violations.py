"""What the gate reports: violations as `AssertionError`s that carry their data and a severity.

Severity follows provenance (issue 6): a failure on something the description states
(`documented`) or the vendor's public reference (`reference`) fails the run; one on something
we inferred where both are silent (`inferred`) is a warning, failing the run only under
`--strict` (issue 28).
"""

from __future__ import annotations

import enum
import json
import shlex
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "FAMILIES",
    "AuthViolation",
    "CoverageViolation",
    "ErrorShapeViolation",
    "Exchange",
    "LawViolation",
    "PaginationViolation",
    "RateLimitViolation",
    "SchemathesisViolation",
    "ServerErrorViolation",
    "Severity",
    "StateRuleViolation",
    "Violation",
    "severity_for",
]

REDACTED = "$TOKEN"


class Severity(enum.StrEnum):
    ERROR = "error"      # fails the run
    WARNING = "warning"  # fails the run only with --strict


def severity_for(provenance: str | None) -> Severity:
    """`documented` (the description) and `reference` (the vendor's public reference: the real
    service's own promise) fail the run; `inferred` (our guess where both are silent) warns."""
    return Severity.WARNING if provenance == "inferred" else Severity.ERROR


@dataclass
class Exchange:
    """One request and its response, enough to reproduce it with curl."""

    method: str
    url: str
    headers: dict[str, str] = field(default_factory=dict)
    body: Any = None  # JSON-able, bytes or None
    status: int | None = None
    response_headers: dict[str, str] = field(default_factory=dict)
    response_text: str = ""
    error: str | None = None  # no response: the connection dropped or timed out

    def json(self) -> Any:
        try:
            return json.loads(self.response_text)
        except ValueError:
            return None

    def curl(self) -> str:
        """A minimal curl command; any bearer token is replaced by `$TOKEN`."""
        parts = ["curl", "-sS", "-X", self.method]
        url = self.url
        parts.append(shlex.quote(url))
        for name, value in self.headers.items():
            lowered = name.lower()
            if lowered == "authorization":
                value = _redact_authorization(value)
                # Double quotes so the shell expands $TOKEN.
                parts.append(f'-H "{name}: {value}"')
                continue
            if lowered in ("user-agent", "accept-encoding", "connection", "content-length") \
                    or lowered.startswith("x-schemathesis"):
                continue
            parts.extend(["-H", shlex.quote(f"{name}: {value}")])
        if self.body is not None:
            if isinstance(self.body, bytes):
                text = self.body.decode("utf-8", "replace")
            elif isinstance(self.body, str):
                text = self.body
            else:
                text = json.dumps(self.body, separators=(",", ":"))
            parts.extend(["-d", shlex.quote(text)])
        return " ".join(parts)


def _redact_authorization(value: str) -> str:
    scheme, _, token = value.partition(" ")
    if not token:
        return REDACTED if value else value
    return f"{scheme} {REDACTED}"


class Violation(AssertionError):
    """A way the target departs from the document. Subclasses name the family of check."""

    family = "conformance"

    def __init__(
        self,
        message: str,
        *,
        check: str,
        operation: str | None,
        severity: Severity = Severity.ERROR,
        exchange: Exchange | None = None,
        details: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.check = check
        self.operation = operation
        self.severity = severity
        self.exchange = exchange
        self.details = details or {}
        self.setup: list[Exchange] = []  # the writes its family sent before it (--export)

    @property
    def curl(self) -> str | None:
        return self.exchange.curl() if self.exchange is not None else None

    def as_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "family": self.family,
            "check": self.check,
            "operation": self.operation,
            "severity": str(self.severity),
            "message": self.message,
        }
        if self.exchange is not None:
            data["request"] = {"method": self.exchange.method, "url": self.exchange.url}
            data["status"] = self.exchange.status
            data["curl"] = self.curl
            data["response_excerpt"] = self.exchange.response_text[:500]
        if self.details:
            data["details"] = self.details
        return data

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.check}, {self.operation}, {self.severity}: {self.message!r})"


class SchemathesisViolation(Violation):
    """A failure of one of schemathesis' built-in checks, seen during its phases."""

    family = "schemathesis"


class ErrorShapeViolation(Violation):
    family = "error-shape"


class PaginationViolation(Violation):
    family = "pagination"


class AuthViolation(Violation):
    family = "auth"


class RateLimitViolation(Violation):
    family = "rate-limit"


class StateRuleViolation(Violation):
    family = "state-rules"


class LawViolation(Violation):
    """A promise of the description checked as a law on every operation it applies to."""

    family = "laws"


class CoverageViolation(Violation):
    """The run observed fewer documented statuses than --min-status-coverage asks."""

    family = "coverage"


class ServerErrorViolation(Violation):
    """A 5xx, a dropped connection or a time-out on any request the gate sent (any family),
    reported once per operation; `details` names the families that met it and how often."""

    family = "server-error"


# family -> the violation class reported under it (registry.fail picks it from a check's family)
FAMILIES: dict[str, type[Violation]] = {cls.family: cls for cls in (
    SchemathesisViolation, ErrorShapeViolation, PaginationViolation, AuthViolation,
    RateLimitViolation, StateRuleViolation, LawViolation, CoverageViolation,
    ServerErrorViolation)}
