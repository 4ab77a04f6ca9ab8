"""The gate against our mock: the correct mock passes, with every family of checks on."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from mockserver.conform.cli import main

from .conftest import OTHER, READ, WORKSPACE, WRITE, served


def test_full_gate_passes_on_the_mock(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    junit, report = tmp_path / "conform.xml", tmp_path / "conform.json"
    with served() as (url, _):
        code = main(["--base-url", url, "--token", WRITE, "--read-token", READ,
                     "--foreign-token", OTHER, "--workspace", WORKSPACE, "--allow-writes",
                     "--max-examples", "5", "--seed", "1", "--rate", "0",
                     "--report", f"junit:{junit}", "--report", f"json:{report}"])
    out = capsys.readouterr()
    data = json.loads(report.read_text())
    errors = [v for v in data["violations"] if v["severity"] == "error"]
    assert code == 0, json.dumps(errors, indent=2)[:4000]
    assert data["result"] == "pass"
    performed = data["checks_performed"]
    for family in ("pagination", "auth", "state", "schemathesis"):
        assert performed.get(family, 0) > 0, performed
    assert performed["state"] == 5, data["notes"]  # every state rule found a record to work on
    suites = {s.get("name") for s in ET.parse(junit).getroot()}
    assert {"pagination", "auth", "state-rules", "schemathesis", "error-shape"} <= suites
    assert "PASS" in out.out and "pagination  listSkills" in out.err  # summary + progress


def test_read_only_gate_sends_no_writes() -> None:
    seen: list[tuple[str, str, str | None]] = []

    def record(app):  # type: ignore[no-untyped-def]
        async def wrapped(scope, receive, send):  # type: ignore[no-untyped-def]
            if scope["type"] == "http":
                headers = dict(scope["headers"])
                seen.append((scope["method"], scope["path"],
                             headers.get(b"authorization", b"").decode() or None))
            await app(scope, receive, send)
        return wrapped

    with served(wrap=record) as (url, _):
        code = main(["--base-url", url, "--token", WRITE, "--read-token", READ,
                     "--foreign-token", OTHER, "--workspace", WORKSPACE, "--max-examples", "3",
                     "--seed", "2", "--rate", "0", "--quiet"])
    assert code == 0
    writes_with_the_write_token = [
        (method, path) for method, path, auth in seen
        if method not in ("GET", "HEAD", "OPTIONS", "TRACE")
        # The write token only ever sends reads (searches are read-only POSTs); writes go out
        # only with refused credentials and ids that do not exist (the auth matrix).
        and auth == f"Bearer {WRITE}"
        and path not in ("/v1/kb/search", "/v1/kb/nodes/search")
    ]
    assert writes_with_the_write_token == []
    assert any(method == "POST" and path == "/v1/kb/search" for method, path, _ in seen)
