"""The default dataset: it loads, covers every state the API has, and stays self-consistent;
and the loader refuses bad files naming file, record and field."""

from __future__ import annotations

import re
from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from mockserver.data.fixtures import Dataset, FixtureError, default_fixtures_dir, load_dataset
from mockserver.data.tables import TABLES
from mockserver.openapi.spec import Spec, load_spec

FROZEN_AT = "2026-11-01T12:00:00.000Z"
EMPTY_TABLES = {"uploads", "deleted_agents"}
TIMESTAMP = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z$")
RECORD_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
# Keys whose form the document dictates (`<kind>:<address>`, `provider:model`, `HX…`).
DOCUMENT_KEYED = {"senders", "models", "whatsapp_templates"}
# Timestamps that describe the future on purpose: follow-ups, stays and appointments to come.
FUTURE_FIELDS = {"follow_up_at", "arrival_at", "departure_at", "start_at", "end_at"}


@pytest.fixture(scope="module")
def spec() -> Spec:
    return load_spec()


@pytest.fixture(scope="module")
def dataset(spec: Spec) -> Dataset:
    return load_dataset(spec=spec)


def rows(dataset: Dataset, table: str) -> list[dict[str, Any]]:
    return list(dataset.tables[table].values())


def ms(value: str) -> int:
    return int(datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp() * 1000)


