"""The README's catalogue of checks stays in sync with the planted-defect tests."""

from __future__ import annotations

import re
from pathlib import Path

from .test_laws import LAW_DEFECTS
from .test_planted_defects import DEFECTS

README = Path(__file__).resolve().parents[2] / "mockserver" / "conform" / "README.md"
# Defects proven by a dedicated test rather than a Defect entry: name -> the check it fails.
DEDICATED = {
    "429 without Retry-After": "ratelimit_retry_after",  # test_planted_defects
    "rate limit never enforced": "ratelimit_429",  # test_planted_defects
    "coverage below the threshold": "status_coverage",  # test_coverage
    "a law's request answers 500": "server_error",  # test_verdicts
    "discovery answers 500": "server_error",  # test_verdicts
    "the auth matrix meets a 500": "server_error",  # test_verdicts
    "a schemathesis request answers 500": "server_error",  # test_verdicts
    "a law's request times out": "server_error",  # test_verdicts
    "sort_by ignored on the second list": "law_ordering",  # test_laws
    "a law stops after its first list": "law_coverage",  # test_laws (INCOMPLETE, not an error)
}
SOURCES = Path(__file__).resolve().parents[2] / "mockserver" / "conform"


def _rows() -> list[tuple[str, str]]:
    text = README.read_text(encoding="utf-8")
    section = text.split("## Catalogue", 1)[1]
    return [(m.group(1), m.group(2).strip())
            for m in re.finditer(r"^\| `([a-z_0-9]+)` \|[^|]+\| ([^|]+) \|$", section, re.M)]


def test_every_row_names_a_defect_that_fails_that_check() -> None:
    defects = {d.name: d.expect for d in [*DEFECTS, *LAW_DEFECTS]}
    rows = _rows()
    assert len(rows) >= 25
    for check, defect in rows:
        if defect in DEDICATED:
            assert DEDICATED[defect] == check
            continue
        assert defect in defects, f"README names an unknown defect {defect!r}"
        assert check in defects[defect], (check, defect, defects[defect])


def test_every_planted_defect_and_law_is_in_the_catalogue() -> None:
    listed = {defect for _, defect in _rows()}
    for defect in [*DEFECTS, *LAW_DEFECTS]:
        assert defect.name in listed, f"{defect.name!r} is missing from the README catalogue"
    checks = {check for check, _ in _rows()}
    emitted = set()
    for source in SOURCES.glob("*.py"):
        emitted |= set(re.findall(r'"(law_[a-z_]+)"', source.read_text(encoding="utf-8")))
    assert emitted and emitted <= checks, emitted - checks
