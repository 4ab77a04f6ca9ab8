"""The property over the document: for every kind, on every operation, varied answers are
valid (the suite's mock runs with the self-check on, which answers 500 naming the violation
when an answer is not; a varied answer is also checked against the closed schemas when the
mock runs without it).

- answer kinds (status: every documented error status; rate-limit; flaky; drop; slow) on
  every operation of the document;
- content kinds and paging kinds on every read (GET) operation whose answers carry records:
  an item is drawn, and the operation is called on the item's record until the answer holds
  it (the item is then `applied`: that answer was varied, and was proven valid).
"""

from __future__ import annotations

import itertools
import random
import re
from typing import Any

import pytest
from starlette.testclient import TestClient

from mockserver.data.tables import TABLES
from mockserver.engine.app import MockApp
from mockserver.openapi.spec import Operation, load_spec
from mockserver.robust.catalogue import (
    ANSWER_KINDS,
    CONTENT_KINDS,
    PAGING_KINDS,
    VALUED_KINDS,
    catalogue_for,
)
from mockserver.robust.plan import applies, draw_item

SPEC = load_spec()
CATALOGUE = catalogue_for(SPEC)
WORKSPACES = ("ws_harborview", "ws_alpine")
_PARAM = re.compile(r"\{([^}]+)\}")
# Reads that need a search term (what they find depends on the term, not on a record).
SEARCHES = {op.operation_id for op in SPEC.operations
            if any(p.required and p.location == "query" and p.name == "query"
                   for p in op.parameters)}


def _placeholder(op: Operation) -> str:
    """A path of the operation (any id: an answer item answers before the handler)."""
    return _PARAM.sub(lambda m: "a" * 24 if m.group(1) == "node_id" else "x1", op.path)


def _put(client: TestClient, plan: list[dict[str, Any]]) -> list[dict[str, Any]]:
    response = client.put("/__mock__/variations", json={"plan": plan})
    assert response.status_code == 200, response.text
    return list(response.json()["plan"])


@pytest.mark.parametrize("op", SPEC.operations, ids=lambda op: op.operation_id)
def test_answer_kinds_on_every_operation(client: TestClient, op: Operation) -> None:
    facts = CATALOGUE.operations[op.operation_id]
    plan = [{"kind": "status", "operation": op.operation_id, "call": i + 1, "status": s}
            for i, s in enumerate(facts.error_statuses)]
    n = len(plan)
    plan += [{"kind": "rate-limit", "operation": op.operation_id, "call": n + 1,
              "retry_after": 7},
             {"kind": "flaky", "operation": op.operation_id, "call": n + 2, "failures": 1},
             {"kind": "slow", "operation": op.operation_id, "call": n + 3, "delay_ms": 0},
             {"kind": "drop", "operation": op.operation_id, "call": n + 4}]
    assert 429 in op.responses  # every operation documents it (else rate-limit is refused)
    _put(client, plan)
    path = _placeholder(op)
    answers = [client.request(op.method, path) for _ in range(n + 3)]
    assert [a.status_code for a in answers[:n + 2]] == [*facts.error_statuses, 429, 503]
    assert all(a.json()["error"] for a in answers[:n + 2])
    assert answers[n].headers["Retry-After"] == "7"
    assert answers[n + 2].status_code != 500  # slow: the mock's own answer, after the delay
    with pytest.raises(Exception, match="dropped"):
        client.request(op.method, path)
    assert client.get("/__mock__/variations").json()["applied"] == list(range(len(plan)))


def _ws(table: str, record: dict[str, Any]) -> list[str]:
    field = TABLES[table].workspace_field
    found = record.get(field) if field else None
    return [found] if found in WORKSPACES else list(WORKSPACES) if found is None else []


def _urls(op: Operation, table: str, record: dict[str, Any],
          client_rows: Any) -> list[tuple[str, dict[str, Any]]]:
    """Requests of `op` whose answers may hold `record` (of `table`); `client_rows(table)`
    reads the mock's records."""
    key = record[TABLES[table].key]
    refs = [record[f] for f, target in TABLES[table].refs.items()
            if target == op.resource_table and isinstance(record.get(f), str)]
    refs += [record[f] for f in ("contact_id", "conversation_id", "workflow_id",
                                 "execution_id") if isinstance(record.get(f), str)]
    refs = list(dict.fromkeys(refs))
    names = _PARAM.findall(op.path)
    options: list[list[Any]] = []
    for i in range(len(names)):
        if i == 0 and op.path.startswith("/v1/workspaces/{id}"):
            options.append(_ws(table, record))
        elif i == 0 and op.resource_table == table:
            options.append([key])
        elif i == 0:  # what the record points at, or every one of its workspace
            options.append(list(dict.fromkeys([*refs, *(
                k for k, r in client_rows(op.resource_table or "").items()
                if set(_ws(op.resource_table or "", r)) & set(_ws(table, record)))])))
        else:
            options.append([key, *refs])
    query: dict[str, Any] = {}
    for p in op.parameters:
        if p.location == "query" and p.name == "limit":
            query["limit"] = p.schema.get("maximum", 100)
    wanted = [p for p in op.parameters if p.location == "query" and p.name == "workspace_id"]
    spaces = _ws(table, record) if wanted else [None]
    urls = []
    for values in itertools.product(*options):
        path = op.path
        for name, value in zip(names, values, strict=True):
            path = path.replace("{" + name + "}", str(value), 1)
        for space in spaces:
            urls.append((path, {**query, **({"workspace_id": space} if space else {})}))
    return urls[:40]


