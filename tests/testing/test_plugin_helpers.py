"""`mock_api` helpers a new user meets first: `add` copies a record of the kind asked (a
knowledge-base file for a body, a folder otherwise) and refuses fields the kind cannot hold;
the clock's reads are methods (`now()`, `is_frozen()`; `frozen` deprecated)."""

from __future__ import annotations

import pytest
from conftest import auth
from starlette.testclient import TestClient

from mockserver.engine.app import MockApp
from mockserver.standalone.server import create_app
from mockserver.testing.plugin import MockApi, MockApiConfig, Tokens, Workspaces


def _api(mock: MockApp) -> MockApi:
    return MockApi(MockApiConfig(), base_url="http://127.0.0.1:1", mock=mock,
                   tokens=Tokens("mock-write-token", None, None, None),
                   workspaces=Workspaces("ws_harborview", "ws_alpine", None))


def test_add_with_a_body_makes_a_file_the_api_edits(mock: MockApp) -> None:
    node = _api(mock).add("kb_nodes", title="Parking", body="Park behind the cottage.")
    assert node["is_directory"] is False and node["workspace_id"] == "ws_harborview"
    with TestClient(create_app(mock=mock), headers=auth()) as client:
        response = client.patch(f"/v1/kb/nodes/{node['id']}",
                                params={"workspace_id": "ws_harborview"},
                                json={"body": "Park on the street."})
    assert response.status_code == 200, response.text


def test_add_without_a_body_makes_a_folder(mock: MockApp) -> None:
    api = _api(mock)
    assert api.add("kb_nodes", title="Guides")["is_directory"] is True
    assert api.add("kb_nodes", title="Notes", is_directory=False)["is_directory"] is False


@pytest.mark.parametrize(("fields", "named"), [
    ({"is_directory": True, "body": "text"}, "field 'body': only a file has one"),
    ({"is_directory": True, "entity_ids": ["x"]}, "field 'entity_ids': only a file"),
    ({"is_directory": "yes"}, "field 'is_directory': 'yes' is not one of False, True"),
])
def test_add_refuses_fields_the_kind_cannot_hold(mock: MockApp, fields: dict[str, object],
                                                 named: str) -> None:
    before = mock.state.store.count("kb_nodes")
    with pytest.raises(ValueError, match=named):
        _api(mock).add("kb_nodes", title="Mixed", **fields)
    assert mock.state.store.count("kb_nodes") == before


def test_the_clock_reads_are_methods(mock: MockApp) -> None:
    clock = _api(mock).clock
    assert clock.now() == "2026-11-01T12:00:00.000Z" and clock.is_frozen() is True
    with pytest.warns(DeprecationWarning, match=r"is_frozen\(\)"):
        assert clock.frozen is True  # the old property still answers


def test_add_takes_references_from_the_parent_it_names(mock: MockApp) -> None:
    """A message added to Sofia Rossi's conversation is hers (issue 41): her channel, her
    workspace, no other guest's ticket or sender, the clock's instant."""
    api = _api(mock)
    template = mock.state.dataset.tables["messages"]
    added = api.add("messages", conversation_id="ph_sofia_rossi", direction="inbound",
                    body="Hello from Sofia")
    assert added["channel"] == "unthreaded_email" and added["workspace_id"] == "ws_harborview"
    assert added["ticket_id"] is None
    assert added["sender"]["name"] == "Sofia Rossi"
    assert added["sender"]["external_id"] not in {
        m["sender"]["external_id"] for m in template.values()
        if m["conversation_id"] != "ph_sofia_rossi"}
    assert added["sent_at"] == added["created_at"] >= mock.state.clock.now()
    with pytest.raises(ValueError, match="field 'conversation_id'"):
        api.add("messages", conversation_id="ph_sofia_rossi", ticket_id="xd_aisha_khan_parking",
                body="x")
    with pytest.raises(ValueError, match="'workspace_id'"):
        api.add("tickets", conversation_id="ph_sofia_rossi", workspace_id="ws_alpine")
    ticket = api.add("tickets", conversation_id="ph_sofia_rossi")
    assert ticket["contact_id"] == "ph_sofia_rossi"


def test_simulate_against_a_real_server_skips_naming_it() -> None:
    from mockserver.testing.control import RealServerControl

    with pytest.raises(pytest.skip.Exception, match=r"simulate\.guest_message"):
        RealServerControl("http://127.0.0.1:1").simulate("guest-message", {"body": "x"})
