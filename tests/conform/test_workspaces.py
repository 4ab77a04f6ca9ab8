"""The whole gate passes the correct mock on every default workspace and on a generated
dataset, with a fixed seed and a few others (issue 15: the false alarm on ws_harborview came
from a workspace the suite never ran against)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from mockserver.conform.cli import parse_config
from mockserver.conform.runner import run

from .conftest import OTHER, READ, WRITE, served

# workspace -> (token, read token, foreign token)
WORKSPACES = {
    "ws_harborview": (WRITE, READ, OTHER),
    "ws_alpine": (WRITE, READ, OTHER),
    "ws_desert": (OTHER, None, WRITE),
}


def _run(url: str, workspace: str, seed: int, max_examples: int = 2,
         extra: tuple[str, ...] = ()) -> list[str]:
    token, read, foreign = WORKSPACES[workspace]
    argv = ["--base-url", url, "--token", token, "--foreign-token", foreign,
            "--workspace", workspace, "--allow-writes", "--max-examples", str(max_examples),
            "--seed", str(seed), "--rate", "0", "--quiet", *extra]
    if read:
        argv += ["--read-token", read]
    config, _ = parse_config(argv)
    config.sleep = lambda seconds: None
    result = run(config)
    assert result.counts.get("laws", 0) > 0 and result.counts.get("schemathesis", 0) > 0
    return [repr(v) for v in result.errors]


@pytest.mark.parametrize(("workspace", "phases"), [
    ("ws_alpine", "examples,coverage,fuzzing,stateful"),
    ("ws_desert", "examples,fuzzing,stateful")])
def test_full_gate_passes_every_default_workspace(workspace: str, phases: str) -> None:
    """ws_harborview's full run is test_gate_on_mock's (same seed). ws_desert skips only
    schemathesis' coverage phase (the slowest, and the same boundary values everywhere)."""
    with served() as (url, _):
        assert _run(url, workspace, 1, 2, ("--phases", phases)) == []


@pytest.mark.parametrize(("workspace", "seed"), [("ws_harborview", 7), ("ws_desert", 23)])
def test_fuzzing_passes_other_seeds(workspace: str, seed: int) -> None:
    """Other seeds, the fuzzing phase only (the coverage phase does not depend on the seed)."""
    with served() as (url, _):
        assert _run(url, workspace, seed, 3, ("--phases", "fuzzing")) == []


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("generated")
    subprocess.run([sys.executable, "-m", "mockserver", "fixtures", "generate", "--scale", "60",
                    "--seed", "3", "--out", str(out)], check=True, capture_output=True)
    return out


def test_gate_passes_a_generated_dataset(generated: Path) -> None:
    """Every family of checks; schemathesis' fuzzing and stateful phases (its coverage phase
    does not depend on the data and runs on the default workspaces above)."""
    with served(fixtures=[generated]) as (url, _):
        assert _run(url, "ws_harborview", 11, 2, ("--phases", "fuzzing,stateful")) == []
