"""Who may call the mock and where: the tokens and workspaces of a dataset by role, as a test
sees them (`mock_api.tokens`, `mock_api.workspaces`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..engine.state import MockState
from .config import DEFAULT_TOKENS


@dataclass(frozen=True)
class Tokens:
    """The fixtures' tokens by role (None: the dataset has none of that role)."""

    write: str | None
    read: str | None
    colleague: str | None
    other: str | None


@dataclass(frozen=True)
class Workspaces:
    """The workspaces a test reaches by role."""

    primary: str | None  # the write token's first workspace
    secondary: str | None  # its second workspace
    other: str | None  # a workspace only the `other` token can reach


_IDENTITIES: dict[int, tuple[Any, Tokens, Workspaces]] = {}


def mock_identities(state: MockState) -> tuple[Tokens, Workspaces]:
    """The fixtures' tokens and workspaces by role; worked out once per dataset (every test
    asks, and sessions over one seed share its dataset)."""
    tokens = state.dataset.tokens
    found = _IDENTITIES.get(id(tokens))
    if found is None or found[0] is not tokens:
        if len(_IDENTITIES) > 64:
            _IDENTITIES.clear()
        found = _IDENTITIES[id(tokens)] = (tokens, *identities(tokens))
    return found[1], found[2]


def identities(seed_tokens: list[dict[str, Any]]) -> tuple[Tokens, Workspaces]:
    """Tokens and workspaces by role from a dataset's token records."""
    entries = {t["token"]: t for t in seed_tokens}

    def token(role: str) -> dict[str, Any] | None:
        found = entries.get(DEFAULT_TOKENS[role])
        if found is None and role in ("write", "read"):
            found = next((t for t in seed_tokens if t["access"] == role), None)
        return found

    write, other = token("write"), token("other")
    write_ws = list(write["workspace_ids"]) if write else []
    other_ws = [w for w in (other["workspace_ids"] if other else []) if w not in write_ws]
    tokens = Tokens(**{role: (t["token"] if (t := token(role)) else None)
                       for role in DEFAULT_TOKENS})
    workspaces = Workspaces(
        primary=write_ws[0] if write_ws else None,
        secondary=write_ws[1] if len(write_ws) > 1 else None,
        other=other_ws[0] if other_ws else None,
    )
    return tokens, workspaces
