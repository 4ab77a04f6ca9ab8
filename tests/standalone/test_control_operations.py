"""The fixture's control operations, each over both transports (`mock_control`: in this process
and over the control API), and the registry they are declared in (standalone/operations.py).

A new control operation's test goes here, taking `mock_control`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from conftest import SHARED_SUITE, auth
from starlette.testclient import TestClient

from mockserver.engine.app import MockApp
from mockserver.standalone.operations import ControlError, control_spec, handles, registry
from mockserver.standalone.server import create_app
from mockserver.testing.control import MockControl, RecordedRequest

TICKET = "xd_aisha_khan_parking"


@pytest.fixture
def api(mock: MockApp, mock_control: MockControl) -> Iterator[Any]:
    """A client of the API in the control's session: `api("GET", "/v1/models")`."""
    with TestClient(create_app(mock=mock), headers=auth()) as client:
        prefix = f"/sessions/{mock_control.session}"
        yield lambda method, path, **kw: client.request(method, prefix + path, **kw)


# -- the registry ----------------------------------------------------------------------------

def test_every_operation_of_the_document_has_one_handler() -> None:
    assert set(registry()) == set(control_spec().by_id)
    assert len(registry()) >= 25


def test_a_second_handler_for_an_operation_is_refused() -> None:
    with pytest.raises(RuntimeError, match="getClock has two handlers"):
        handles("getClock")(lambda call: None)


def test_an_operation_without_a_handler_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    from mockserver.standalone import operations

    handlers = dict(registry())
    del handlers["getClock"]
    monkeypatch.setattr(operations, "_HANDLERS", handlers)
    with pytest.raises(RuntimeError, match="differ: getClock"):
        registry()


# -- refusals carry a reason -------------------------------------------------------------------

def test_a_refusal_carries_its_reason(mock_control: MockControl) -> None:
    with pytest.raises(ControlError) as missing:
        mock_control.call("getRecord", {"table": "contacts", "id": "ph_nobody"})
    assert (missing.value.status, missing.value.reason) == (404, "no_record")
    with pytest.raises(ControlError) as unknown:
        mock_control.call("getRecord", {"table": "nope", "id": "x"})
    assert (unknown.value.status, unknown.value.reason) == (404, "unknown_table")
    with pytest.raises(ControlError) as bad:
        mock_control.call("setClock", body={"now": "yesterday"})
    assert (bad.value.status, bad.value.reason) == (400, "bad_request")
    assert "'now'" in bad.value.message
    with pytest.raises(ControlError) as strict:  # the document's query, checked in process too
        mock_control.call("getClock", query={"when": "now"})
    assert (strict.value.status, strict.value.reason) == (400, "bad_request")
    assert "'when'" in strict.value.message


def test_the_http_refusal_body_names_the_reason(mock: MockApp) -> None:
    with TestClient(create_app(mock=mock)) as client:
        response = client.get("/__mock__/records/contacts/ph_nobody")
    assert response.status_code == 404
    assert response.json()["reason"] == "no_record"
    assert "ph_nobody" in response.json()["error"]


# -- the fixture's operations ------------------------------------------------------------------

def test_reset(mock_control: MockControl, api: Any) -> None:
    assert api("POST", f"/v1/tickets/{TICKET}/resolve").status_code == 200
    assert mock_control.get("tickets", TICKET)["status"] == "resolved"  # type: ignore[index]
    mock_control.reset()
    assert mock_control.get("tickets", TICKET)["status"] == "new"  # type: ignore[index]


def test_add_and_get(mock_control: MockControl) -> None:
    added = mock_control.add("tickets", {"subject": "over both transports"}, None)
    assert mock_control.get("tickets", added["id"]) == added
    assert mock_control.get("tickets", "xd_nobody") is None
    with pytest.raises(pytest.UsageError, match=r"mock_api\.get: no table 'nope'"):
        mock_control.get("nope", "x")
    with pytest.raises(pytest.UsageError, match=r"mock_api\.add: no table 'nope'"):
        mock_control.add("nope", {}, None)
    with pytest.raises(ValueError, match=r"mock_api.add\('tickets'\): .*'priority'"):
        mock_control.add("tickets", {"priority": "whenever"}, None)


