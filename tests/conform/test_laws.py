"""Each law of the gate fails a mock with a planted defect and passes the correct mock."""

from __future__ import annotations

import pytest

from mockserver.conform.report import format_summary

from . import broken
from .conftest import gate, served
from .test_planted_defects import Defect

LAWS = ["--phases", "none", "--checks", "laws"]
WRITES = [*LAWS, "--allow-writes"]

LAW_DEFECTS = [
    Defect("order ignored", [*LAWS, "--include", "listTickets"], {"law_ordering"},
           plant=broken.ignore_order),
    Defect("sort_by ignored", [*LAWS, "--include", "listConversations"], {"law_ordering"},
           plant=broken.ignore_sort_by),
    Defect("nodes sorted by title alone", [*LAWS, "--include", "listKnowledgeNodes"],
           {"law_ordering"}, plant=broken.nodes_by_title_alone),
    Defect("50 items without limit", [*LAWS, "--include", "listContacts"], {"law_default"},
           wrap=broken.default_page_of_50),
    Defect("status=open filter leaks", [*LAWS, "--include", "listTickets"], {"law_filter"},
           plant=broken.open_filter_leaks),
    Defect("status filter misses items", [*LAWS, "--include", "listTickets"], {"law_filter"},
           plant=broken.filter_drops_items),
    Defect("list holds another workspace's record", [*LAWS, "--include", "listSkills"],
           {"law_namespace"}, plant=broken.list_leaks_other_workspace),
    Defect("events read through another workflow",
           [*LAWS, "--include", "listWorkflowExecutionEvents"], {"law_hierarchy"},
           plant=broken.events_through_any_workflow),
    Defect("note edited through another ticket",
           [*WRITES, "--include", "re:^(updateTicketNote)$"], {"law_hierarchy"},
           plant=broken.note_through_any_ticket),
    Defect("escalation resolved as reviewed by default",
           [*WRITES, "--include", "re:^(resolveEscalation|listEscalations)$"], {"law_default"},
           plant=broken.resolve_as_reviewed),
    Defect("PATCH not visible on the next read", [*WRITES, "--include", "re:^(updateSkill)$"],
           {"law_read_your_writes"}, plant=broken.write_not_visible),
    Defect("refused PATCH half applied", [*WRITES, "--include", "re:^(updateSkill)$"],
           {"law_failed_write"}, wrap=broken.HalfAppliedPatch),
    Defect("refused action half applied",
           [*WRITES, "--include", "re:^(sendTicketMessage)$"], {"law_failed_write"},
           wrap=broken.HalfAppliedAction),
    Defect("refused action flips another record",
           [*WRITES, "--include", "re:^(resolveTicket|reopenTicket|closeTicket)$"],
           {"law_failed_write"}, wrap=broken.CounterOnRefusedAction),
    Defect("refused PATCH flips a record it refers to",
           [*WRITES, "--include", "re:^(updateTicketNote)$"], {"law_failed_write"},
           wrap=broken.CounterOnRefusedPatch),
    Defect("refused create stored anyway",
           [*WRITES, "--include", "re:^(createAgent|deleteAgent)$"], {"law_failed_write"},
           wrap=broken.RecordOnRefusedCreate),
    Defect("created record not kept", [*WRITES, "--include", "re:^(createAgent|deleteAgent)$"],
           {"law_read_your_writes"}, plant=broken.create_keeps_nothing),
    Defect("delete does not stick", [*WRITES, "--include", "re:^(createAgent|deleteAgent)$"],
           {"law_delete_sticks"}, plant=broken.delete_does_not_stick),
]


@pytest.mark.parametrize("defect", LAW_DEFECTS, ids=lambda d: d.name)
def test_law_catches(defect: Defect) -> None:
    with served(plant=defect.plant, wrap=defect.wrap) as (url, _):
        result = gate(url, *defect.args)
    errors = {v.check for v in result.violations}
    assert defect.expect <= errors, (defect.expect, [repr(v) for v in result.violations])


