"""The OpenAPI document: valid, complete against the description, and consistently annotated."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema_rs
import pytest
from openapi_spec_validator import validate

from mockserver.data.tables import TABLES
from mockserver.openapi.spec import HTTP_METHODS, load_spec
from mockserver.openapi.yamlload import load_yaml

SPEC = load_spec()
SPEC_DIR = Path(__file__).resolve().parent.parent / "spec"
DOC = SPEC.document
PROVENANCE = {"documented", "reference", "inferred"}

# The description's resource index: every path it documents or lists, with its placeholders
# settled (<chat_app> is WhatsApp, <marketplace> is Airbnb: see DECISIONS.md).
DESCRIPTION_PATHS = """
/v1 /v1/models /v1/attachments/upload-url /v1/agents /v1/agents/{id}/tools /v1/agents/{id}/runs
/v1/agents/{id}/connections /v1/skills /v1/custom-tools /v1/custom-tools/{id}
/v1/custom-tools/runtimes /v1/escalations/{id}/resolve /v1/kb/nodes/{node_id}
/v1/tickets/{id}/close /v1/tickets/{id}/notes /v1/tickets/{id}/notes/{note_id}
/v1/contacts/{id} /v1/contacts/{id}/reservations /v1/contacts/{id}/helpdesk-tickets
/v1/helpdesk-tickets /v1/conversations /v1/workspaces/{id}/workflows
/v1/workflows/{id}/executions /v1/workflows/{id}/folder /v1/workspaces /v1/workspaces/{id}/roles
/v1/agents/{id} /v1/contacts /v1/contacts/search /v1/contacts/{id}/messages
/v1/contacts/{id}/pause-ai /v1/contacts/{id}/resume-ai /v1/conversation-tags
/v1/conversation-tags/{id} /v1/conversations/search /v1/skills/{id}
/v1/workspaces/{id}/workflow-folders /v1/workspaces/{id}/users /v1/workspaces/{id}/users/search
/v1/workspaces/{id}/senders /v1/workspaces/{id}/whatsapp-templates
/v1/workspaces/{id}/verification-rules /v1/workspaces/{id}/verification-rules/{rule_id}
/v1/escalations /v1/escalations/{id}/assign /v1/calls /v1/tickets /v1/tickets/search
/v1/tickets/{id} /v1/contacts/{id}/tickets /v1/tickets/{id}/messages /v1/tickets/{id}/resolve
/v1/tickets/{id}/reopen /v1/reservations /v1/reservations/{id} /v1/airbnb/transactions
/v1/appointments /v1/appointments/{id} /v1/contacts/{id}/appointments /v1/helpdesk-tickets/{id}
""".split()

# Endpoints the description says exist without showing them, and the reference's extra ones.
UNSHOWN_PATHS = """
/v1/kb/search /v1/kb/nodes /v1/kb/nodes/search /v1/conversations/{id}/messages
/v1/calls/{id} /v1/insights/conversation-automation-rate /v1/workspaces/{id}/settings
/v1/custom-tools/{id}/run /v1/agents/{id}/run /v1/conversations/{id}
/v1/workflows/{id}/executions/{execution_id}/events
""".split()


def operations() -> Iterator[tuple[str, str, dict[str, Any]]]:
    for path, item in DOC["paths"].items():
        for method, op in item.items():
            if method in HTTP_METHODS:
                yield path, method, op


def walk(node: Any, where: str = "#") -> Iterator[tuple[str, dict[str, Any]]]:
    if isinstance(node, dict):
        yield where, node
        for key, value in node.items():
            yield from walk(value, f"{where}/{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from walk(value, f"{where}/{i}")


def test_document_is_valid_openapi_3_1() -> None:
    assert DOC["openapi"].startswith("3.1")
    validate(DOC)


@pytest.mark.parametrize("path", DESCRIPTION_PATHS + UNSHOWN_PATHS)
def test_every_path_of_the_description_is_present(path: str) -> None:
    assert path in DOC["paths"]


def test_operation_ids_are_unique_and_tagged() -> None:
    ids = [op["operationId"] for _, _, op in operations()]
    assert len(ids) == len(set(ids))
    declared = {tag["name"] for tag in DOC["tags"]}
    for path, method, op in operations():
        assert len(op["tags"]) == 1 and op["tags"][0] in declared, (method, path)


def test_every_operation_has_provenance() -> None:
    for path, method, op in operations():
        assert op.get("x-provenance") in PROVENANCE, (method, path)
        if op["x-provenance"] == "inferred":
            assert op.get("x-rationale"), (method, path)


def test_every_parameter_has_provenance() -> None:
    for path, method, op in operations():
        for param in op.get("parameters", []):
            param = SPEC.resolve(param)
            assert param.get("x-provenance") in PROVENANCE, (method, path, param["name"])


def test_every_inferred_choice_has_a_rationale() -> None:
    missing = [where for where, node in walk(DOC)
               if node.get("x-provenance") == "inferred" and not node.get("x-rationale")
               and "/responses/" not in where]
    assert missing == []


def test_every_provenance_value_is_known() -> None:
    for where, node in walk(DOC):
        if "x-provenance" in node:
            assert node["x-provenance"] in PROVENANCE, where


def test_every_limit_is_1_to_100_default_20() -> None:
    seen = 0
    for _, _, op in operations():
        for param in op.get("parameters", []):
            param = SPEC.resolve(param)
            if param["name"] == "limit":
                schema = SPEC.resolve(param["schema"])
                assert (schema["minimum"], schema["maximum"], schema["default"]) == (1, 100, 20)
                seen += 1
    assert seen >= 30


def test_paginated_lists_take_limit_and_cursor_and_answer_the_envelope() -> None:
    for path, method, op in operations():
        names = {SPEC.resolve(p)["name"] for p in op.get("parameters", [])}
        if "cursor" not in names:
            continue
        assert "limit" in names, (method, path)
        schema = SPEC.resolve(op["responses"]["200"]["content"]["application/json"]["schema"])
        assert {"data", "next_cursor", "has_more"} <= set(schema["required"]), (method, path)


def test_error_responses_are_documented_everywhere() -> None:
    for path, method, op in operations():
        responses = op["responses"]
        assert {"401", "429"} <= set(responses), (method, path)
        if op.get("parameters") or op.get("requestBody"):
            assert "400" in responses, (method, path)
        if "requestBody" in op:
            assert "413" in responses, (method, path)
        for status, response in responses.items():
            response = SPEC.resolve(response)
            if status.startswith(("4", "5")):
                schema = response["content"]["application/json"]["schema"]
                assert schema == {"$ref": "#/components/schemas/Error"}, (method, path, status)
        too_many = SPEC.resolve(responses["429"])
        assert "Retry-After" in too_many["headers"]


def test_writes_need_the_write_role_and_reads_do_not() -> None:
    read_only_posts = {"searchKnowledgeBase", "searchKnowledgeNodes"}
    for path, method, op in operations():
        roles = [r for req in op.get("security", DOC["security"]) for r in req.values()]
        needs_write = any("write" in r for r in roles)
        expected = method != "get" and op["operationId"] not in read_only_posts
        assert needs_write == expected, (method, path)


def test_resource_hints_name_store_tables() -> None:
    for path, method, op in operations():
        if "x-mock-resource" in op:
            assert op["x-mock-resource"] in TABLES, (method, path)


# The order each list is decided to walk in (spec/DECISIONS.md F1, F2; E20): sort fields, or
# per `sort_by` value, and the default direction. The document's `x-order` is what the mock
# and the gate read; this table pins it, so a changed sort key or direction is a decision made
# here and in DECISIONS.md too, never a slip in the declaration.
DECIDED_ORDERS: dict[str, tuple[Any, str]] = {
    "listWorkspaceUsers": ("email", "asc"),
    "searchWorkspaceUsers": ("email", "asc"),
    "listWorkspaceSenders": ("id", "asc"),
    "listWhatsappTemplates": ("created_at", "desc"),
    "listVerificationRules": ("created_at", "desc"),
    "listAgents": ("created_at", "desc"),
    "listAgentRuns": ("created_at", "desc"),
    "listSkills": ("created_at", "desc"),
    "listCustomTools": ("created_at", "desc"),
    "listEscalations": ("created_at", "desc"),
    "listKnowledgeNodes": (("depth", "title"), "asc"),
    "searchKnowledgeNodes": (("depth", "title"), "asc"),
    "listTickets": ("last_message_at", "desc"),
    "searchTickets": ("last_message_at", "desc"),
    "listTicketMessages": ("created_at", "asc"),
    "listTicketNotes": ("created_at", "desc"),
    "listContactTickets": ("last_message_at", "desc"),
    "listContacts": ({"last_message_at": "last_message_at", "follow_up_at": None}, "desc"),
    "searchContacts": ("last_message_at", "desc"),
    "listContactMessages": ("created_at", "asc"),
    "listContactReservations": ({"arrival": "arrival_date", "departure": "departure_date",
                                 "created": "created_at"}, "desc"),
    "listContactHelpdeskTickets": ("last_external_update_at", "desc"),
    "listContactAppointments": ("start_at", "desc"),
    "listConversations": ({"last_message_at": "last_message_at",
                           "follow_up_at": "follow_up_at"}, "desc"),
    "searchConversations": ("last_message_at", "desc"),
    "listConversationMessages": ("created_at", "asc"),
    "listConversationTags": ("name", "asc"),
    "listCalls": ("started_at", "desc"),
    "listReservations": ("arrival_date", "desc"),
    "listAirbnbTransactions": ("date", "desc"),
    "listAppointments": ("start_at", "desc"),
    "listHelpdeskTickets": ("last_external_update_at", "desc"),
    "listWorkflows": ("updated_at", "desc"),
    "listWorkflowFolders": ("name", "asc"),
    "listWorkflowExecutions": ("started_at", "desc"),
    "listWorkflowExecutionEvents": ("sequence", "asc"),
}


def _fields(by: Any) -> tuple[str, ...]:
    return (by,) if isinstance(by, str) else tuple(by)


def test_every_list_states_its_decided_order() -> None:
    """Each list's `x-order` is the decided one: a wrong sort key or direction in the
    declaration (the mock and the gate would agree on it) fails here."""
    stated = {op.operation_id: op.order for op in SPEC.operations if op.order is not None}
    assert set(stated) == set(DECIDED_ORDERS)
    paginated = {op.operation_id for op in SPEC.operations if op.paginated}
    assert paginated <= set(stated), "a paginated list states no x-order"
    for operation_id, (by, direction) in DECIDED_ORDERS.items():
        order = stated[operation_id]
        assert order.direction == direction, operation_id
        if isinstance(by, dict):
            assert order.by_sort == {value: _fields(fields) if fields else None
                                     for value, fields in by.items()}, operation_id
        else:
            assert not order.by_sort and order.by == _fields(by), operation_id


def test_links_point_at_operations() -> None:
    ids = {op["operationId"] for _, _, op in operations()}
    count = 0
    for where, node in walk(DOC["paths"]):
        if "links" in node and isinstance(node["links"], dict):
            for link in node["links"].values():
                assert link["operationId"] in ids, where
                count += 1
    assert count >= 30


def test_timestamps_are_iso_utc_with_milliseconds() -> None:
    validator = jsonschema_rs.Draft202012Validator(DOC["components"]["schemas"]["Timestamp"])
    assert validator.is_valid("2026-04-03T03:14:15.000Z")
    for wrong in ["2026-04-03T03:14:15Z", "2026-04-03T03:14:15.000+00:00", "2026-04-03"]:
        assert not validator.is_valid(wrong)


def test_every_example_validates_against_its_schema() -> None:
    checked = 0
    components = DOC["components"]
    for where, node in walk(DOC):
        if "schema" in node and "example" in node and isinstance(node["schema"], dict):
            schema = {**node["schema"], "components": components}
            validator = jsonschema_rs.Draft202012Validator(schema)
            errors = [e.message for e in validator.iter_errors(node["example"])]
            assert errors == [], where
            checked += 1
        if "examples" in node and isinstance(node.get("examples"), list) and "type" in node:
            validator = jsonschema_rs.Draft202012Validator({**node, "components": components})
            for example in node["examples"]:
                assert validator.is_valid(example), where
                checked += 1
    assert checked >= 10


# Keys whose value is data (an example, a default, a constant; also the project's own `x-`
# extensions): JSON null is fine there and nothing under them is OpenAPI structure.
DATA_KEYS = {"default", "const", "example", "examples", "enum"}
TEXT_KEYS = {"description", "summary", "title", "x-rationale"}


def structure(node: Any, where: str = "#") -> Iterator[tuple[str, str, Any]]:
    """(where, key, value) of every mapping entry of the document outside its data values."""
    if isinstance(node, dict):
        for key, value in node.items():
            yield where, key, value
            if key not in DATA_KEYS and not key.startswith("x-"):
                yield from structure(value, f"{where}/{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from structure(value, f"{where}/{i}")


@pytest.mark.parametrize("name", ["openapi.yaml", "control-openapi.yaml"])
def test_no_text_is_cut_and_no_key_is_stray(name: str) -> None:
    """Every text is a whole string, and no key is null: an unquoted `description: Role name,
    e.g. Member` inside `{…}` reads as `description` plus a stray key `e.g. Member` with no
    value, which Spectral and openapi-spec-validator do not notice."""
    document = load_yaml((SPEC_DIR / name).read_bytes())
    texts = 0
    for where, key, value in structure(document):
        # A property *named* `description` (under `properties`) is a schema, not a text.
        if key in TEXT_KEYS and not where.endswith("/properties"):
            assert isinstance(value, str) and value.strip(), f"{where}/{key}: {value!r}"
            texts += 1
        assert value is not None or key in DATA_KEYS, f"{where}/{key} is null: a cut text?"
    assert texts >= 50
