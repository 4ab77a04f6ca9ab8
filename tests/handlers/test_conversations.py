"""Conversations: list (order, filters, the polling rule), search, detail, transcript, replies."""

from __future__ import annotations

from conftest import READ, auth

from .conftest import ALPINE, HARBOR, Factory


def ids(response) -> list[str]:
    assert response.status_code == 200, response.text
    return [item["id"] for item in response.json()["data"]]


def walk(client, path: str, **params) -> list[dict]:
    """Every item of a list, page after page."""
    items: list[dict] = []
    params = {"workspace_id": HARBOR, "limit": 7, **params}
    while True:
        body = client.get(path, params=params).json()
        items += body["data"]
        if not body["has_more"]:
            assert body["next_cursor"] is None
            return items
        params["cursor"] = body["next_cursor"]


def test_list_order_and_filters(client, make: Factory) -> None:
    a = make.contact(last_message_at="2026-10-03T00:00:00.000Z", inbox_type_id="owner")
    b = make.contact(last_message_at="2026-10-04T00:00:00.000Z", archived=True)
    make.store.update("conversations", a["id"], {"follow_up_at": "2026-11-09T00:00:00.000Z"})
    make.store.update("conversations", b["id"], {"follow_up_at": "2026-11-08T00:00:00.000Z"})
    keep = {a["id"], b["id"]}
    items = walk(client, "/v1/conversations")
    assert len(items) > 20 and len({i["id"] for i in items}) == len(items)
    stamps = [i["last_message_at"] for i in items]
    assert stamps == sorted(stamps, reverse=True)
    assert [i["id"] for i in items if i["id"] in keep] == [b["id"], a["id"]]
    asc = [i["id"] for i in walk(client, "/v1/conversations", order="asc") if i["id"] in keep]
    assert asc == [a["id"], b["id"]]
    fu = [i["id"] for i in walk(client, "/v1/conversations", sort_by="follow_up_at", order="asc")]
    assert fu.index(b["id"]) < fu.index(a["id"])
    assert all(i["archived"] for i in walk(client, "/v1/conversations", archived="true"))
    assert b["id"] not in {i["id"] for i in walk(client, "/v1/conversations", archived="false")}
    owners = walk(client, "/v1/conversations", inbox_type_id="owner")
    assert a["id"] in {i["id"] for i in owners}
    assert all(i["contact"]["inbox_type_id"] == "owner" for i in owners)
    assert a["id"] not in {i["id"] for i in walk(client, "/v1/conversations", workspace_id=ALPINE)}


def test_polling_rule(client, make: Factory) -> None:
    """sort_by=last_message_at, order=desc, updated_since = highest updated_at seen: exactly
    the conversations written since come back."""
    polled = walk(client, "/v1/conversations")
    high = max(i["updated_at"] for i in polled)
    first = walk(client, "/v1/conversations", updated_since=high)
    assert {i["id"] for i in first} == {i["id"] for i in polled if i["updated_at"] >= high}

    quiet, replied, paused, ticketed = polled[0], polled[-1], polled[-2], polled[-3]
    assert client.post(f"/v1/conversations/{replied['id']}/messages",
                       json={"body": "On our way"}).status_code == 200
    assert client.post(f"/v1/contacts/{paused['id']}/pause-ai").status_code == 200
    t = make.ticket(make.store.get("contacts", ticketed["id"]))
    assert client.post(f"/v1/tickets/{t['id']}/messages", json={"body": "x"}).status_code == 200
    fresh = make.contact(conversation=False, channels=[{"id": "hgn", "type": "airbnb",
                                                        "value": "t"}])
    assert client.post(f"/v1/contacts/{fresh['id']}/messages",
                       json={"channel_node_id": "hgn", "body": "hi"}).status_code == 200

    changed = walk(client, "/v1/conversations", updated_since=high)
    at_bound = {i["id"] for i in polled if i["updated_at"] == high}
    written = {replied["id"], paused["id"], ticketed["id"], fresh["id"]}
    assert {i["id"] for i in changed} == at_bound | written
    assert quiet["id"] not in {i["id"] for i in changed} or quiet["id"] in at_bound
    stamps = [i["last_message_at"] for i in changed]
    assert stamps == sorted(stamps, reverse=True)
    # carrying the new high-water mark: only what is at the bound, nothing older
    high2 = max(i["updated_at"] for i in changed)
    again = walk(client, "/v1/conversations", updated_since=high2)
    assert {i["id"] for i in again} == {i["id"] for i in changed if i["updated_at"] == high2}
    r = client.get("/v1/conversations", params={"workspace_id": HARBOR, "updated_since": "yesterday"})
    assert r.status_code == 400 and "updated_since" in r.json()["error"]


