"""ARCHITECTURE.md is the map a newcomer reads in minutes: at most 200 lines, and every module
its "Where the details live" table points to exists and holds the details in its docstring."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TEXT = (ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8")


def test_the_map_is_at_most_200_lines() -> None:
    assert len(TEXT.splitlines()) <= 200


def test_every_place_the_map_sends_to_has_the_details() -> None:
    table = TEXT.split("## Where the details live", 1)[1].split("\n## ", 1)[0]
    named = re.findall(r"`([\w/]+(?:\.py|/__init__\.py|/))`", table)
    assert len(named) >= 10
    for name in named:
        path = ROOT / "mockserver" / name
        if name.endswith("/"):
            path = path / "__init__.py"
        assert path.exists(), name
        if path.suffix == ".py":
            doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
            assert len(doc.splitlines()) >= 5, f"{name}: no details in its docstring"
