"""Hypothesis over whole plans (the pytest side's strategies): whatever plan is drawn, the
server takes it as it is (`check_plan` accepts every drawn item) and every answer of a walk
over common reads is valid (no self-check 500)."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from starlette.testclient import TestClient

from mockserver.engine.app import MockApp
from mockserver.openapi.spec import load_spec
from mockserver.robust.catalogue import catalogue_for
from mockserver.robust.strategies import plans

SPEC = load_spec()
CATALOGUE = catalogue_for(SPEC)
READS = [("/v1/tickets", {"workspace_id": "ws_harborview", "limit": 5}),
         ("/v1/tickets/xd_emma_clarke_door_code", {}),
         ("/v1/contacts", {"workspace_id": "ws_harborview"}),
         ("/v1/contacts/ph_emma_clarke", {}),
         ("/v1/conversations", {"workspace_id": "ws_alpine"}),
         ("/v1/agents", {"workspace_id": "ws_harborview"})]
OPS = ["listTickets", "getTicket", "listContacts", "getContact", "listConversations",
       "listAgents"]


def test_drawn_plans_are_taken_and_every_answer_is_valid(mock: MockApp,
                                                          client: TestClient) -> None:
    mock.state.set_rate_limits(enabled=False)
    strategy = plans(CATALOGUE, mock.store, operations=OPS, max_items=5)

    @settings(max_examples=40, deadline=None, derandomize=True,
              suppress_health_check=[HealthCheck.too_slow])
    @given(plan=strategy)
    def walk(plan: list[dict[str, Any]]) -> None:
        mock.state.reset()
        mock.state.set_rate_limits(enabled=False)
        # slow items wait; a drop is a lost connection: both are the answer kinds' own test
        plan = [i for i in plan if i["kind"] not in ("slow", "drop")]
        response = client.put("/__mock__/variations", json={"plan": plan})
        assert response.status_code == 200, response.text
        assert response.json()["plan"] == plan  # taken exactly as drawn
        for path, query in READS * 2:
            answer = client.get(path, params=query)
            assert answer.status_code != 500, answer.text

    walk()
