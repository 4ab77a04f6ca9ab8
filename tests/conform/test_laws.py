"""Each law of the gate fails a mock with a planted defect and passes the correct mock."""

from __future__ import annotations

import pytest

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
