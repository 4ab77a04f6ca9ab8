"""The conformance gate passes against a two-worker `serve --state` (as it does in memory)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from redis_server import RedisServer

from mockserver.conform.cli import main

from .conftest import serve


def test_the_gate_passes_against_two_shared_workers(
        redis_server: RedisServer, namespace: str, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    report = tmp_path / "conform.json"
    with serve(redis_server.url, namespace, "--rate-limit", "0", workers=2) as url:
        code = main(["--base-url", url, "--token", "mock-write-token",
                     "--read-token", "mock-read-token", "--foreign-token", "mock-other-token",
                     "--workspace", "ws_harborview", "--allow-writes", "--max-examples", "5",
                     "--seed", "1", "--rate", "0", "--report", f"json:{report}"])
    capsys.readouterr()
    data = json.loads(report.read_text())
    errors = [v for v in data["violations"] if v["severity"] == "error"]
    assert code == 0, json.dumps(errors, indent=2)[:4000]
    assert data["result"] == "pass"
    assert data["checks_performed"]["state"] == 5, data["notes"]