def walk(value: Any, path: str = ""):  # type: ignore[no-untyped-def]
    """(path, string) for every string inside a record."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield from walk(item, f"{path}.{key}" if path else key)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from walk(item, f"{path}[{i}]")
    elif isinstance(value, str):
        yield path, value


# ------------------------------------------------------------------------------ loading


def test_default_dataset_loads_every_table(dataset: Dataset) -> None:
    assert set(dataset.tables) == set(TABLES)
    for name, table_rows in dataset.tables.items():
        if name in EMPTY_TABLES:
            assert table_rows == {}, name
        else:
            assert table_rows, f"{name} is empty"


def test_ids_are_readable_prefixed_and_bounded(dataset: Dataset) -> None:
    for name, table in TABLES.items():
        if name in DOCUMENT_KEYED:
            continue
        for key in dataset.tables[name]:
            assert RECORD_ID.match(key), (name, key)
            if name == "kb_nodes":
                assert re.fullmatch(r"[a-f0-9]{24}", key), key
            elif table.prefix and name != "conversation_summaries":
                assert key.startswith(table.prefix + "_"), (name, key)


def test_tokens_have_the_documented_access(dataset: Dataset) -> None:
    tokens = {t["token"]: t for t in dataset.tokens}
    both = {"ws_harborview", "ws_alpine"}
    assert set(tokens) == {"mock-write-token", "mock-read-token", "mock-colleague-token", "mock-other-token"}
    assert (tokens["mock-write-token"]["access"], set(tokens["mock-write-token"]["workspace_ids"])) == ("write", both)
    assert (tokens["mock-read-token"]["access"], set(tokens["mock-read-token"]["workspace_ids"])) == ("read", both)
    assert (tokens["mock-colleague-token"]["access"], set(tokens["mock-colleague-token"]["workspace_ids"])) == ("write", both)
    assert (tokens["mock-other-token"]["access"], tokens["mock-other-token"]["workspace_ids"]) == ("write", ["ws_desert"])
    assert tokens["mock-write-token"]["user_id"] == tokens["mock-read-token"]["user_id"] == "us_maria"
    assert tokens["mock-colleague-token"]["user_id"] == "us_jamal"
    assert tokens["mock-other-token"]["user_id"] == "us_omar"
    users = dataset.tables["users"]
    for token in tokens.values():
        assert set(token["workspace_ids"]) <= set(users[token["user_id"]]["_workspace_ids"])


def test_fixed_workspaces_and_one_higher_rate_limit(dataset: Dataset) -> None:
    workspaces = dataset.tables["workspaces"]
    assert set(workspaces) == {"ws_harborview", "ws_alpine", "ws_desert"}
    assert workspaces["ws_harborview"]["name"] == "Harbor View Rentals"
    assert [w["id"] for w in workspaces.values() if w.get("_rate_limit_per_minute") == 600]
    assert set(dataset.tables["workspace_settings"]) == set(workspaces)


# ------------------------------------------------------------------------------ coverage


def test_every_state_is_present(dataset: Dataset) -> None:
    def statuses(table: str, field: str = "status") -> set[str]:
        return {r[field] for r in rows(dataset, table)}

    assert statuses("escalations") == {"pending", "reviewed", "resolved", "dismissed"}
    assert statuses("tickets") == {"new", "pending", "resolved", "closed"}
    assert statuses("agent_runs") == {"accepted", "running", "completed", "failed"}
    assert statuses("workflow_executions") == {"STARTED", "RUNNING", "SUCCESS", "FAILED", "CANCELLED"}
    assert statuses("agents", "operation_mode") == {"autopilot", "copilot", "inactive"}
    assert statuses("custom_tools", "language") == {"python", "javascript"}
    assert statuses("conversation_tags", "kind") == {"label", "root_topic", "subtopic"}
    assert statuses("appointments") == {"awaiting_response", "confirmed", "completed", "no_show",
                                        "cancelled", "rescheduled"}
    assert statuses("messages", "direction") == {"inbound", "outbound"}
    assert {"hostaway", "guesty"} <= statuses("reservations", "pms_platform")
    assert {"email", "unthreaded_email", "whatsapp", "sms", "airbnb", "web_chat"} <= statuses(
        "conversations", "channel")
    assert {"zendesk", "plain"} <= {
        dataset.tables["agent_connections"][h["connection_id"]]["provider"]
        for h in rows(dataset, "helpdesk_tickets")
    }
    assert {"Owner", "Admin", "Member"} <= statuses("roles", "name")
    assert any(b["connection_required"] for b in rows(dataset, "builtin_tools"))
    assert any(not b["connection_required"] for b in rows(dataset, "builtin_tools"))
    assert any(r["airbnb_payment"] is not None for r in rows(dataset, "reservations"))
    assert any(r["airbnb_payment"] is None for r in rows(dataset, "reservations"))


def test_harborview_paginates_and_has_the_interesting_cases(dataset: Dataset) -> None:
    conversations = [c for c in rows(dataset, "conversations") if c["workspace_id"] == "ws_harborview"]
    assert len(conversations) > 20
    assert any(c["archived"] for c in conversations)
    assert any(c["follow_up_at"] for c in conversations)
    with_messages = {m["conversation_id"] for m in rows(dataset, "messages")}
    assert sum(c["id"] in with_messages for c in conversations) > len(conversations) * 0.8
    tickets = rows(dataset, "tickets")
    assert any(t["reopen_count"] >= 1 and t["status"] == "pending" for t in tickets)
    assert any(t["reopen_count"] >= 1 and t["status"] in ("resolved", "closed") for t in tickets)
    notes = rows(dataset, "ticket_notes")
    authors_per_ticket: dict[str, set[str]] = {}
    for note in notes:
        authors_per_ticket.setdefault(note["ticket_id"], set()).add(note["author"]["user_id"])
    assert any({"us_maria", "us_jamal"} <= a for a in authors_per_ticket.values())
    assert any(n["attachments"] for n in notes)


def test_smaller_workspaces_have_real_data(dataset: Dataset) -> None:
    for ws in ("ws_alpine", "ws_desert"):
        for table in ("contacts", "conversations", "messages", "tickets", "reservations", "agents",
                      "skills", "custom_tools", "kb_nodes", "escalations", "agent_runs"):
            assert any(r.get("workspace_id") == ws for r in rows(dataset, table)), (ws, table)


def test_agents(dataset: Dataset) -> None:
    agents = rows(dataset, "agents")
    skills = dataset.tables["skills"]
    assert {a["autopilot_schedule"] is None for a in agents} == {True, False}
    for agent in agents:
        assert "skills" not in agent  # derived at read time
        for skill_id in agent["skill_ids"]:
            assert skills[skill_id]["workspace_id"] == agent["workspace_id"]
        for connection_id in agent["connection_ids"]:
            assert dataset.tables["agent_connections"][connection_id]["workspace_id"] == agent["workspace_id"]
        for trigger in agent["triggers"]:
            assert trigger["workspace_id"] == agent["workspace_id"]
            if trigger["type"] == "message":
                assert set(trigger["config"]) == {"inboxTypeId", "channels"}
        tools = set(dataset.tables["builtin_tools"]) | set(dataset.tables["custom_tools"])
        assert set(agent.get("_tool_states", {})) <= tools
    assert any(a["guardrails"] for a in agents)
    assert any(a["triggers"] for a in agents)
    assert any(a.get("_tool_states") for a in agents)


def test_custom_tool_code_follows_the_runtime_contract(dataset: Dataset) -> None:
    for tool in rows(dataset, "custom_tools"):
        if tool["language"] == "python":
            assert "def main(**params):" in tool["code"]
            assert '"message"' in tool["code"] and "return {" in tool["code"]
        else:
            assert "async function main(params)" in tool["code"]
            assert "message:" in tool["code"] and "return {" in tool["code"]


def test_knowledge_tree_is_consistent(dataset: Dataset) -> None:
    nodes = dataset.tables["kb_nodes"]
    for node in nodes.values():
        parent = node["parent_id"]
        if parent is None:
            assert node["ancestors"] == []
        else:
            assert nodes[parent]["is_directory"]
            assert nodes[parent]["workspace_id"] == node["workspace_id"]
            assert node["ancestors"] == [*nodes[parent]["ancestors"], parent]
        assert node["depth"] == len(node["ancestors"])
        if node["is_directory"]:
            assert node["entity_ids"] == []
    harbor = [n for n in nodes.values() if n["workspace_id"] == "ws_harborview"]
    assert max(n["depth"] for n in harbor) >= 2  # three levels: root, child, grandchild
    assert any(not n["enabled"] for n in harbor)
    assert any(n["entity_ids"] and not n["is_directory"] for n in harbor)


def test_workflow_versions(dataset: Dataset) -> None:
    by_master: dict[str, list[dict[str, Any]]] = {}
    for workflow in rows(dataset, "workflows"):
        by_master.setdefault(workflow["master_id"], []).append(workflow)
    assert any(len(v) >= 3 for v in by_master.values())
    for versions in by_master.values():
        newest = max(versions, key=lambda w: w["version"])
        assert [w["workflow_id"] for w in versions if w["is_latest"]] == [newest["workflow_id"]]
        assert len({w["_workspace_id"] for w in versions}) == 1
    for folder in rows(dataset, "workflow_folders"):
        count = sum(1 for w in rows(dataset, "workflows") if w["folder_id"] == folder["id"] and w["is_latest"])
        assert folder["workflow_count"] == count
    for execution in rows(dataset, "workflow_executions"):
        workflow = dataset.tables["workflows"][execution["workflow_id"]]
        assert execution["master_id"] == workflow["master_id"]
        assert execution["_workspace_id"] == workflow["_workspace_id"]
        assert (execution["ended_at"] is None) == (execution["status"] in ("STARTED", "RUNNING"))
    executions_with_events = {e["execution_id"] for e in rows(dataset, "workflow_events")}
    assert len(executions_with_events) >= 3
    for execution_id in executions_with_events:
        sequence = sorted(e["sequence"] for e in rows(dataset, "workflow_events") if e["execution_id"] == execution_id)
        assert sequence == list(range(1, len(sequence) + 1))


# ------------------------------------------------------------------------------ consistency


def test_timestamps_are_in_the_past_and_ordered(dataset: Dataset) -> None:
    now = ms(FROZEN_AT)
    future = Counter()
    for name, table_rows in dataset.tables.items():
        for key, record in table_rows.items():
            for path, value in walk(record):
                if TIMESTAMP.match(value):
                    if path.rsplit(".", 1)[-1] in FUTURE_FIELDS:
                        future[path] += ms(value) > now
                    else:
                        assert ms(value) < now, (name, key, path, value)
            if isinstance(record.get("created_at"), str) and isinstance(record.get("updated_at"), str):
                assert record["created_at"] <= record["updated_at"], (name, key)
    assert future["follow_up_at"] >= 1


def test_contacts_and_conversations_agree(dataset: Dataset) -> None:
    contacts = dataset.tables["contacts"]
    conversations = dataset.tables["conversations"]
    assert set(contacts) == set(conversations)  # one conversation per contact, same id
    last_message: dict[str, dict[str, Any]] = {}
    for message in rows(dataset, "messages"):
        current = last_message.get(message["conversation_id"])
        if current is None or message["sent_at"] > current["sent_at"]:
            last_message[message["conversation_id"]] = message
        assert message["workspace_id"] == conversations[message["conversation_id"]]["workspace_id"]
        assert (message["status"] == "received") == (message["direction"] == "inbound")
    for cid, conversation in conversations.items():
        contact = contacts[cid]
        assert conversation["workspace_id"] == contact["workspace_id"]
        for field in ("id", "first_name", "last_name", "image_url", "inbox_type_id"):
            assert conversation["contact"][field] == contact[field], (cid, field)
        assert conversation["last_message_at"] == contact["last_message_at"]
        assert conversation["archived"] == contact["archived"]
        assert conversation["created_at"] == contact["created_at"]
        if cid in last_message:
            assert conversation["last_message_at"] == last_message[cid]["sent_at"]
            assert last_message[cid]["body"].startswith(conversation["last_message_preview"])


def test_ticket_derived_fields(dataset: Dataset) -> None:
    contacts = dataset.tables["contacts"]
    for ticket in rows(dataset, "tickets"):
        assert ticket["workspace_id"] == contacts[ticket["contact_id"]]["workspace_id"]
        assert ticket["conversation_id"] == ticket["contact_id"]
        assert ticket["first_message_at"] <= ticket["first_response_at"]
        assert ticket["time_to_first_response_ms"] == ms(ticket["first_response_at"]) - ms(ticket["first_message_at"])
        if ticket["status"] in ("new", "pending"):
            assert ticket["resolved_at"] is None and ticket["time_to_resolution_ms"] is None
            assert ticket["closed_at"] is None
        else:
            assert ticket["resolved_at"] and ticket["first_resolved_at"]
            assert ticket["first_resolved_at"] <= ticket["resolved_at"]
            assert ticket["time_to_resolution_ms"] == ms(ticket["resolved_at"]) - ms(ticket["created_at"])
        assert (ticket["closed_at"] is not None) == (ticket["status"] == "closed")
        if ticket["first_resolved_at"] and ticket["status"] in ("new", "pending"):
            assert ticket["reopen_count"] >= 1
        if ticket["call_transcript_id"]:
            assert ticket["call_transcript_id"] in dataset.tables["calls"]
    for note in rows(dataset, "ticket_notes"):
        ticket = dataset.tables["tickets"][note["ticket_id"]]
        assert (note["workspace_id"], note["contact_id"]) == (ticket["workspace_id"], ticket["contact_id"])


def test_scoped_records_share_their_contacts_workspace(dataset: Dataset) -> None:
    contacts = dataset.tables["contacts"]
    for table in ("tickets", "calls", "reservations", "appointments", "helpdesk_tickets", "agent_runs", "escalations"):
        for record in rows(dataset, table):
            assert record["workspace_id"] == contacts[record["contact_id"]]["workspace_id"], (table, record)


def test_escalations_and_runs(dataset: Dataset) -> None:
    runs = dataset.tables["agent_runs"]
    agents = dataset.tables["agents"]
    for run in runs.values():
        assert run["trigger_id"] in {t["id"] for t in agents[run["agent_id"]]["triggers"]}
        assert run["workspace_id"] == agents[run["agent_id"]]["workspace_id"]
        assert (run["completed_at"] is None) == (run["status"] in ("accepted", "running"))
        assert run["contact_id"] == run["conversation_id"]
    for escalation in rows(dataset, "escalations"):
        run = runs[escalation["agent_run_id"]]
        assert run["agent_id"] == escalation["agent_id"]
        assert run["conversation_id"] == escalation["conversation_id"]
        reviewed = escalation["status"] != "pending"
        assert (escalation["reviewed_at"] is not None) == reviewed
        assert (escalation["reviewed_by"] is not None) == reviewed


def test_reservations(dataset: Dataset) -> None:
    for reservation in rows(dataset, "reservations"):
        assert (reservation["airbnb_payment"] is not None) == (reservation["channel_name"] == "airbnb")
        nights = (datetime.fromisoformat(reservation["departure_date"])
                  - datetime.fromisoformat(reservation["arrival_date"])).days
        assert reservation["num_nights"] == nights
        assert reservation["arrival_at"][:10] in (reservation["arrival_date"],
                                                   _next_day(reservation["arrival_date"]))
    for transaction in rows(dataset, "airbnb_transactions"):
        if transaction["reservation_id"]:
            reservation = dataset.tables["reservations"][transaction["reservation_id"]]
            assert reservation["workspace_id"] == transaction["workspace_id"]


def _next_day(date: str) -> str:
    from datetime import timedelta

    return (datetime.fromisoformat(date) + timedelta(days=1)).date().isoformat()


# ------------------------------------------------------------------------------ loader errors


def _write(directory: Path, name: str, records: Any) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{name}.yaml"
    path.write_text(yaml.safe_dump(records, sort_keys=False), encoding="utf-8")
    return path


def test_wrong_type_names_file_record_and_field(spec: Spec, tmp_path: Path) -> None:
    ticket = dict(next(iter(load_dataset(spec=spec).tables["tickets"].values())))
    ticket["reopen_count"] = "twice"
    path = _write(tmp_path / "overlay", "tickets", [ticket])
    with pytest.raises(FixtureError) as info:
        load_dataset([default_fixtures_dir(), tmp_path / "overlay"], spec=spec)
    message = str(info.value)
    assert str(path) in message
    assert ticket["id"] in message
    assert "reopen_count" in message


def test_undocumented_field_is_refused(spec: Spec, tmp_path: Path) -> None:
    skill = dict(next(iter(load_dataset(spec=spec).tables["skills"].values())))
    skill["priority"] = 3
    _write(tmp_path, "skills", [skill])
    with pytest.raises(FixtureError, match=r"skills\.yaml.*priority"):
        load_dataset([default_fixtures_dir(), tmp_path], spec=spec)


def test_dangling_reference_is_refused(spec: Spec, tmp_path: Path) -> None:
    note = dict(next(iter(load_dataset(spec=spec).tables["ticket_notes"].values())))
    note["ticket_id"] = "xd_does_not_exist"
    path = _write(tmp_path, "ticket_notes", [note])
    with pytest.raises(FixtureError) as info:
        load_dataset([default_fixtures_dir(), tmp_path], spec=spec)
    message = str(info.value)
    assert str(path) in message and note["id"] in message
    assert "ticket_id" in message and "xd_does_not_exist" in message


def test_overlay_replaces_a_record_by_key(spec: Spec, tmp_path: Path) -> None:
    base = load_dataset(spec=spec)
    contact = dict(base.tables["contacts"]["ph_emma_clarke"])
    contact["first_name"] = "Emmeline"
    _write(tmp_path, "contacts", [contact])
    merged = load_dataset([default_fixtures_dir(), tmp_path], spec=spec)
    assert merged.tables["contacts"]["ph_emma_clarke"]["first_name"] == "Emmeline"
    assert len(merged.tables["contacts"]) == len(base.tables["contacts"])
    assert merged.describe("contacts", "ph_emma_clarke").startswith(str(tmp_path))


def test_a_bad_record_is_named_by_its_position(spec: Spec, tmp_path: Path) -> None:
    tickets = [dict(t) for t in list(load_dataset(spec=spec).tables["tickets"].values())[:3]]
    tickets[2]["status"] = "lost"
    path = _write(tmp_path, "tickets", tickets)
    with pytest.raises(FixtureError) as info:
        load_dataset([default_fixtures_dir(), tmp_path], spec=spec)
    assert f"{path}: record #2 (id={tickets[2]['id']!r}): field 'status'" in str(info.value)


def test_equal_strings_are_held_once(dataset: Dataset) -> None:
    """Loading shares equal strings across records and tables (the memory of large datasets)."""
    contacts = [c for c in dataset.tables["contacts"].values() if c["workspace_id"] == "ws_harborview"]
    conversation = dataset.tables["conversations"][contacts[0]["id"]]
    assert contacts[0]["workspace_id"] is contacts[1]["workspace_id"]
    assert conversation["contact"]["id"] is contacts[0]["id"]


def test_a_large_dataset_is_frozen_out_of_the_cycle_collector(
    spec: Spec, monkeypatch: pytest.MonkeyPatch
) -> None:
    import gc

    from mockserver.data import fixtures

    gc.unfreeze()
    monkeypatch.setattr(fixtures, "FREEZE_RECORDS", 10**9)
    load_dataset(spec=spec)
    assert gc.get_freeze_count() == 0 and gc.isenabled()
    monkeypatch.setattr(fixtures, "FREEZE_RECORDS", 100)  # the defaults count as large
    try:
        load_dataset(spec=spec)
        assert gc.get_freeze_count() > 0 and gc.isenabled()
    finally:
        gc.unfreeze()


def test_a_token_of_no_user_is_refused(spec: Spec, tmp_path: Path) -> None:
    # No invented user stands in for it: the loader names the token and the field.
    _write(tmp_path, "tokens", [{"token": "ghost-token", "user_id": "us_nobody",
                                 "access": "read", "workspace_ids": ["ws_harborview"]}])
    with pytest.raises(FixtureError, match=r"'ghost-token'.*'user_id'.*'us_nobody'"):
        load_dataset([default_fixtures_dir(), tmp_path], spec=spec)


def test_an_inbound_email_contact_is_named_by_its_address(dataset: Dataset) -> None:
    # The real service names a contact created from an unknown email sender by the address.
    named = [c for c in dataset.tables["contacts"].values() if "@" in c["first_name"]]
    assert named, "no contact named by its email address"
    contact = named[0]
    assert {"type": "email", "value": contact["first_name"]} in [
        {"type": ch["type"], "value": ch["value"]} for ch in contact["channels"]]
    tickets = [t for t in rows(dataset, "tickets") if t["contact_id"] == contact["id"]]
    messages = [m for m in rows(dataset, "messages") if m["conversation_id"] == contact["id"]]
    assert tickets and len(messages) >= 2
    assert messages[0]["sender"]["external_id"] == contact["first_name"]


def test_a_repeat_guest_has_several_stays(dataset: Dataset) -> None:
    stays: Counter[str] = Counter(r["contact_id"] for r in rows(dataset, "reservations"))
    assert stays.most_common(1)[0][1] >= 3


# -- one record check for the loader, mock_api.add and the tests' factories --------------------


def test_insert_checked_refuses_what_the_loader_refuses(spec: Spec, tmp_path: Path) -> None:
    from mockserver.data.fixtures import insert_checked
    from mockserver.engine.app import MockApp

    mock = MockApp()
    ticket = dict(next(iter(mock.store.all("tickets"))))
    dangling = {**ticket, "id": "xd_test_dangling", "contact_id": "ph_nobody"}
    with pytest.raises(ValueError, match=r"field 'contact_id': 'ph_nobody' is not a key of contacts"):
        insert_checked(mock.store, mock.spec, "tickets", dangling)
    wrong = {**ticket, "id": "xd_test_wrong", "status": "sleeping"}
    with pytest.raises(ValueError, match=r"field 'status'.*\(schema Ticket\)"):
        insert_checked(mock.store, mock.spec, "tickets", wrong)
    assert mock.store.get("tickets", "xd_test_dangling") is None
    # The loader says the same of the same record in a file.
    (tmp_path / "tickets.yaml").write_text(yaml.safe_dump([dangling]))
    with pytest.raises(FixtureError, match=r"field 'contact_id': 'ph_nobody' is not a key of contacts"):
        load_dataset([default_fixtures_dir(), tmp_path], spec=spec)
    good = {**ticket, "id": "xd_test_good"}
    insert_checked(mock.store, mock.spec, "tickets", good)
    assert mock.store.get("tickets", "xd_test_good") == good


def test_a_reference_no_schema_types_is_refused_not_crashed_on(spec: Spec,
                                                              tmp_path: Path) -> None:
    """An internal reference field (`_workspace_id`) holding a list: the loader names the
    field and its shape (tables.INTERNAL_FIELDS; it raised TypeError before)."""
    from mockserver.engine.app import MockApp

    role = dict(next(iter(MockApp().store.all("roles"))))
    (tmp_path / "roles.yaml").write_text(yaml.safe_dump([{**role, "_workspace_id": ["x"]}]))
    with pytest.raises(FixtureError, match=r"field '_workspace_id': \[\"x\"\] is not of type"):
        load_dataset([default_fixtures_dir(), tmp_path], spec=spec)


def test_whole_table_checks_name_the_record_the_per_record_checks_name_first(
    spec: Spec,
) -> None:
    """The loader checks a table in one pass per schema and per reference field; it names the
    same record, with the same message, as checking the records one by one in file order."""
    from mockserver.data.fixtures import RecordCheck, record_check

    check = record_check(spec)
    base = load_dataset(spec=spec)

    def one_by_one_schema(table: str, rows: dict[str, Any]) -> tuple[str, str] | None:
        for key, record in rows.items():
            problem = check.schema_problem(table, record)
            if problem is not None:
                return key, problem
        return None

    def one_by_one_refs(table: str, rows: dict[str, Any]) -> tuple[str, str] | None:
        def exists(target: str, key: Any) -> bool:
            return key in base.tables.get(target, {})

        for key, record in rows.items():
            problem = RecordCheck.dangling(table, record, exists)
            if problem is not None:
                return key, problem
        return None

    # References: a later record breaks the first reference field, an earlier one the last.
    table = next(t for t, d in TABLES.items() if len(d.refs) >= 2 and len(base.tables[t]) >= 5)
    fields = list(TABLES[table].refs)
    first_field, last_field = fields[0], fields[-1]
    records = [dict(r) for r in list(base.tables[table].values())[:5]]
    records[3][first_field] = "nowhere_3"
    records[1][last_field] = "nowhere_1"
    rows = {r[TABLES[table].key]: r for r in records}
    found = RecordCheck.first_dangling(table, rows, base.tables)
    assert found == one_by_one_refs(table, rows)
    assert found is not None and found[0] == records[1][TABLES[table].key]
    assert f"field '{last_field}'" in found[1]
    assert RecordCheck.first_dangling(table, dict(base.tables[table]), base.tables) is None

    # Schemas: one schema (checked in place) and several (projected, stray fields refused).
    for table, breaks in (("tickets", {3: ("status", "lost"), 1: ("reopen_count", "x")}),
                          ("contacts", {3: ("first_name", 7), 1: ("no_such_field", 1)})):
        records = [dict(r) for r in list(base.tables[table].values())[:5]]
        for index, (name, value) in breaks.items():
            records[index][name] = value
        rows = {r["id"]: r for r in records}
        found = check.first_schema_problem(table, rows)
        assert found == one_by_one_schema(table, rows)
        assert found is not None and found[0] == records[1]["id"]
        assert check.first_schema_problem(table, dict(base.tables[table])) is None