@pytest.mark.parametrize("args", sorted({tuple(d.args) for d in LAW_DEFECTS}))
def test_correct_mock_keeps_the_same_laws(args: tuple[str, ...]) -> None:
    with served() as (url, _):
        result = gate(url, *args)
    assert result.violations == [], [repr(v) for v in result.violations]
    assert result.counts.get("laws", 0) > 0


def test_a_refused_patch_is_read_back_through_the_records_it_refers_to() -> None:
    """The note itself reads as before: only the witness of the contact it refers to (by
    `contact_id`) shows the change, and the report names that read."""
    with served(wrap=broken.CounterOnRefusedPatch) as (url, _):
        result = gate(url, *WRITES, "--include", "re:^(updateTicketNote)$")
    failed = [v for v in result.violations if v.check == "law_failed_write"]
    assert failed, [repr(v) for v in result.violations]
    for violation in failed:
        assert "a PATCH refused with" in violation.message, violation.message
        assert "/v1/contacts/{id} (contact_id=" in violation.message, violation.message
        assert "/v1/tickets/{id}/notes" not in violation.message, violation.message


TWO_LISTS = [*LAWS, "--include", "re:^(listTickets|listConversations)$"]


def test_a_defect_in_a_later_list_of_the_same_run_is_caught() -> None:
    """Every law test above runs on one operation; here the defect is in the second list a
    law walks (listConversations comes after listTickets in the document), so a law that
    stopped after its first list would miss it."""
    with served(plant=broken.ignore_sort_by) as (url, _):
        result = gate(url, *TWO_LISTS)
    found = {(v.check, v.operation) for v in result.violations}
    assert ("law_ordering", "listConversations") in found, result.violations
    walks = result.law_walks["law_ordering"]
    assert list(walks) == ["listTickets", "listConversations"], walks


def test_the_report_shows_what_each_law_walked() -> None:
    with served() as (url, _):
        result = gate(url, *TWO_LISTS)
    assert result.verdict == "PASS", (result.not_run, result.violations)
    ordering = result.as_dict()["walks_by_law"]["law_ordering"]
    assert {"no order parameter", "order=asc", "order=desc"} <= set(ordering["listTickets"])
    assert "sort_by=follow_up_at order=asc" in ordering["listConversations"], ordering
    assert "law_ordering: listConversations [" in format_summary(result)


def test_a_law_that_stops_after_its_first_list_shows_as_missing_coverage(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The mutation the sample found (`check_ordering`: `continue` -> `return`), planted:
    the law sees no `x-order` after the first list it walked. The run is INCOMPLETE and
    names the walks it owed and did not make."""
    from mockserver.conform import laws

    seen: list[str] = []
    real = laws.order_spec

    def stops_early(gate_: object, op: object) -> object:
        if seen:
            return None
        spec = real(gate_, op)  # type: ignore[arg-type]
        if spec is not None:
            seen.append("walked")
        return spec

    monkeypatch.setattr(laws, "order_spec", stops_early)
    with served(plant=broken.ignore_sort_by) as (url, _):
        result = gate(url, *TWO_LISTS)
    assert result.verdict == "INCOMPLETE" and result.exit_code == 3
    missing = [what for what in result.not_run if what.startswith("law_ordering on")]
    assert missing and "listConversations" in missing[0], result.not_run
    assert "sort_by=follow_up_at order=asc" in missing[0]


def test_a_note_says_whose_gap_it_is() -> None:
    """A PATCH the law needs, valid against the document, refused by the server: the note
    blames the server (and gives the curl), not the gate."""
    from mockserver.engine.errors import BadRequest

    def refuse_patches(mock: object) -> None:
        def wrap(original: object) -> object:
            def handler(ctx: object) -> object:
                raise BadRequest("planted: every PATCH refused")
            return handler
        broken.override(mock, "updateSkill", wrap)  # type: ignore[arg-type]

    with served(plant=refuse_patches) as (url, _):
        result = gate(url, *WRITES, "--include", "re:^(updateSkill)$")
    notes = [n for n in result.notes if "read-your-writes on updateSkill" in n]
    assert notes and notes[0].startswith("[server] "), result.notes
    assert "valid against the document" in notes[0] and "curl" in notes[0]
