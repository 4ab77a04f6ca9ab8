"""`python -m mockserver record` as users run it, against a real `serve` process on a loopback
port: the dataset, the tokens printed, `--differential` finding no difference, `--compare`
against an earlier recording; and the bounds `--since` and `--max-records`."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import orjson
import pytest

from mockserver.cli import main
from mockserver.data.fixtures import load_dataset
from mockserver.data.tables import TABLES
from mockserver.engine.progression import KINDS
from record.test_record import KEY, SPEC, TOKEN, _client, _record
from tests.standalone.test_serve_cli import _free_port, _wait


def test_record_cli_against_a_served_mock(tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    proc = subprocess.Popen([sys.executable, "-m", "mockserver", "serve", "--port", str(port),
                             "--rate-limit", "0", "--quiet"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    first, second = tmp_path / "first", tmp_path / "second"
    common = ["record", "--base-url", base, "--token", TOKEN, "--workspace", "ws_harborview",
              "--scrub-key", KEY, "--rate", "0", "--quiet"]
    try:
        _wait(base)
        assert main([*common, "--out", str(first), "--max-records", "120"]) == 0
        assert main([*common, "--out", str(second), "--differential",
                     "--compare", str(first)]) == 0
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=20)
    printed = capsys.readouterr().out
    assert "differential: 0 difference(s)" in printed
    assert "token rec-write-" in printed and TOKEN not in printed
    differential = json.loads((second / "reports" / "differential.json").read_text())
    assert differential["requests"] > 100 and differential["differences"] == []
    compare = json.loads((second / "reports" / "compare.json").read_text())["tables"]
    grown = {name: entry["added"] for name, entry in compare.items() if entry["added"]}
    first_counts = json.loads((first / "reports" / "summary.json").read_text())["records"]
    second_counts = json.loads((second / "reports" / "summary.json").read_text())["records"]
    assert grown == {n: c - first_counts.get(n, 0) for n, c in second_counts.items()
                     if c != first_counts.get(n, 0)}
    assert all(entry["removed"] == 0 for entry in compare.values())
    # the first run stopped before the agents' details and tool states were read
    assert compare["agents"]["changed"] > 0 and "_tool_states" in compare["agents"][
        "fields_changed"]
    tokens = orjson.loads((second / "tokens.json").read_bytes())
    assert {t["workspace_ids"][0] for t in tokens} == {"ws_harborview"}


def test_a_differential_of_a_scrubbed_recording_needs_its_key(tmp_path: Path) -> None:
    assert main(["record", "--base-url", "http://127.0.0.1:9", "--token", "t", "--out",
                 str(tmp_path / "x"), "--differential"]) == 2


def test_max_records_stops_early_and_keeps_references_resolving(tmp_path: Path) -> None:
    with _client([], TOKEN) as source:
        summary = _record(source, tmp_path / "rec", max_records=60)
    assert not summary["complete"]
    assert 0 < sum(summary["records"].values()) <= 60 + 100  # the page in flight completes
    load_dataset([tmp_path / "rec"], spec=SPEC)  # every reference resolves


def test_since_keeps_recent_records_and_what_they_name(tmp_path: Path) -> None:
    since = "2026-10-20T00:00:00.000Z"
    with _client([], TOKEN) as source:
        summary = _record(source, tmp_path / "rec", since=since)
    tables = load_dataset([tmp_path / "rec"], spec=SPEC).tables
    messages = tables["messages"].values()
    assert messages and all(m["sent_at"] >= since or m["updated_at"] >= since
                            if "updated_at" in m else m["sent_at"] >= since for m in messages)
    assert summary["dropped_by_bounds"]["messages"] > 0
    for message in messages:  # what they name came along
        assert message["conversation_id"] in tables["conversations"]
    named = {r[field] for name, rows in tables.items() for r in rows.values()
             for field, target in TABLES[name].refs.items() if target == "contacts"}
    old_contacts = {c["id"] for c in tables["contacts"].values() if c["updated_at"] < since}
    assert old_contacts and old_contacts <= named  # old, but named by a recent record
    assert summary["dropped_by_bounds"]["contacts"] > 0
    assert set(TABLES) >= set(tables)


def _sigint_default() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_ctrl_c_then_resume_gives_the_uninterrupted_recording(tmp_path: Path) -> None:
    """A real SIGINT to `record` mid-walk: exit 130, the resume state left, no dataset yet;
    the same command with --resume ends with the files of a run never interrupted."""
    from conform.serve import serve

    from mockserver.engine.app import Config
    from mockserver.standalone.server import create_app

    whole, cut = tmp_path / "whole", tmp_path / "cut"
    with _client([], TOKEN) as source:
        _record(source, whole)
    app = create_app(Config(rate_limit=0, request_log=False))
    with serve(app) as base:
        # Recorded as stored, as `_client` serves it (nothing progresses between the runs).
        manual = {kind: {"mode": "manual"} for kind in KINDS}
        httpx.put(f"{base}/__mock__/progression", json={"kinds": manual}).raise_for_status()
        command = [sys.executable, "-m", "mockserver", "record", "--base-url", base,
                   "--token", TOKEN, "--scrub-key", KEY, "--rate", "3000", "--quiet",
                   "--out", str(cut)]
        # Ctrl-C as a terminal sends it: SIGINT handled by default in the child even when this
        # suite runs as a background job (which starts with SIGINT ignored, and so would it).
        proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, preexec_fn=_sigint_default)
        state = cut / ".record" / "state.json"
        deadline = time.monotonic() + 60
        while not state.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 130, err
        assert "--resume" in err
        assert state.exists() and not list(cut.glob("*.json"))
        assert TOKEN not in state.read_text()
        assert main(["record", "--base-url", base, "--token", TOKEN, "--scrub-key", KEY,
                     "--rate", "0", "--quiet", "--out", str(cut), "--resume"]) == 0
    assert not (cut / ".record").exists()
    names = sorted(p.name for p in whole.glob("*.json") if p.name != "tokens.json")
    assert names == sorted(p.name for p in cut.glob("*.json") if p.name != "tokens.json")
    for name in names:
        assert (cut / name).read_bytes() == (whole / name).read_bytes(), name
