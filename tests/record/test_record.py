"""`record`, mock to mock: a mock serving a dataset is recorded, the recording is served, and
every read answers as the source's (scrubbed with the recording's key); no personal value of
the source remains; the token is never written; drift is reported; 429s are waited out;
an interrupted run resumes to the same dataset."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import orjson

from mockserver.data.fixtures import load_dataset
from mockserver.data.generate import generate
from mockserver.data.tables import TABLES
from mockserver.engine.app import Config
from mockserver.openapi.spec import load_spec
from mockserver.record.differential import differential
from mockserver.record.run import Options, record
from mockserver.record.scrub import Scrubber, _strings, rule_for
from mockserver.standalone.server import create_app
from mockserver.testing.transport import DirectTransport

SPEC = load_spec()
KEY = "test-scrub-key"
TOKEN = "mock-write-token"


def _client(fixtures: list[Path], token: str, rate_limit: int = 0,
            wrap: Callable[[httpx.BaseTransport], httpx.BaseTransport] | None = None
            ) -> httpx.Client:
    app = create_app(Config(fixtures=fixtures, rate_limit=rate_limit, self_check=True,
                            request_log=False, response_cache=0))
    transport: httpx.BaseTransport = DirectTransport(app, httpx.URL("http://mock"),
                                                     httpx.HTTPTransport())
    if wrap is not None:
        transport = wrap(transport)
    return httpx.Client(base_url="http://mock", transport=transport,
                        headers={"Authorization": f"Bearer {token}"})


def _record(source: httpx.Client, out: Path, **options: Any) -> dict[str, Any]:
    return record(SPEC, source, Options(out=out, scrub_key=KEY, progress=False, **options),
                  per_minute=0, sleep=options.pop("sleep", lambda s: None))


def _keys(fixtures: list[Path], workspaces: set[str]) -> dict[str, set[str]]:
    """The source's record keys per table, for the recorded workspaces."""
    dataset = load_dataset(fixtures or None, spec=SPEC)
    out: dict[str, set[str]] = {}
    last = ("workflow_events", "conversation_summaries")
    for name in [n for n in dataset.tables if n not in last] + list(last):
        rows = dataset.tables[name]
        ws_field = TABLES[name].workspace_field
        if not TABLES[name].schemas and name != "conversation_summaries":
            continue
        keys = {k for k, r in rows.items()
                if ws_field is None or r.get(ws_field) in workspaces}
        if name == "users":
            keys = {k for k, r in rows.items() if set(r["_workspace_ids"]) & workspaces}
        # Not observable through the API, so not recorded: a summary of nulls (the same as
        # none) and a connection no agent uses (only an agent's connections are listed).
        if name == "conversation_summaries":
            keys = {k for k, r in rows.items() if k in out.get("conversations", set())
                    and (r.get("summary") is not None or r.get("sentiment") is not None)}
        if name == "agent_connections":
            keys &= {c for a in dataset.tables["agents"].values() for c in a["connection_ids"]}
        if name == "workflow_events":
            keys = {k for k, r in rows.items() if r["execution_id"] in out["workflow_executions"]}
        if keys:
            out[name] = keys
    return out


def _recorded_keys(out: Path) -> dict[str, set[str]]:
    found = {}
    for path in out.glob("*.json"):
        if path.stem != "tokens":
            key = TABLES[path.stem].key
            found[path.stem] = {r[key] for r in orjson.loads(path.read_bytes())}
    return found


def _personal_values(fixtures: list[Path]) -> set[str]:
    """Every value the scrubbing rules cover in the source dataset (found independently of
    the recording, by scrubbing the source's own records)."""
    dataset = load_dataset(fixtures or None, spec=SPEC)
    scrubber = Scrubber(key=b"other-key")
    for name, rows in dataset.tables.items():
        for row in rows.values():
            scrubber.record(name, row)
    return scrubber.originals - scrubber.kept_values


def _round_trip(fixtures: list[Path], tmp_path: Path) -> tuple[dict[str, Any], Path]:
    out = tmp_path / "rec"
    with _client(fixtures, TOKEN) as source:
        summary = _record(source, out)
    workspaces = set(summary["workspaces"])
    assert _recorded_keys(out) == _keys(fixtures, workspaces)
    texts = {p.name: p.read_text() for p in out.rglob("*") if p.is_file()}
    assert not [n for n, t in texts.items() if TOKEN in t]  # the real token, nowhere
    personal = _personal_values(fixtures)
    assert len(personal) > 20
    assert not {n: v for n, t in texts.items() for v in personal if len(v) >= 8 and v in t}
    short = {v for v in personal if len(v) < 8}
    for path in out.glob("*.json"):  # short values: whole strings outside pseudonym fields
        for row in orjson.loads(path.read_bytes()):
            for where, value in _strings(row):
                if rule_for(path.stem, where) is None:
                    assert value not in short, (path.name, where)
    tables = load_dataset([out], spec=SPEC).tables
    token = summary["tokens"][0]["token"]
    with _client(fixtures, TOKEN) as source, _client([out], token) as reference:
        sent, differences = differential(SPEC, source, reference, tables,
                                         summary["workspaces"], Scrubber(key=KEY.encode()))
    assert sent > 200
    assert differences == []
    return summary, out


def test_the_default_fixtures_round_trip(tmp_path: Path) -> None:
    summary, out = _round_trip([], tmp_path)
    assert summary["workspaces"] == ["ws_alpine", "ws_harborview"]
    drift = json.loads((out / "reports" / "drift.json").read_text())
    assert drift["findings"] == []
    scrub = json.loads((out / "reports" / "scrub.json").read_text())
    assert scrub["fields"]["*.first_name"]["replaced"] > 0
    assert "Emma" not in (out / "reports" / "scrub.json").read_text()


def test_a_generated_dataset_round_trips(tmp_path: Path) -> None:
    generated = tmp_path / "gen"
    generate(scale=300, seed=3, out=generated)
    summary, _ = _round_trip([generated], tmp_path)
    assert summary["records"]["contacts"] > 100
