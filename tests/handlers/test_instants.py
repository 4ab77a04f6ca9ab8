"""Date-time inputs as lenient as the real service, and timestamps at the edges of their form.

Every query parameter that takes an instant accepts any RFC 3339 / ISO 8601 date-time (an
offset, `Z`, with or without seconds and fractions) and answers as it does for the same instant
in the API's own form (DECISIONS B17). Years below 1000 and the first and last instants the form
can write are answered, never a 500 (B18).
"""

from __future__ import annotations

import pytest

from mockserver.engine.clock import MAX_MS, MIN_MS, format_timestamp, normalise_instant

from .conftest import HARBOR, Factory

# The same instant, 2026-10-02T00:00:00.000Z, as clients write it.
SAME_INSTANT = [
    "2026-10-02T00:00:00.000Z",
    "2026-10-02T00:00:00Z",                 # no fraction
    "2026-10-02T00:00:00+00:00",            # Python's datetime.isoformat()
    "2026-10-02T02:00:00.000+02:00",        # another offset
    "2026-10-01T19:00:00-05:00",
    "2026-10-02T02:00:00+0200",             # ISO 8601 basic offset
    "2026-10-02T00:00Z",                    # no seconds
    "2026-10-02t00:00:00z",                 # RFC 3339 lower case
    "2026-10-02 00:00:00Z",                 # RFC 3339's space
    "2026-10-02T00:00:00",                  # no offset: UTC
]


@pytest.mark.parametrize("instant", SAME_INSTANT)
def test_execution_bounds_take_any_form_of_an_instant(client, make: Factory, instant: str) -> None:
    wf = make.workflow()
    e1 = make.execution(wf, started_at="2026-10-01T00:00:00.000Z")
    e2 = make.execution(wf, started_at="2026-10-02T00:00:00.000Z")
    path = f"/v1/workflows/{wf['workflow_id']}/executions"
    after = client.get(path, params={"started_after": instant})
    before = client.get(path, params={"started_before": instant})
    assert after.status_code == before.status_code == 200, (after.text, before.text)
    assert [x["execution_id"] for x in after.json()["data"]] == [e2["execution_id"]]
    assert [x["execution_id"] for x in before.json()["data"]] == [e1["execution_id"]]


def test_updated_since_takes_what_a_generated_client_sends(client, make: Factory) -> None:
    """A client parses `updated_at` into a datetime and sends it back with isoformat(): the
    poll answers as for the API's own form (it was 400 `does not match ^….[0-9]{3}Z$`)."""
    contact = make.contact(updated_at="2026-10-05T08:30:00.250Z")
    canonical = client.get("/v1/conversations", params={
        "workspace_id": HARBOR, "updated_since": "2026-10-05T08:30:00.250Z", "limit": 100})
    iso = client.get("/v1/conversations", params={
        "workspace_id": HARBOR, "updated_since": "2026-10-05T10:30:00.250000+02:00", "limit": 100})
    assert canonical.status_code == iso.status_code == 200, iso.text
    assert iso.json() == canonical.json()
    assert contact["id"] in [c["id"] for c in iso.json()["data"]]
    # A fraction finer than the millisecond is a bound *after* .250: the record is excluded.
    finer = client.get("/v1/conversations", params={
        "workspace_id": HARBOR, "updated_since": "2026-10-05T08:30:00.2501Z", "limit": 100})
    assert contact["id"] not in [c["id"] for c in finer.json()["data"]]


def test_insights_window_echoes_the_api_form(client) -> None:
    r = client.get("/v1/insights/conversation-automation-rate", params={
        "workspace_id": HARBOR, "start": "2030-01-01T01:00:00+01:00", "end": "2030-02-01T00:00Z"})
    assert r.status_code == 200, r.text
    data = r.json()["data"]
    assert (data["period_start"], data["period_end"]) == ("2030-01-01T00:00:00.000Z",
                                                          "2030-02-01T00:00:00.000Z")
    # start == end in another form is still an empty window, refused naming `start`.
    r = client.get("/v1/insights/conversation-automation-rate", params={
        "workspace_id": HARBOR, "start": "2030-01-01T01:00:00+01:00", "end": "2030-01-01T00:00Z"})
    assert r.status_code == 400 and "'start'" in r.json()["error"]


@pytest.mark.parametrize("bad", ["2026-13-01T00:00:00Z", "2026-10-02T24:00:00Z", "2026-10-02",
                                 "yesterday", "2026-10-02T00:00:00+25:00"])
def test_what_names_no_instant_is_refused_naming_the_parameter(client, bad: str) -> None:
    r = client.get("/v1/conversations", params={"workspace_id": HARBOR, "updated_since": bad})
    assert r.status_code == 400, r.text
    assert "updated_since" in r.json()["error"]


@pytest.mark.parametrize(("end", "start"), [
    ("0313-12-12T23:28:25.791Z", "0313-11-12T23:28:25.791Z"),   # the fuzzer's 500
    ("0001-01-10T00:00:00.000Z", "0001-01-01T00:00:00.000Z"),   # end - 30 days before year 1
    ("0001-01-01T00:00:00.001Z", "0001-01-01T00:00:00.000Z"),
])
def test_insights_default_window_in_early_years(client, end: str, start: str) -> None:
    r = client.get("/v1/insights/conversation-automation-rate",
                   params={"workspace_id": HARBOR, "end": end})
    assert r.status_code == 200, r.text
    assert (r.json()["data"]["period_start"], r.json()["data"]["period_end"]) == (start, end)


def test_insights_at_the_last_and_first_instants(client) -> None:
    r = client.get("/v1/insights/conversation-automation-rate",
                   params={"workspace_id": HARBOR, "end": "9999-12-31T23:59:59.999-01:00"})
    assert r.status_code == 200, r.text  # past year 9999 in UTC: the last instant
    assert r.json()["data"]["period_end"] == "9999-12-31T23:59:59.999Z"
    r = client.get("/v1/insights/conversation-automation-rate",
                   params={"workspace_id": HARBOR, "end": "0001-01-01T00:00:00.000Z"})
    assert r.status_code == 400 and "'start'" in r.json()["error"]  # an empty window


def test_timestamps_are_written_with_four_digit_years() -> None:
    assert format_timestamp(-52259992294209) == "0313-12-12T23:28:25.791Z"
    assert format_timestamp(MIN_MS) == "0001-01-01T00:00:00.000Z"
    assert format_timestamp(MAX_MS) == "9999-12-31T23:59:59.999Z"
    for outside in (MIN_MS - 1, MAX_MS + 1):
        with pytest.raises(ValueError):
            format_timestamp(outside)
    assert normalise_instant("0001-01-01T00:30:00+01:00") == "0001-01-01T00:00:00.000Z"
