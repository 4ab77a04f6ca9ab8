"""Hostile bodies for every simulated event: a 4xx `{"error"}` or a 200, never a 5xx, and a
refusal writes nothing."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient

EVENTS = ("guest-message", "reservation", "call", "helpdesk-ticket", "delivery")
IDS = st.sampled_from(["ph_felix_huber", "ph_tom_gallagher", "ph_nobody", "rs_felix_huber_"
                       "edelweiss_chalet", "hd_emma_clarke_zendesk", "ms_felix_huber_01",
                       "ws_alpine", "ws_desert", "", "x" * 300])
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-5, 10**12), IDS,
                    st.text(max_size=20), st.floats(allow_nan=False, allow_infinity=False))
VALUES = st.recursive(SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=8), inner, max_size=3)),
    max_leaves=6)
FIELDS = st.sampled_from(["id", "conversation_id", "contact_id", "channel", "body",
                          "attachments", "workspace_id", "status", "arrival_date",
                          "departure_date", "duration_ms", "transcript", "message_id",
                          "error", "ticket_id", "num_nights", "guest", "sentiment",
                          "connection_id", "external_ticket_id", "subject", "created_at"])
BODIES = st.one_of(st.dictionaries(FIELDS, VALUES, max_size=6), VALUES)


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(event=st.sampled_from(EVENTS), body=BODIES)
def test_no_hostile_body_answers_5xx_and_a_refusal_writes_nothing(
        api: TestClient, event: str, body: Any) -> None:
    before = api.get("/__mock__/sessions/default").json()["changes"]
    answer = api.post(f"/__mock__/simulate/{event}", json=body)
    assert answer.status_code < 500, answer.text
    if answer.status_code >= 400:
        assert isinstance(answer.json()["error"], str)
        assert api.get("/__mock__/sessions/default").json()["changes"] == before
