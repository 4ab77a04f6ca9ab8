"""Authentication (bearer tokens) and authorisation (workspace access, write access)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from .errors import Forbidden, Unauthorized

__all__ = ["Principal", "TokenRegistry", "redact"]

_ACCEPTED_HEADERS = 256  # accepted Authorization values remembered (all forgotten when full)


@dataclass(frozen=True)
class Principal:
    """Who is calling: the token, the workspace user it belongs to, and what it may do."""

    token: str
    user_id: str
    access: str  # "read" | "write"
    workspace_ids: frozenset[str]

    @property
    def can_write(self) -> bool:
        return self.access == "write"

    def check_workspace(self, workspace_id: str) -> None:
        # Documented: a token without access to the requested workspace gives 403. An unknown
        # workspace id gets the same answer, so the status never reveals which ids exist.
        if workspace_id not in self.workspace_ids:
            raise Forbidden(f"Token has no access to workspace '{workspace_id}'")

    def check_write(self, operation_id: str) -> None:
        # Inferred: the description does not show the status for a read-only token on a write
        # endpoint; 403 (authenticated, not permitted) is what the reference's auth block implies.
        if not self.can_write:
            raise Forbidden(f"{operation_id} needs a token with write access; this token is read-only")


def redact(token: str) -> str:
    """A token as logs and the journal show it: enough to tell tokens apart, not to use one."""
    if len(token) <= 8:
        return "***"
    return token[:4] + "…" + token[-2:]


class TokenRegistry:
    def __init__(self, tokens: Iterable[Mapping[str, Any]]) -> None:
        self._tokens: dict[str, Principal] = {}
        # Authorization header values already accepted -> their principal (bounded; emptied
        # when a token is added): a client sends the same header on every request.
        self._accepted: dict[str, Principal] = {}
        for entry in tokens:
            self.add(
                Principal(
                    token=entry["token"],
                    user_id=entry["user_id"],
                    access=entry["access"],
                    workspace_ids=frozenset(entry["workspace_ids"]),
                )
            )

    def add(self, principal: Principal) -> None:
        self._tokens[principal.token] = principal
        self._accepted.clear()

    def __iter__(self) -> Iterator[Principal]:
        return iter(self._tokens.values())

    def authenticate(self, header: str | None) -> Principal:
        if header is not None:
            known = self._accepted.get(header)
            if known is not None:
                return known
        if not header:
            raise Unauthorized("Missing API token: send 'Authorization: Bearer <token>'")
        scheme, _, token = header.partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token or " " in token:
            raise Unauthorized("Malformed Authorization header: expected 'Bearer <token>'")
        principal = self._tokens.get(token)
        if principal is None:
            raise Unauthorized("Invalid API token")
        if len(self._accepted) >= _ACCEPTED_HEADERS:
            self._accepted.clear()
        self._accepted[header] = principal
        return principal
