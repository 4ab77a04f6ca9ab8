"""negative_data_rejection: any documented 4xx refuses a request, and a failure is re-checked
on the request that went over the wire before it is reported."""

from __future__ import annotations

from types import SimpleNamespace

from mockserver.conform.gate import Gate, GateConfig
from mockserver.conform.phases import recheck_rejection, rejection_statuses
from mockserver.conform.violations import Exchange, SchemathesisViolation
from mockserver.conform.wire import invalid_part

from . import broken
from .conftest import gate, served


def test_a_correct_server_answering_413_to_invalid_bodies_passes() -> None:
    """Before: schemathesis' default expected statuses (no 413) failed this server."""
    args = ["--phases", "examples,coverage,fuzzing", "--checks", "none", "--allow-writes",
            "--include", "re:^(updateSkill|createSkill)$", "--max-examples", "10"]
    with served(wrap=broken.refuse_invalid_with_413) as (url, _):
        result = gate(url, *args)
    assert result.counts.get("schemathesis", 0) > 0
    assert [v for v in result.violations if v.check == "negative_data_rejection"] == [], \
        [repr(v) for v in result.violations]


def test_rejection_statuses_are_the_documented_4xx() -> None:
    g = Gate(GateConfig(base_url="http://127.0.0.1:9", token="t"))
    assert rejection_statuses(g, g.doc.op("updateKnowledgeNode")) == [
        "400", "401", "403", "404", "413", "415", "431"]
    assert "413" not in rejection_statuses(g, g.doc.op("getSkill"))


def _recorded(method: str, url: str, body: bytes | None) -> SimpleNamespace:
    request = SimpleNamespace(method=method, uri=url, body=body,
                              headers={"Content-Type": ["application/json"]})
    return SimpleNamespace(interactions={"c1": SimpleNamespace(request=request)})


def _violation(op: str) -> SchemathesisViolation:
    return SchemathesisViolation("Schema-violating request accepted: ...",
                                 check="negative_data_rejection", operation=op,
                                 exchange=Exchange(method="GET", url="", status=200))


def test_a_rejection_failure_whose_mutation_vanished_on_the_wire_is_dropped() -> None:
    g = Gate(GateConfig(base_url="http://127.0.0.1:9", token="t", quiet=True))
    # The generated case had limit=[5] (an array); on the wire it is limit=5: valid.
    sent = _recorded("GET", "http://h/v1/skills?workspace_id=ws_a&limit=5", None)
    assert recheck_rejection(g, _violation("listSkills"), sent, "c1") is None
    body = _recorded("PATCH", "http://h/v1/skills/sk_1", b'{"description": "x"}')
    assert recheck_rejection(g, _violation("updateSkill"), body, "c1") is None


def test_a_rejection_failure_that_stands_names_the_invalid_part() -> None:
    g = Gate(GateConfig(base_url="http://127.0.0.1:9", token="t", quiet=True))
    sent = _recorded("GET", "http://h/v1/skills?workspace_id=ws_a&limit=0", None)
    kept = recheck_rejection(g, _violation("listSkills"), sent, "c1")
    assert kept is not None and "query parameter 'limit'" in kept.message
    assert "minimum" in kept.details["rule"]
    body = _recorded("PATCH", "http://h/v1/skills/sk_1", b'{"description": 12}')
    kept = recheck_rejection(g, _violation("updateSkill"), body, "c1")
    assert kept is not None and kept.details["invalid_part"] == "body /description", kept.message


def test_wire_validation_reads_each_part() -> None:
    g = Gate(GateConfig(base_url="http://127.0.0.1:9", token="t"))
    op = g.doc.op("listTickets")
    assert str(invalid_part(g.doc, op, "GET", "http://h/v1/tickets?workspace_id=w&order=up", {},
                            None)).startswith("query parameter 'order'")
    assert str(invalid_part(g.doc, op, "GET", "http://h/v1/tickets?limit=2", {},
                            None)).startswith("query parameter 'workspace_id'")
    assert invalid_part(g.doc, op, "GET", "http://h/v1/tickets?workspace_id=w&limit=2&limit=3",
                        {}, None) is not None
    patch = g.doc.op("updateSkill")
    assert str(invalid_part(g.doc, patch, "PATCH", "http://h/v1/skills/sk", {
        "Content-Type": "text/plain"}, b"{}")).startswith("header 'Content-Type'")
    assert str(invalid_part(g.doc, patch, "PATCH", "http://h/v1/skills/sk", {
        "Content-Type": "application/json"}, b"{nope")).startswith("request body")


def test_a_real_rejection_failure_names_the_invalid_part() -> None:
    with served(wrap=broken.accept_any_limit) as (url, _):
        result = gate(url, "--phases", "coverage,fuzzing", "--checks", "none", "--include", "listSkills",
                     "--max-examples", "10")
    found = [v for v in result.errors if v.check == "negative_data_rejection"]
    assert found, [repr(v) for v in result.violations]
    # The broken server ignores bad limits and any cursor: whichever case schemathesis kept,
    # the report names that parameter and the rule it breaks.
    for violation in found:
        part = violation.details.get("invalid_part")
        assert part in ("query parameter 'limit'", "query parameter 'cursor'"), violation.message
        assert violation.details.get("rule") and f"at {part}: " in violation.message
