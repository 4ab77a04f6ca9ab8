"""The conformance gate passes on the mock of a recording: a recording of the default fixtures'
`ws_harborview` is served (self-check on) with the tokens `record` generated, and a bounded
subset of the gate runs against it: every read operation through its examples, pagination,
the behaviour laws (read-your-writes among them), the auth matrix with the recorded read-only
token, and the state rules, which write. The same run fails when a defect is planted in the
recorded mock, on a read or on a write, so its PASS says something."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import orjson
import pytest
from conform import broken
from conform.serve import serve

from mockserver.conform.cli import parse_config
from mockserver.conform.report import RunResult
from mockserver.conform.runner import run
from mockserver.engine.app import Config, MockApp
from mockserver.standalone.server import create_app
from record.test_record import TOKEN, _client, _record

WORKSPACE = "ws_harborview"
# Bounded: one example per operation in the examples phase, the gate's own check families
# (pagination, laws, auth, state) in full; no fuzzing or stateful phase (the gate's own tests
# cover those on the mock; here what matters is the recorded data under the same checks).
SUBSET = ["--allow-writes", "--phases", "examples", "--max-examples", "1",
          "--checks", "pagination,laws,auth,state"]


@pytest.fixture(scope="module")
def recording(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("gate") / "rec"
    with _client([], TOKEN) as source:
        _record(source, out, workspaces=[WORKSPACE])
    return out


def _gate(recording: Path, plant: Callable[[MockApp], None] | None = None) -> RunResult:
    tokens = {t["access"]: t["token"] for t in orjson.loads((recording / "tokens.json").read_bytes())}
    mock = MockApp(Config(fixtures=[recording], rate_limit=0, self_check=True,
                          request_log=False))
    if plant is not None:
        plant(mock)
    with serve(create_app(mock=mock)) as url:
        config, _ = parse_config(["--base-url", url, "--token", tokens["write"],
                                  "--read-token", tokens["read"], "--workspace", WORKSPACE,
                                  "--rate", "0", "--seed", "1", "--quiet", *SUBSET])
        config.sleep = lambda seconds: None
        return run(config)


def test_the_gate_passes_on_the_recorded_mock(recording: Path) -> None:
    assert TOKEN not in (recording / "tokens.json").read_text()
    result = _gate(recording)
    assert result.errors == [], [repr(v) for v in result.errors]
    assert result.exit_code == 0
    counts = result.counts
    for family in ("pagination", "laws", "auth", "schemathesis"):
        assert counts.get(family, 0) > 0, counts
    assert counts["state"] == 5, counts  # every state rule found a recorded record to write on


@pytest.mark.parametrize(("plant", "expect"), [
    (broken.duplicate_across_pages, {"pagination_unique"}),  # a read
    (broken.write_not_visible, {"write_visible"}),  # a write
], ids=["read", "write"])
def test_the_same_run_fails_on_a_planted_defect(recording: Path,
                                                plant: Callable[[MockApp], None],
                                                expect: set[str]) -> None:
    result = _gate(recording, plant)
    assert expect <= {v.check for v in result.errors}, [repr(v) for v in result.violations]
    assert result.exit_code == 1

