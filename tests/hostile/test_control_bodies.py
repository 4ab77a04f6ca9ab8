"""Control bodies: integral floats in integer fields are integers (a refused PUT leaves the
previous plan whole); records added through the control API are checked as fixtures are,
internal fields included; the journal entry's repr redacts as its views do (DECISIONS H25,
H28, H29)."""

from __future__ import annotations

from typing import Any

import pytest
from conftest import WRITE
from starlette.testclient import TestClient

from mockserver.data.tables import TABLES
from mockserver.engine.app import MockApp
from mockserver.robust import control as robust_control

WS = "ws_harborview"


def test_an_integral_float_in_an_integer_field_is_an_integer(client: TestClient) -> None:
    answer = client.put("/__mock__/variations", json={"seed": 7.0, "size": 3.0})
    assert answer.status_code == 200, answer.text
    assert len(answer.json()["plan"]) == 3
    assert client.post("/__mock__/rate-limits", json={"per_minute": 5.0}).json()["per_minute"] == 5
    refused = client.put("/__mock__/variations", json={"seed": 7, "size": 2.5})
    assert refused.status_code == 400 and "size" in refused.json()["error"]
    client.delete("/__mock__/variations")


def _records(mock: MockApp) -> dict[str, list[Any]]:
    return {table: list(mock.store.all(table)) for table in TABLES}


def test_a_refused_put_leaves_the_previous_plan_whole(client: TestClient, mock: MockApp,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    first = client.put("/__mock__/variations", json={"seed": 7, "size": 3})
    assert first.status_code == 200
    before = client.get("/__mock__/variations").json()
    records_before = _records(mock)

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise TypeError("a bug of ours")

    monkeypatch.setattr(robust_control, "draw_plan", broken)
    refused = client.put("/__mock__/variations", json={"seed": 8, "size": 3})
    assert refused.status_code == 500
    monkeypatch.undo()
    assert client.get("/__mock__/variations").json() == before
    assert _records(mock) == records_before  # the plan's content still written
    client.delete("/__mock__/variations")


@pytest.mark.parametrize(("table", "values", "field"), [
    ("users", {"_workspace_ids": {WS: 1}}, "_workspace_ids"),
    ("users", {"_workspace_ids": [[WS]]}, "_workspace_ids"),
    ("agents", {"workspace_id": WS, "_tool_states": {"x": "yes"}}, "_tool_states"),
    ("agent_runs", {"workspace_id": WS, "_workspace_id": 3}, "_workspace_id"),
])
def test_a_record_with_a_bad_internal_field_is_refused_400(
        client: TestClient, table: str, values: dict[str, Any], field: str) -> None:
    before = client.get(f"/v1/workspaces/{WS}/users").json()
    refused = client.post(f"/__mock__/records/{table}", json=values)
    assert refused.status_code == 400, refused.text
    assert field in refused.json()["error"]
    assert client.get(f"/v1/workspaces/{WS}/users").json() == before


def test_a_record_with_good_internal_fields_is_added(client: TestClient) -> None:
    added = client.post("/__mock__/records/users", json={"_workspace_ids": [WS]})
    assert added.status_code == 201, added.text
    listed = client.get(f"/v1/workspaces/{WS}/users", params={"limit": 100})
    assert listed.status_code == 200, listed.text


def test_the_journal_entry_repr_redacts_the_token(client: TestClient, mock: MockApp) -> None:
    assert client.get("/v1/models").status_code == 200
    (entry,) = mock.journal.entries(path="/v1/models")
    assert WRITE not in repr(entry) and WRITE not in str(entry)
    assert "authorization" in repr(entry) and entry.headers["authorization"] in repr(entry)