def test_fault(mock_control: MockControl, api: Any) -> None:
    rule = mock_control.fault({"method": "GET", "path": "/v1/models", "status": 503,
                               "count": 1, "delay_ms": 0, "drop": False, "probability": 1.0,
                               "error": None, "headers": {}})
    assert (rule.status, rule.count, rule.hits) == (503, 1, 0)
    assert api("GET", "/v1/models").status_code == 503
    assert api("GET", "/v1/models").status_code == 200
    with pytest.raises(ValueError, match=r"nearest operation path is '/v1/contacts/\{id\}'"):
        mock_control.fault({"method": None, "path": "/v1/contact/{id}", "status": 503,
                            "count": 1})


def test_set_rate_limit(mock_control: MockControl, api: Any) -> None:
    mock_control.set_rate_limit(1, None, None)
    assert api("GET", "/v1/models").status_code == 200
    assert api("GET", "/v1/models").status_code == 429
    mock_control.set_rate_limit(None, None, False)
    assert api("GET", "/v1/models").status_code == 200


def test_requests_and_their_count(mock_control: MockControl, api: Any) -> None:
    assert api("GET", "/v1/models").status_code == 200
    assert api("GET", f"/v1/tickets/{TICKET}").status_code == 200
    assert api("GET", "/v1/tickets/xd_nobody").status_code == 404
    found = mock_control.requests(None, "/v1/tickets", None)
    assert all(type(entry) is RecordedRequest for entry in found)  # one type, both transports
    assert [(e.method, e.path, e.status) for e in found] == [
        ("GET", f"/v1/tickets/{TICKET}", 200), ("GET", "/v1/tickets/xd_nobody", 404)]
    assert found[0].headers["authorization"] != auth()["Authorization"]  # redacted
    assert mock_control.request_count(None, None, None) == 3
    assert mock_control.request_count(None, "/v1/tickets", None) == 2
    assert mock_control.request_count("GET", None, 404) == 1
    assert mock_control.request_count("POST", None, None) == 0


def test_clock(mock_control: MockControl) -> None:
    now, frozen = mock_control.clock()
    assert (now, frozen) == ("2026-11-01T12:00:00.000Z", True)
    mock_control.advance_clock(90)
    assert mock_control.clock()[0] == "2026-11-01T12:01:30.000Z"
    mock_control.set_clock("2027-01-01T00:00:00Z")
    assert mock_control.clock()[0] == "2027-01-01T00:00:00.000Z"


def test_snapshot(mock: MockApp, mock_control: MockControl) -> None:
    name = mock_control.snapshot(None)
    try:
        assert name == f"{mock_control.session}-snap"
        [described] = [s for s in mock.sessions.snapshots() if s["name"] == name]
        assert described["session"] == mock_control.session
    finally:
        mock.sessions.delete_snapshot(name)


# -- progression (issue 40): modes, transitions, scripts ---------------------------------------

def test_progression_modes(mock_control: MockControl) -> None:
    from mockserver.engine.progression import Refused

    assert mock_control.progression(None)["kinds"]["agent_runs"]["mode"] == "time"
    set_ = mock_control.progression({"kinds": {"messages": {"mode": "manual"}}})
    assert set_["kinds"]["messages"] == {"mode": "manual", "running_after": 3, "done_after": 60}
    assert mock_control.progression(None)["kinds"]["messages"]["mode"] == "manual"
    with pytest.raises(Refused) as refused:
        mock_control.progression({"kinds": {"messages": {"mode": "later"}}})
    assert refused.value.status == 400 and "mode" in str(refused.value)


def test_transition_and_scripts(mock_control: MockControl, api: Any) -> None:
    from mockserver.engine.progression import Refused

    agent, trigger = "ag_harbor_concierge", "tr_harbor_concierge_precheckin"
    mock_control.progression({"kinds": {"agent_runs": {"mode": "manual"}}})
    script = mock_control.script("agents", agent, [{"status": "failed", "error": "boom"}])
    assert script["remaining"] == 1
    run_id = api("POST", f"/v1/agents/{agent}/run",
                 json={"trigger_id": trigger}).json()["data"]["run_id"]
    [run] = [r for r in api("GET", f"/v1/agents/{agent}/runs").json()["data"]
             if r["run_id"] == run_id]
    assert run["status"] == "accepted"
    moved = mock_control.transition("agent_runs", run["id"], {"status": "running"})
    assert moved["status"] == "running"
    with pytest.raises(Refused) as refused:
        mock_control.transition("agent_runs", run["id"], {"status": "accepted"})
    assert refused.value.status == 409 and "is running" in str(refused.value)
    with pytest.raises(Refused) as refused:
        mock_control.transition("agent_runs", "ar_none", {"status": "failed"})
    assert refused.value.status == 404
    scripts = mock_control.scripts()
    assert scripts["agents"][agent]["consumed"] == 1 and scripts["misses"] == []
    with pytest.raises(Refused) as refused:
        mock_control.script("workflows", "wf_none", [])
    assert refused.value.status == 404