def test_search(client, make: Factory) -> None:
    a = make.contact(first_name="Quillon", last_name="Brask",
                     channels=[{"id": "hgq", "type": "email", "value": "qb@brask.test"},
                               {"id": "hgw", "type": "whatsapp", "value": "+44 7700 900123"}])
    b = make.contact(first_name="Ottilie", last_name="Brask", archived=True)
    make.message(b["id"], body="The JACUZZI-77 filter is clogged")
    keep = {a["id"], b["id"]}

    def search(query: str, **params: str) -> set[str]:
        got = ids(client.get("/v1/conversations/search",
                             params={"workspace_id": HARBOR, "query": query, "limit": 100, **params}))
        return set(got) & keep

    assert search("brask") == keep
    assert search("brask", archived="false") == {a["id"]}
    assert search("qb@brask") == {a["id"]}
    assert search("7700900123") == {a["id"]}
    assert search("7700 900", field="whatsapp") == {a["id"]}
    assert search("jacuzzi-77", field="message") == {b["id"]}
    assert search("jacuzzi-77") == set()
    assert search("quillon", field="first_name") == {a["id"]}
    assert search("qb@brask", field="contact") == {a["id"]}
    assert search("ottilie", field="contact") == {b["id"]}


def test_detail(client, make: Factory) -> None:
    c = make.contact()
    make.insert("conversation_summaries",
                      {"id": c["id"], "summary": "Asked about parking", "sentiment": "neutral"})
    make.ticket(c, status="resolved", created_at="2026-09-01T00:00:00.000Z")
    latest = make.ticket(c, status="pending", created_at="2026-10-01T00:00:00.000Z")
    make.reservation(c, arrival_date="2026-03-01", departure_date="2026-03-05")
    make.reservation(c, arrival_date="2026-11-20", departure_date="2026-11-25",
                     status="cancelled")
    nxt = make.reservation(c, arrival_date="2026-12-01", departure_date="2026-12-05")
    make.reservation(c, arrival_date="2027-01-01", departure_date="2027-01-05")
    d = client.get(f"/v1/conversations/{c['id']}").json()["data"]
    assert d["summary"] == "Asked about parking" and d["sentiment"] == "neutral"
    assert d["ticket"] == {"id": latest["id"], "status": "pending"}
    assert d["reservation"]["id"] == nxt["id"]
    assert d["reservation"]["arrival_date"] == "2026-12-01"

    bare = make.contact()
    d = client.get(f"/v1/conversations/{bare['id']}").json()["data"]
    assert d["summary"] is None and d["sentiment"] is None
    assert d["ticket"] is None and d["reservation"] is None
    past = make.reservation(bare, arrival_date="2026-02-01", departure_date="2026-02-03")
    make.reservation(bare, arrival_date="2026-01-01", departure_date="2026-01-03")
    d = client.get(f"/v1/conversations/{bare['id']}").json()["data"]
    assert d["reservation"]["id"] == past["id"]  # none upcoming: the most recent
    assert client.get("/v1/conversations/phnope").status_code == 404


def test_messages_and_reply(client, make: Factory) -> None:
    c = make.contact(last_message_at="2026-01-01T00:00:00.000Z", ai_paused=False)
    make.store.update("conversations", c["id"], {"authorship": "ai"})
    m1 = make.message(c["id"], created_at="2026-10-01T00:00:00.000Z")
    m2 = make.message(c["id"], created_at="2026-10-02T00:00:00.000Z")
    assert ids(client.get(f"/v1/conversations/{c['id']}/messages")) == [m1["id"], m2["id"]]
    body = "x" * 300
    r = client.post(f"/v1/conversations/{c['id']}/messages",
                    json={"body": body, "sender_id": "gmail_account:stay@harborviewrentals.com"})
    assert r.status_code == 200, r.text
    sent = r.json()["data"]
    assert sent["ticket_id"] is None and sent["conversation_id"] == c["id"]
    assert sent["status"] == "sent"
    msgs = client.get(f"/v1/conversations/{c['id']}/messages", params={"order": "desc"}).json()
    assert msgs["data"][0]["id"] == sent["id"] and msgs["data"][0]["direction"] == "outbound"
    d = client.get(f"/v1/conversations/{c['id']}").json()["data"]
    assert d["last_message_preview"] == body[:140] and d["authorship"] == "mixed"
    assert d["last_message_at"] == msgs["data"][0]["created_at"] == d["updated_at"]
    first = client.get("/v1/conversations", params={"workspace_id": HARBOR}).json()["data"][0]
    assert first["id"] == c["id"] and first["last_message_preview"] == body[:140]
    contact = client.get(f"/v1/contacts/{c['id']}").json()["data"]
    assert contact["last_message_at"] == d["last_message_at"]


def test_reply_refusals(client, make: Factory) -> None:
    c = make.contact()
    path = f"/v1/conversations/{c['id']}/messages"
    r = client.post(path, json={"body": "x", "sender_id": "gmail_account:hallo@alpinelodges.at"})
    assert r.status_code == 400 and "sender_id" in r.json()["error"]
    r = client.post(path, json={"body": ""})
    assert r.status_code == 400 and "body" in r.json()["error"]
    assert client.post(path, json={"body": "x"}, headers=auth(READ)).status_code == 403
    assert ids(client.get(path)) == []
