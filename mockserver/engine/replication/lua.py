"""The Lua scripts of replication, kept as `.lua` files beside this module (package data).

A script is one or more files joined in order: the shared functions first (`hit_function`,
`record_function`, `session_lib`), then the script's own body. `{{NAME}}` in a file is a
constant given by the Python side (the rate-limit window, the keys of a session), so the two
never disagree.
"""

from __future__ import annotations

import re
from functools import cache
from importlib import resources

from ..ratelimit import WINDOW_SECONDS

__all__ = ["script"]

_PLACEHOLDER = re.compile(r"\{\{([A-Z_]+)\}\}")


@cache
def _read(name: str) -> str:
    return resources.files(__package__).joinpath("lua", f"{name}.lua").read_text("utf-8")


def script(*names: str, **constants: str) -> str:
    """The source of the script made of these files, with `constants` (and the window) put
    in; a placeholder left without a value is a bug (ValueError)."""
    values = {"WINDOW_MS": str(WINDOW_SECONDS * 1000), **constants}
    text = "".join(_read(name) if _read(name).endswith("\n") else _read(name) + "\n"
                   for name in names)

    def fill(match: re.Match[str]) -> str:
        try:
            return values[match.group(1)]
        except KeyError:
            raise ValueError(f"Lua placeholder {match.group(0)} has no value") from None

    return _PLACEHOLDER.sub(fill, text)
