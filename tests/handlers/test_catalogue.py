"""The read-only families: conversation tags, calls, reservations, Airbnb transactions,
appointments and helpdesk tickets."""

from __future__ import annotations

from conftest import OTHER, auth

from .conftest import ALPINE, HARBOR, PAST, Factory


def ids(response, key: str = "id") -> list[str]:
    assert response.status_code == 200, response.text
    return [item[key] for item in response.json()["data"]]


def mine(client, path: str, keep: set[str], **params) -> list[str]:
    got = ids(client.get(path, params={"workspace_id": HARBOR, "limit": 100, **params}))
    return [i for i in got if i in keep]


def test_conversation_tags(client, make: Factory) -> None:
    def tag(name: str, kind: str, ws: str = HARBOR) -> dict:
        record = {"id": f"ct_{name}", "workspace_id": ws, "name": name, "kind": kind,
                  "parent_id": None, "description": None, "color": None,
                  "conversation_count": 0, "created_at": PAST, "updated_at": PAST}
        make.insert("conversation_tags", record)
        return record

    b, a, c = tag("zz-b", "label"), tag("zz-a", "root_topic"), tag("zz-c", "label")
    tag("zz-d", "label", ALPINE)
    keep = {a["id"], b["id"], c["id"]}
    assert mine(client, "/v1/conversation-tags", keep) == [a["id"], b["id"], c["id"]]
    assert mine(client, "/v1/conversation-tags", keep, kind="label") == [b["id"], c["id"]]
    names = [t["name"] for t in client.get("/v1/conversation-tags",
                                           params={"workspace_id": HARBOR, "limit": 100}).json()["data"]]
    assert names == sorted(names)
    assert client.get(f"/v1/conversation-tags/{a['id']}").json()["data"]["kind"] == "root_topic"
    assert client.get("/v1/conversation-tags/ct_zz-d", headers=auth(OTHER)).status_code == 403
    r = client.get("/v1/conversation-tags/ct_zz-d", params={"workspace_id": HARBOR})
    assert r.status_code == 404


def test_calls(client, make: Factory) -> None:
    c1, c2 = make.contact(), make.contact()
    a = make.call(c1, started_at="2026-10-01T00:00:00.000Z")
    b = make.call(c2, started_at="2026-10-02T00:00:00.000Z", direction="outbound")
    keep = {a["id"], b["id"]}
    assert mine(client, "/v1/calls", keep) == [b["id"], a["id"]]
    assert mine(client, "/v1/calls", keep, order="asc") == [a["id"], b["id"]]
    assert mine(client, "/v1/calls", keep, contact_id=c1["id"]) == [a["id"]]
    assert mine(client, "/v1/calls", keep, direction="outbound") == [b["id"]]
    assert client.get(f"/v1/calls/{a['id']}").json()["data"]["contact_id"] == c1["id"]


def test_reservations_and_transactions(client, make: Factory) -> None:
    c = make.contact()
    a = make.reservation(c, arrival_date="2026-10-01", listing_id="L-a")
    b = make.reservation(c, arrival_date="2026-10-05", status="cancelled")
    keep = {a["id"], b["id"]}
    assert mine(client, "/v1/reservations", keep) == [b["id"], a["id"]]
    assert mine(client, "/v1/reservations", keep, order="asc") == [a["id"], b["id"]]
    assert mine(client, "/v1/reservations", keep, status="cancelled") == [b["id"]]
    assert mine(client, "/v1/reservations", keep, listing_id="L-a") == [a["id"]]
    assert client.get(f"/v1/reservations/{a['id']}").json()["data"]["listing_id"] == "L-a"
    dates = [r["arrival_date"] for r in client.get(
        "/v1/reservations", params={"workspace_id": HARBOR, "limit": 100}).json()["data"]]
    assert dates == sorted(dates, reverse=True)

    def txn(tid: str, date: str, kind: str, reservation_id: str | None) -> None:
        make.insert("airbnb_transactions", {
            "id": tid, "workspace_id": HARBOR, "reservation_id": reservation_id,
            "confirmation_code": None, "listing_id": None, "type": kind, "date": date,
            "start_date": None, "nights": None, "guest_name": None, "currency": "USD",
            "amount": 1, "paid_out": 0, "host_fee": 0, "cleaning_fee": 0, "gross_earnings": 1,
            "details": None, "created_at": PAST})

    txn("at_t1", "2026-10-01", "reservation", a["id"])
    txn("at_t2", "2026-10-03", "payout", None)
    keep = {"at_t1", "at_t2"}
    assert mine(client, "/v1/airbnb/transactions", keep) == ["at_t2", "at_t1"]
    assert mine(client, "/v1/airbnb/transactions", keep, order="asc") == ["at_t1", "at_t2"]
    assert mine(client, "/v1/airbnb/transactions", keep, type="payout") == ["at_t2"]
    assert mine(client, "/v1/airbnb/transactions", keep, reservation_id=a["id"]) == ["at_t1"]


def test_appointments(client, make: Factory) -> None:
    c = make.contact()
    a = make.appointment(c, start_at="2026-10-01T00:00:00.000Z")
    b = make.appointment(c, start_at="2026-10-02T00:00:00.000Z", status="cancelled")
    keep = {a["id"], b["id"]}
    assert mine(client, "/v1/appointments", keep) == [b["id"], a["id"]]
    assert mine(client, "/v1/appointments", keep, order="asc") == [a["id"], b["id"]]
    assert mine(client, "/v1/appointments", keep, status="cancelled") == [b["id"]]
    assert client.get(f"/v1/appointments/{a['id']}").json()["data"]["id"] == a["id"]
    r = client.get("/v1/appointments", params={"workspace_id": HARBOR, "status": "lost"})
    assert r.status_code == 400 and "status" in r.json()["error"]


def test_helpdesk_tickets(client, make: Factory) -> None:
    c = make.contact()
    a = make.helpdesk_ticket(c, last_external_update_at="2026-10-01T00:00:00.000Z")
    b = make.helpdesk_ticket(c, last_external_update_at="2026-10-02T00:00:00.000Z",
                             status="pending", channel="chat", connection_id="cn_z")
    keep = {a["id"], b["id"]}
    assert mine(client, "/v1/helpdesk-tickets", keep) == [b["id"], a["id"]]
    assert mine(client, "/v1/helpdesk-tickets", keep, order="asc") == [a["id"], b["id"]]
    for params in ({"status": "pending"}, {"channel": "chat"}, {"connection_id": "cn_z"}):
        assert mine(client, "/v1/helpdesk-tickets", keep, **params) == [b["id"]]
    assert client.get(f"/v1/helpdesk-tickets/{b['id']}").json()["data"]["status"] == "pending"
    assert client.get("/v1/helpdesk-tickets/hdnope").status_code == 404
