"""The catalogue of checks is the registry's: the README shows what `registry.py` declares, and
every proof it names is a planted-defect test that fails that check."""

from __future__ import annotations

from pathlib import Path

import pytest

from mockserver.conform import registry
from mockserver.conform.catalogue import check_options
from mockserver.conform.cli import build_parser

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
START = "<!-- catalogue: generated from the registry"
END = "<!-- /catalogue -->"


def test_the_readme_shows_the_registry() -> None:
    text = README.read_text(encoding="utf-8")
    section = text[text.index(START):text.index(END)]
    assert section.split("\n", 1)[1] == registry.catalogue_markdown(), (
        "regenerate: python -m mockserver.conform.catalogue")


def test_every_proof_names_a_defect_that_fails_that_check() -> None:
    defects = {d.name: d.expect for d in [*DEFECTS, *LAW_DEFECTS]}
    proofs = [(check.name, proof.defect) for check in registry.CHECKS.values()
              for proof in check.proofs]
    assert len(proofs) >= 45
    for check, defect in proofs:
        if defect in DEDICATED:
            assert DEDICATED[defect] == check
            continue
        assert defect in defects, f"the registry names an unknown defect {defect!r}"
        assert check in defects[defect], (check, defect, defects[defect])


def test_every_planted_defect_proves_a_declared_check() -> None:
    listed = {proof.defect for check in registry.CHECKS.values() for proof in check.proofs}
    for defect in [*DEFECTS, *LAW_DEFECTS]:
        assert defect.name in listed, f"{defect.name!r} proves no check of the registry"
        assert set(defect.expect) <= set(registry.CHECKS), defect.expect
    assert set(DEDICATED) <= listed


def test_a_failure_under_an_undeclared_check_is_refused() -> None:
    class Reporter:
        doc = None

        def add(self, violation: object) -> None:
            raise AssertionError("reported")

    with pytest.raises(KeyError):
        registry.fail(Reporter(), "law_undeclared", None, "never reported")  # type: ignore[arg-type]


def test_the_checks_option_takes_its_choices_from_the_registry() -> None:
    options = check_options()
    assert options == ("pagination", "laws", "auth", "state", "ratelimit")
    help_text = build_parser().format_help()
    assert "pagination,laws,auth,state,ratelimit" in help_text
    for option in options:
        assert any(c.option == option for c in registry.CHECKS.values())


def test_each_step_runs_the_routines_registered_for_it() -> None:
    steps = {r.step for r in registry.ROUTINES}
    assert steps == {"pagination", "laws", "auth", "state", "write-laws", "schemathesis",
                     "ratelimit"}
    assert [r.name for r in registry.routines("laws")] == [
        "ordering", "filters", "defaults", "namespaces", "hierarchy"]
    assert [r.name for r in registry.routines("write-laws")] == [
        "read-your-writes", "creates", "action-defaults", "failed-actions"]
