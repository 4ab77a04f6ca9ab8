"""Replication's Lua scripts are `.lua` files (mockserver/engine/replication/lua/), joined and
filled in by `replication.lua.script`: every file is used, every placeholder gets its value
from the Python side (no Redis needed here)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from mockserver.engine.ratelimit import WINDOW_SECONDS
from mockserver.engine.replication import log, lua, sessions, snapshots

LUA = Path(lua.__file__).parent / "lua"
SCRIPTS = {f"{module.__name__}.{name}": value for module in (log, snapshots, sessions)
           for name, value in vars(module).items()
           if isinstance(value, str) and "redis.call" in value}


def test_every_lua_file_is_part_of_a_script_and_every_placeholder_is_filled() -> None:
    files = sorted(LUA.glob("*.lua"))
    assert len(files) >= 19
    joined = "\n".join(SCRIPTS.values())
    for path in files:
        body = [line for line in path.read_text().splitlines()
                if line.strip() and not line.startswith("--") and "{{" not in line]
        assert body[0] in joined, f"{path.name} is used by no script"
    for name, source in SCRIPTS.items():
        assert not re.search(r"\{\{[A-Z_]+\}\}", source), name


def test_the_window_and_the_session_keys_come_from_python() -> None:
    assert f"now - start >= {WINDOW_SECONDS * 1000} then" in log._SYNC
    suffixes = ", ".join(f"'{k}'" for k in sessions.SESSION_KEYS)
    assert f"local SUFFIXES = {{{suffixes}}}" in sessions._CREATE


def test_a_placeholder_without_a_value_is_refused() -> None:
    with pytest.raises(ValueError, match="SESSION_SUFFIXES"):
        lua.script("session_lib")