# -- shared state: a control call first applies what other workers changed -------------------

@pytest.mark.skipif(not SHARED_SUITE, reason="needs two workers of a shared state "
                    "(MOCK_TEST_SHARED_STATE=1)")
@pytest.mark.parametrize("transport", ["in_process", "http"])
def test_a_control_call_sees_what_another_worker_changed(
        mock: MockApp, second_worker: MockApp, transport: str) -> None:
    from mockserver.testing.control import ControlClient, HttpControl, InProcessControl
    from mockserver.testing.transport import SyncASGITransport

    InProcessControl(second_worker).advance_clock(60)  # appended by the other worker
    if transport == "in_process":
        control: MockControl = InProcessControl(mock)
    else:
        client = ControlClient("http://mock.test",
                               transport=SyncASGITransport(create_app(mock=mock)))
        control = HttpControl(client, "default")
    assert control.clock()[0] == "2026-11-01T12:01:00.000Z"


# -- simulated inbound events (issue 41) -------------------------------------------------------

def test_simulate_guest_message_and_reservation(mock_control: MockControl, api: Any) -> None:
    from mockserver.engine.progression import Refused

    params = {"workspace_id": "ws_alpine"}
    mock_control.call("setClock", body={"now": "2026-11-01T12:00:00.000Z"})  # 13:00 Vienna
    done = mock_control.simulate("guest-message", {"conversation_id": "ph_felix_huber",
                                                   "body": "Sauna tonight?"})
    assert done["mode"] == "autopilot" and done["agent_id"] == "ag_alpine_host"
    shown = api("GET", "/v1/conversations/ph_felix_huber", params=params).json()["data"]
    assert shown["last_message_preview"] == "Sauna tonight?"
    mock_control.call("setClock", body={"advance_seconds": 15})
    messages = api("GET", "/v1/conversations/ph_felix_huber/messages",
                   params={**params, "limit": 100}).json()["data"]
    assert done["sent_message_id"] in {m["id"] for m in messages}
    with pytest.raises(Refused) as refused:
        mock_control.simulate("guest-message", {"conversation_id": "ph_nobody", "body": "x"})
    assert refused.value.status == 404 and "conversation_id" in str(refused.value)
    booked = mock_control.simulate("reservation", {
        "workspace_id": "ws_alpine", "contact_id": "ph_felix_huber", "status": "confirmed",
        "listing_id": "lst_edelweiss_chalet", "arrival_date": "2027-01-09",
        "departure_date": "2027-01-16"})
    assert booked["trigger"] == "RESERVATION_NEW" and len(booked["execution_ids"]) == 1
    with pytest.raises(Refused) as refused:
        mock_control.simulate("reservation", {"id": "rs_nope", "status": "cancelled"})
    assert refused.value.status == 404


def test_simulate_call_helpdesk_and_delivery(mock_control: MockControl, api: Any) -> None:
    from mockserver.engine.progression import Refused

    call = mock_control.simulate("call", {"contact_id": "ph_tom_gallagher", "duration_ms": 1000})
    assert call["conversation_id"] == "ph_tom_gallagher"
    synced = mock_control.simulate("helpdesk-ticket", {"id": "hd_emma_clarke_zendesk",
                                                       "status": "open"})
    assert synced["status"] == "open"
    with pytest.raises(Refused) as refused:
        mock_control.simulate("delivery", {"message_id": "ms_nope", "status": "read"})
    assert refused.value.status == 404 and "message_id" in str(refused.value)
    with pytest.raises(Refused) as refused:  # an inbound message is not delivered
        mock_control.simulate("delivery", {"message_id": "ms_felix_huber_01", "status": "read"})
    assert refused.value.status in (400, 409)
