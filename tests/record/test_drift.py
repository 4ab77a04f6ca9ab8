"""The drift report's kinds, on single answers: a missing field, a type, an undocumented
status, an undocumented field holding personal-looking text (shown as a pseudonym), order
across pages; and the Markdown grouping by operation."""

from __future__ import annotations

import json
from pathlib import Path

from mockserver.data.fixtures import load_dataset
from mockserver.openapi.spec import load_spec
from mockserver.record.drift import Drift
from mockserver.record.scrub import Scrubber

SPEC = load_spec()
OPS = {op.operation_id: op for op in SPEC.operations}


def _drift() -> Drift:
    return Drift(SPEC, Scrubber(b"k"))


_CALL = next(iter(load_dataset(None, spec=SPEC).tables["calls"].values()))


def _call(**changes: object) -> dict[str, object]:
    """A call of the default fixtures (the document's shape), with changes."""
    call = {k: v for k, v in _CALL.items() if not k.startswith("_")}
    call.update(changes)
    return call


def test_each_kind_is_found_and_grouped(tmp_path: Path) -> None:
    drift = _drift()
    get = OPS["getCall"]
    valid = _call()
    drift.check(get, 200, {"data": valid})
    if drift.groups:  # the call above is the document's shape: nothing to report
        raise AssertionError(drift.groups)
    missing = dict(valid)
    del missing["call_status"]
    drift.check(get, 200, {"data": missing})
    drift.check(get, 200, {"data": _call(duration_ms="12")})
    drift.check(get, 200, {"data": _call(caller_note="Call Emma back on +44 7700")})
    drift.check(get, 418, {"error": "teapot"})
    kinds = {(where, kind): group for (op, where, kind), group in drift.groups.items()}
    assert ("data.call_status", "missing-field") in kinds
    assert kinds[("data.duration_ms", "type")]["example"] == "12"
    note = kinds[("data.caller_note", "undocumented-field")]["example"]
    assert "Emma" not in note and len(note) == len("Call Emma back on +44 7700")
    assert kinds[("-", "status")]["example"] == 418
    drift.write(tmp_path)
    markdown = (tmp_path / "drift.md").read_text()
    assert "## getCall" in markdown and "| `data.caller_note` | undocumented-field | 1 |" in markdown
    assert json.loads((tmp_path / "drift.json").read_text())["answers_checked"] == 5


def test_order_is_checked_across_pages() -> None:
    drift = _drift()
    listing = OPS["listCalls"]  # documented: started_at, newest first
    first = [_call(id="a", started_at="2026-10-03T00:00:00.000Z"),
             _call(id="b", started_at="2026-10-02T00:00:00.000Z")]
    drift.check(listing, 200, {"data": first, "has_more": True, "next_cursor": "x"})
    assert not drift.groups
    last = drift.order_key(listing, first[-1])
    later = [_call(id="c", started_at="2026-10-05T00:00:00.000Z")]  # newer than page one's end
    drift.check(listing, 200, {"data": later, "has_more": False, "next_cursor": None}, last)
    assert [kind for (_, _, kind) in drift.groups] == ["order"]
    ascending = _drift()
    ascending.check(listing, 200, {"data": first[::-1], "has_more": False,
                                   "next_cursor": None}, None, "asc")
    assert not ascending.groups
