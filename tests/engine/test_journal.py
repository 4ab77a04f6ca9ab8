"""The journal (journal.py): `Journal.record` takes the pipeline's observed request as one
tuple (`Observed`, its fields named by `OBSERVED_FIELDS`) and builds each `JournalEntry`
positionally (one tuple, no keywords), so both orders must be the entry's; the shared
journal encodes the same tuple (`RedisJournal.encode`'s parameters, in that order)."""

from __future__ import annotations

import inspect
import time

from conftest import FROZEN_AT, auth
from starlette.testclient import TestClient

from mockserver.engine.app import MockApp
from mockserver.engine.clock import parse_timestamp
from mockserver.engine.journal import OBSERVED_FIELDS, Journal, JournalEntry
from mockserver.engine.replication.parts import RedisJournal


def test_record_fills_each_field_with_its_own_argument() -> None:
    journal = Journal()
    arguments = {  # a distinct value for every parameter, so that no swap goes unnoticed
        "time_ms": 1_700_000_000_123, "method": "PATCH", "path": "/v1/contacts/c1",
        "query_string": b"workspace_id=ws_a", "raw_headers": ((b"x-a", b"1"),),
        "body": b'{"a":1}', "status": 207, "response_body": b'{"b":2}', "latency_ms": 1.5,
        "operation_id": "updateContact", "fault": "status 503", "ignored_params": ("bogus",),
        "header_bytes": 4,
    }
    assert list(arguments) == list(OBSERVED_FIELDS)
    journal.record(tuple(arguments.values()), (0, 3))  # type: ignore[arg-type]
    (entry,) = list(journal)
    assert isinstance(entry, JournalEntry)
    del arguments["header_bytes"]  # counted, not kept
    found = entry._asdict()
    assert found.pop("variations") == (0, 3)  # kept last, after what record fills in
    wall_ms = found.pop("wall_ms")  # filled in by record: the wall clock at arrival
    assert abs(wall_ms / 1000 - time.time()) < 60
    # The bodies' sizes as received, kept bodies too (they were 0: issue 43, U20).
    assert found == {"seq": 1, **arguments, "truncated": (), "body_size": 7,
                     "response_size": 7}


def test_what_was_not_kept_is_marked_in_its_own_fields() -> None:
    journal = Journal()
    journal.record((0, "POST", "/v1/x", b"", (), b"x" * 70_000, 400, b"y" * 80_000, 0.0,
                    None, None, (), None))
    (entry,) = list(journal)
    assert (entry.body, entry.response_body) == (None, None)
    assert (entry.truncated, entry.body_size, entry.response_size) == (
        ("body", "response_body"), 70_000, 80_000)


def test_the_pipeline_records_each_field_in_its_place(mock: MockApp,
                                                      client: TestClient) -> None:
    mock.state.clear_journal()
    response = client.get("/v1/conversations",
                          params={"workspace_id": "ws_harborview", "limit": 2, "bogus": "1"})
    assert response.status_code == 200
    (entry,) = mock.journal.entries(path="/v1/conversations")
    assert (entry.method, entry.path, entry.query_string) == (
        "GET", "/v1/conversations", b"workspace_id=ws_harborview&limit=2&bogus=1")
    assert entry.time_ms == parse_timestamp(FROZEN_AT)
    assert (b"authorization", auth()["Authorization"].encode()) in entry.raw_headers
    assert entry.body is None and entry.status == 200 and entry.response_body == response.content
    assert isinstance(entry.latency_ms, float) and entry.latency_ms >= 0
    assert (entry.operation_id, entry.fault, entry.ignored_params) == (
        "listConversations", None, ("bogus",))
    assert (entry.truncated, entry.body_size, entry.response_size) == (
        (), 0, len(response.content))  # no request body; the answer's size, kept


def test_the_shared_journal_encodes_the_observed_fields_in_their_order() -> None:
    parameters = list(inspect.signature(RedisJournal.encode).parameters)[1:]
    assert parameters == list(OBSERVED_FIELDS)
