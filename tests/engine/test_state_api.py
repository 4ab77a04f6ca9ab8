"""The state's API is the only way to change a mock's state (issue 16, item 1).

Checked on the source with `ast`: outside mockserver/engine/state.py no module (the package, bench/,
examples/) assigns or deletes an attribute of a state or of one of its parts, and none calls
a part's mutating method directly (`x.limiter.configure(...)`, `x.clock.advance(...)`): they
call the state's methods. The store's record API (insert/update/delete) stays open to
handlers; load/reset of the store are the state's. The checker is itself tested on planted
violations, so a checker that finds nothing cannot pass.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

from mockserver.engine.app import MockApp
from mockserver.engine.state import MockState

ROOT = Path(__file__).resolve().parents[2]
# The state, and its shared variant (a subclass: the same methods over a Redis log).
STATE_MODULES = {ROOT / "mockserver" / "engine" / "state.py",
                 *(ROOT / "mockserver" / "engine" / "replication").glob("*.py")}

# A part's methods that change it: only the state calls them.
MUTATORS = {
    "limiter": {"configure", "set_workspace_limit", "reset", "hit"},
    "clock": {"advance", "set", "restart", "follow_wall_time"},
    "faults": {"add", "clear", "remove", "take", "reseed"},
    "journal": {"record", "clear"},
    "cache": {"put", "clear"},
    "files": {"put", "clear"},
    "store": {"load", "reset"},
    "tokens": {"add"},
}
# Names that hold a mock or its state in the package (a `dataset.tokens` being built by the
# fixture loader is not a state's).
HOLDERS = {"mock", "_mock", "state", "_state"}
# The plugin's `mock_api.clock` (a `MockApi` named `mock_api` or `api`) is a `ClockControl`,
# which moves the clock by the state's methods.
FACADES = {("mock_api", "clock"), ("api", "clock")}


def _parts() -> set[str]:
    """The state's attribute names, read from a live state (not restated here)."""
    mock = MockApp()
    names = set(vars(mock.state)) | {name for name, value in vars(MockState).items()
                                     if isinstance(value, property)}
    return {name for name in names if not name.startswith("_")} - {"name"}


def _chain(node: ast.expr) -> list[str]:
    """`a.b.c` -> ["a", "b", "c"]; a call or subscript in the chain ends it ("?")."""
    names: list[str] = []
    while isinstance(node, ast.Attribute):
        names.append(node.attr)
        node = node.value
    names.append(node.id if isinstance(node, ast.Name) else "?")
    return names[::-1]


def violations(source: str, parts: set[str], filename: str = "<src>") -> Iterator[str]:
    tree = ast.parse(source, filename)
    for node in ast.walk(tree):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = list(node.targets)
        elif isinstance(node, ast.AugAssign | ast.AnnAssign):
            targets = [node.target]
        elif isinstance(node, ast.Delete):
            targets = list(node.targets)
        for target in targets:
            for element in (target.elts if isinstance(target, ast.Tuple) else [target]):
                if not isinstance(element, ast.Attribute):
                    continue
                chain = _chain(element)
                inner = chain[1:-1]  # assigning into a part: x.limiter.default = ...
                holder = chain[-2] in HOLDERS
                if any(name in parts for name in inner) or (chain[-1] in parts and holder):
                    yield f"{filename}:{node.lineno}: assigns {'.'.join(chain)}"
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name) and func.id in ("setattr", "delattr") and node.args:
                chain = _chain(node.args[0])
                if any(name in parts or name == "state" for name in chain[1:]):
                    yield f"{filename}:{node.lineno}: {func.id} on {'.'.join(chain)}"
            if isinstance(func, ast.Attribute):
                chain = _chain(func)
                if (len(chain) >= 2 and func.attr in MUTATORS.get(chain[-2], ())
                        and tuple(chain[-3:-1]) not in FACADES):
                    yield f"{filename}:{node.lineno}: calls {'.'.join(chain)}() directly"


def _sources() -> Iterator[Path]:
    for folder in ("mockserver", "bench", "examples"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            if path not in STATE_MODULES:
                yield path


def test_nothing_outside_the_state_changes_it_but_through_its_methods() -> None:
    parts = _parts()
    found = [v for path in _sources()
             for v in violations(path.read_text(), parts, str(path.relative_to(ROOT)))]
    assert found == []


def test_the_pipeline_holds_no_part_of_the_state_itself() -> None:
    mock = MockApp()
    assert isinstance(mock.state, MockState)
    assert not set(vars(mock)) & _parts()


@pytest.mark.parametrize("planted", [
    "mock.dataset = dataset",
    "mock.state.tokens = TokenRegistry([])",
    "mock.config.rate_limit = 5\nmock.limiter.per_workspace = {}",
    "mock.store.seed = 3",
    "mock.limiter.default += 1",
    "del mock.state.journal",
    "setattr(mock.state, 'clock', None)",
    "mock.limiter.configure(per_minute=1)",
    "limiter.set_workspace_limit('ws', 1)",
    "state.clock.advance(60)",
    "mock.faults.add(status=500)",
    "mock.store.load({})",
])
def test_the_checker_finds_planted_violations(planted: str) -> None:
    assert list(violations(planted, _parts())), planted


def test_the_checker_lets_reads_and_the_store_record_api_pass() -> None:
    allowed = "\n".join([
        "self.clock = clock",
        "dataset.tokens = tokens",  # a Dataset being built
        "mock_api.clock.advance(60)",  # the plugin's ClockControl
        "x = mock.state.store.get('tickets', 'k')",
        "ctx.store.insert('tickets', record)",
        "state.advance_clock(5)",
        "app.state.mock = mock",  # Starlette's app.state, not a mock state
        "entries = mock.state.journal.entries()",
    ])
    assert list(violations(allowed, _parts())) == []