def _reach(client: TestClient, op: Operation, item: dict[str, Any]) -> bool:
    """Call `op` where its answer may hold the item's record (following pages); True once
    the item varied an answer. Every answer must not be a 500 (the self-check's)."""
    table = item.get("table") or (CATALOGUE.operations[op.operation_id].tables or ("",))[0]
    records = list(client.app.mock.store.rows(table).values()) if table else []  # type: ignore[attr-defined]
    if "record" in item:
        records = [client.app.mock.store.get(table, item["record"])]  # type: ignore[attr-defined]
    for record in records[:40]:
        for path, query in _urls(op, table, record, client.app.mock.store.rows):  # type: ignore[attr-defined]
            cursor = None
            for _ in range(5):
                response = client.get(path, params={**query, **(
                    {"cursor": cursor} if cursor else {})})
                assert response.status_code != 500, response.text
                if client.app.mock.state.variations.applied:  # type: ignore[attr-defined]
                    return True
                body = response.json() if response.status_code == 200 else {}
                cursor = body.get("next_cursor") if isinstance(body, dict) else None
                if not cursor:
                    break
    return False


VACUOUS = {f"one-item on {op}" for op in (
    "listTicketNotes", "listContactAppointments", "listAppointments", "getAppointment",
    "listTicketMessages", "listContactMessages", "listConversationMessages")} | {
    # the only nullable field of messages that is set is ticket_id: null, the message is no
    # longer one of the ticket's (valid, but never in this list's answers)
    "null on listTicketMessages",
    # every message the conversations' lists hold has an empty attachments array already
    "empty-array on listConversationMessages"}
READS = [op for op in SPEC.operations if op.method == "GET"
         and op.operation_id not in SEARCHES and CATALOGUE.operations[op.operation_id].tables]
PAIRS = [(kind, op) for op in READS for kind in (*CONTENT_KINDS, *PAGING_KINDS)
         if applies(CATALOGUE, kind, CATALOGUE.operations[op.operation_id])]


def test_content_and_paging_kinds_on_every_read(mock: MockApp, client: TestClient) -> None:
    mock.state.set_rate_limits(enabled=False)  # (until the next test's reset)
    unreached: list[str] = []
    vacuous: list[str] = []
    for kind, op in PAIRS:
        rng = random.Random(f"{kind}/{op.operation_id}")
        drawn = False
        for _ in range(6):
            item = draw_item(CATALOGUE, mock.store, kind, op.operation_id, rng)
            if item is None:
                continue
            drawn = True
            _put(client, [item])
            if _reach(client, op, item):
                break
        else:
            (unreached if drawn else vacuous).append(f"{kind} on {op.operation_id}")
    assert set(unreached) <= VACUOUS, sorted(set(unreached) - VACUOUS)
    # Kinds the document allows that change nothing in the default fixtures (one-item where
    # every record's array holds at most one item): nothing to vary, nothing to prove.
    assert set(vacuous) <= VACUOUS, sorted(set(vacuous) - VACUOUS)
    assert len(PAIRS) > 300
    # No record field of this document bounds its array (maxItems is only on request bodies
    # and nested objects): max-items applies nowhere here (tests/robust/test_catalogue.py).
    assert {k for k, _ in PAIRS} == set(CONTENT_KINDS + PAGING_KINDS) - {"max-items"}
    assert set(ANSWER_KINDS) == {"status", "rate-limit", "flaky", "slow", "drop"}


GETS = {op.resource_table: op for op in SPEC.operations
        if op.method == "GET" and op.resource_table and op.path.count("{") == 1
        and op.path.endswith("}") and op.resource_table in CATALOGUE.operations[
            op.operation_id].tables}


def test_every_value_of_every_valued_kind_on_a_read_by_id(mock: MockApp,
                                                          client: TestClient) -> None:
    """Every enum value, both bounds, every timestamp edge, every unicode sample and the
    maximum length, each on a record read by id: each answer valid."""
    mock.state.set_rate_limits(enabled=False)
    checked = 0
    for table, op in sorted(GETS.items()):
        rows = mock.store.rows(table)
        record = next(r for r in rows.values() if set(_ws(table, r)) & {"ws_harborview"})
        key = record[TABLES[table].key]
        path = _PARAM.sub(str(key), op.path)
        for facts in CATALOGUE.fields(table).values():
            if facts.name in CATALOGUE.own_fields(table, record):
                continue
            for kind in VALUED_KINDS:
                for value in facts.values(kind):
                    _put(client, [{"kind": kind, "operation": op.operation_id, "table": table,
                                   "record": key, "field": facts.name, "value": value}])
                    response = client.get(path)
                    assert response.status_code == 200, response.text
                    assert response.json()["data"].get(facts.name, value) == value
                    checked += 1
    assert checked > 400, checked  # 497 on this document
