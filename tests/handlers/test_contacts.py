"""Contacts: list, search heuristics, detail, transcript, proactive messages, AI pause and the
contact-scoped lists."""

from __future__ import annotations

from conftest import READ, auth

from .conftest import ALPINE, HARBOR, Factory


def ids(response) -> list[str]:
    assert response.status_code == 200, response.text
    return [item["id"] for item in response.json()["data"]]


def listed(client, path: str, keep: set[str], **params) -> list[str]:
    got = ids(client.get(path, params={"workspace_id": HARBOR, "limit": 100, **params}))
    return [i for i in got if i in keep]


def test_list_contacts_order_and_filters(client, make: Factory) -> None:
    a = make.contact(last_message_at="2026-10-03T00:00:00.000Z", inbox_type_id="owner")
    b = make.contact(last_message_at="2026-10-04T00:00:00.000Z", archived=True)
    c = make.contact(last_message_at="2026-10-02T00:00:00.000Z")
    make.contact(ALPINE)
    keep = {a["id"], b["id"], c["id"]}
    assert listed(client, "/v1/contacts", keep) == [b["id"], a["id"], c["id"]]
    assert listed(client, "/v1/contacts", keep, order="asc") == [c["id"], a["id"], b["id"]]
    assert listed(client, "/v1/contacts", keep, archived="true") == [b["id"]]
    assert listed(client, "/v1/contacts", keep, archived="false") == [a["id"], c["id"]]
    assert listed(client, "/v1/contacts", keep, inbox_type_id="owner") == [a["id"]]
    item = client.get("/v1/contacts", params={"workspace_id": HARBOR}).json()["data"][0]
    assert "channels" not in item and "last_channel" in item  # ContactListItem shape
    r = client.get("/v1/contacts", params={"workspace_id": HARBOR, "archived": "yes"})
    assert r.status_code == 400 and "archived" in r.json()["error"]


def test_list_contacts_by_follow_up(client, make: Factory) -> None:
    a = make.contact()
    b = make.contact()
    c = make.contact(archived=True)
    make.store.update("conversations", a["id"], {"follow_up_at": "2026-11-05T00:00:00.000Z"})
    make.store.update("conversations", b["id"], {"follow_up_at": "2026-11-03T00:00:00.000Z"})
    make.store.update("conversations", c["id"], {"follow_up_at": "2026-11-04T00:00:00.000Z"})
    keep = {a["id"], b["id"], c["id"]}
    got = listed(client, "/v1/contacts", keep, sort_by="follow_up_at", order="asc")
    assert got == [b["id"], c["id"], a["id"]]
    got = listed(client, "/v1/contacts", keep, sort_by="follow_up_at", order="desc",
                 archived="false")
    assert got == [a["id"], b["id"]]


def test_search_heuristics(client, make: Factory) -> None:
    jo = make.contact(first_name="Joanna", last_name="Vexley",
                      channels=[{"id": "hg1", "type": "unthreaded_email", "value": "JV@Vexmail.test"},
                                {"id": "hg2", "type": "phone", "value": "+1 415-555-0199"}])
    wa = make.contact(first_name="Pietro", last_name="Vexmail",
                      channels=[{"id": "hg3", "type": "whatsapp", "value": "+39 333 987 6543"}])
    keep = {jo["id"], wa["id"]}

    def search(query: str, **params: str) -> set[str]:
        return set(listed(client, "/v1/contacts/search", keep, query=query, **params))

    assert search("jv@vexmail") == {jo["id"]}  # @: email channels only
    assert search("vexmail") == {wa["id"]}  # names (any)
    assert search("vexmail", field="email") == {jo["id"]}
    assert search("4155550199") == {jo["id"]}  # phone-like: digits of phone/whatsapp values
    assert search("333 987") == {wa["id"]}
    assert search("333987", field="phone") == set()
    assert search("333987", field="whatsapp") == {wa["id"]}
    assert search("joanna vex", field="name") == {jo["id"]}
    assert search("JOANNA", field="first_name") == {jo["id"]}
    assert search("joanna", field="last_name") == set()
    assert search("+39", field="channel") == {wa["id"]}
    r = client.get("/v1/contacts/search", params={"workspace_id": HARBOR})
    assert r.status_code == 400 and "query" in r.json()["error"]


def test_get_contact_and_messages(client, make: Factory) -> None:
    c = make.contact()
    m1 = make.message(c["id"], created_at="2026-10-01T00:00:00.000Z")
    m2 = make.message(c["id"], created_at="2026-10-02T00:00:00.000Z")
    make.message(make.contact()["id"])
    got = client.get(f"/v1/contacts/{c['id']}").json()["data"]
    assert got["channels"] == c["channels"] and "last_channel" not in got
    assert ids(client.get(f"/v1/contacts/{c['id']}/messages")) == [m1["id"], m2["id"]]
    assert ids(client.get(f"/v1/contacts/{c['id']}/messages", params={"order": "desc"})) == [
        m2["id"], m1["id"]]


def test_send_contact_message(client, make: Factory) -> None:
    c = make.contact()
    email_node = c["channels"][0]["id"]
    make.clear("senders")
    sender = make.sender(channel="email", is_default=True)
    r = client.post(f"/v1/contacts/{c['id']}/messages",
                    json={"channel_node_id": email_node, "body": "Welcome!", "subject": "Hi"})
    assert r.status_code == 200, r.text
    sent = r.json()["data"]
    assert sent["contact_id"] == c["id"] and sent["channel_node_id"] == email_node
    assert sent["sender_id"] == sender["id"] and sent["status"] == "sent"
    msgs = client.get(f"/v1/contacts/{c['id']}/messages").json()["data"]
    assert msgs[-1]["id"] == sent["id"] and msgs[-1]["body"] == "Welcome!"
    contact = client.get(f"/v1/contacts/{c['id']}").json()["data"]
    assert contact["last_message_at"] == msgs[-1]["created_at"]
    conv = client.get(f"/v1/conversations/{c['id']}").json()["data"]
    assert conv["last_message_preview"] == "Welcome!" and conv["updated_at"] == msgs[-1]["created_at"]
    first = client.get("/v1/contacts", params={"workspace_id": HARBOR}).json()["data"][0]
    assert first["id"] == c["id"] and first["last_message_preview"] == "Welcome!"


def test_send_contact_message_starts_a_conversation(client, make: Factory) -> None:
    c = make.contact(conversation=False)
    assert client.get(f"/v1/conversations/{c['id']}").status_code == 404
    r = client.post(f"/v1/contacts/{c['id']}/messages",
                    json={"channel_node_id": c["channels"][1]["id"], "body": "Ciao"})
    assert r.status_code == 200, r.text
    conv = client.get(f"/v1/conversations/{c['id']}").json()["data"]
    assert conv["last_message_preview"] == "Ciao" and conv["channel"] == "whatsapp"


def test_send_contact_message_refusals(client, make: Factory) -> None:
    c = make.contact()
    email_node, wa_node = c["channels"][0]["id"], c["channels"][1]["id"]
    make.clear("senders")
    email_sender = make.sender(channel="email")
    alpine_sender = make.sender(ALPINE, channel="whatsapp")
    template = make.template()
    path = f"/v1/contacts/{c['id']}/messages"
    cases = [
        ({"channel_node_id": "hgnope", "body": "x"}, "channel_node_id"),
        ({"channel_node_id": wa_node, "body": "x", "sender_id": alpine_sender["id"]}, "sender_id"),
        ({"channel_node_id": wa_node, "body": "x", "sender_id": email_sender["id"]}, "sender_id"),
        ({"channel_node_id": wa_node, "body": "x", "sender_id": "gmail_account:nobody@x"},
         "sender_id"),
        ({"channel_node_id": email_node, "whatsapp_template": {"content_sid": template["content_sid"]}},
         "whatsapp_template"),
        ({"channel_node_id": wa_node, "subject": "s", "body": "x",
          "sender_id": alpine_sender["id"]}, "subject"),
        ({"channel_node_id": wa_node, "whatsapp_template": {"content_sid": "HX" + "0" * 32}},
         "whatsapp_template/content_sid"),
        ({"channel_node_id": email_node}, "body"),
    ]
    for body, field in cases:
        r = client.post(path, json=body)
        assert r.status_code == 400, (body, r.text)
        assert field in r.json()["error"], (field, r.text)
    assert client.get(f"/v1/contacts/{c['id']}/messages").json()["data"] == []
    # two compatible senders and no default: sender_id is required
    make.sender(channel="email")
    r = client.post(path, json={"channel_node_id": email_node, "body": "x"})
    assert r.status_code == 400 and "sender_id" in r.json()["error"]
    r = client.post(path, json={"channel_node_id": email_node, "body": "x",
                                "sender_id": email_sender["id"]})
    assert r.status_code == 200 and r.json()["data"]["sender_id"] == email_sender["id"]
    # no sender at all for a channel: refused; channels served by their integration need none
    make.clear("senders")
    r = client.post(path, json={"channel_node_id": wa_node, "body": "x"})
    assert r.status_code == 400 and "sender_id" in r.json()["error"]


def test_send_on_an_integration_channel(client, make: Factory) -> None:
    c = make.contact(channels=[{"id": "hgair", "type": "airbnb", "value": "thread-77"}])
    path = f"/v1/contacts/{c['id']}/messages"
    r = client.post(path, json={"channel_node_id": "hgair", "body": "x",
                                "sender_id": "gmail_account:stay@harborviewrentals.com"})
    assert r.status_code == 400 and "sender_id" in r.json()["error"]
    r = client.post(path, json={"channel_node_id": "hgair", "body": "See you soon"})
    assert r.status_code == 200, r.text
    assert r.json()["data"]["sender_id"] == f"airbnb:{HARBOR}"
    assert r.json()["data"]["channel"] == "airbnb"


def test_send_whatsapp_template(client, make: Factory) -> None:
    c = make.contact()
    template = make.template()
    r = client.post(f"/v1/contacts/{c['id']}/messages", json={
        "channel_node_id": c["channels"][1]["id"],
        "whatsapp_template": {"content_sid": template["content_sid"],
                              "variables": {"1": "Ada", "2": "Harbor Loft"}}})
    assert r.status_code == 200, r.text
    msgs = client.get(f"/v1/contacts/{c['id']}/messages").json()["data"]
    assert msgs[-1]["body"] == "Hi Ada, welcome to Harbor Loft!"


def test_only_an_approved_template_is_sent(client, make: Factory) -> None:
    """The template's `status` (the reference's name) decides: pending or rejected is a 400
    naming the field, and nothing is sent."""
    c = make.contact()
    for status in ("pending", "rejected"):
        template = make.template(status=status)
        r = client.post(f"/v1/contacts/{c['id']}/messages", json={
            "channel_node_id": c["channels"][1]["id"],
            "whatsapp_template": {"content_sid": template["content_sid"]}})
        assert r.status_code == 400, r.text
        assert "whatsapp_template/content_sid" in r.json()["error"] and status in r.json()["error"]
    assert client.get(f"/v1/contacts/{c['id']}/messages").json()["data"] == []


def test_pause_and_resume_ai(client, make: Factory) -> None:
    c = make.contact()
    r = client.post(f"/v1/contacts/{c['id']}/pause-ai")
    assert r.status_code == 200 and r.json()["data"]["ai_paused"] is True
    assert client.get(f"/v1/contacts/{c['id']}").json()["data"]["ai_paused"] is True
    conv = client.get(f"/v1/conversations/{c['id']}").json()["data"]
    assert conv["ai_paused"] is True and conv["updated_at"] > c["updated_at"]
    assert client.post(f"/v1/contacts/{c['id']}/pause-ai").json()["data"]["ai_paused"] is True
    assert client.post(f"/v1/contacts/{c['id']}/resume-ai").json()["data"]["ai_paused"] is False
    assert client.get(f"/v1/conversations/{c['id']}").json()["data"]["ai_paused"] is False
    assert client.post(f"/v1/contacts/{c['id']}/pause-ai", headers=auth(READ)).status_code == 403


def test_contact_reservations_sorting(client, make: Factory) -> None:
    c = make.contact()
    r1 = make.reservation(c, arrival_date="2026-05-01", departure_date="2026-05-20",
                          created_at="2026-01-03T00:00:00.000Z")
    r2 = make.reservation(c, arrival_date="2026-06-01", departure_date="2026-06-03",
                          created_at="2026-01-01T00:00:00.000Z", status="cancelled")
    r3 = make.reservation(c, arrival_date="2026-04-01", departure_date="2026-06-10",
                          created_at="2026-01-02T00:00:00.000Z")
    make.reservation(make.contact())
    path = f"/v1/contacts/{c['id']}/reservations"
    assert ids(client.get(path)) == [r2["id"], r1["id"], r3["id"]]
    assert ids(client.get(path, params={"order": "asc"})) == [r3["id"], r1["id"], r2["id"]]
    assert ids(client.get(path, params={"sort_by": "departure"})) == [r3["id"], r2["id"], r1["id"]]
    assert ids(client.get(path, params={"sort_by": "created"})) == [r1["id"], r3["id"], r2["id"]]
    assert ids(client.get(path, params={"status": "cancelled"})) == [r2["id"]]


def test_contact_helpdesk_tickets_and_appointments(client, make: Factory) -> None:
    c = make.contact()
    h1 = make.helpdesk_ticket(c, last_external_update_at="2026-10-01T00:00:00.000Z")
    h2 = make.helpdesk_ticket(c, last_external_update_at="2026-10-02T00:00:00.000Z",
                              status="solved", channel="web", connection_id="cn2")
    path = f"/v1/contacts/{c['id']}/helpdesk-tickets"
    assert ids(client.get(path)) == [h2["id"], h1["id"]]
    assert ids(client.get(path, params={"order": "asc"})) == [h1["id"], h2["id"]]
    for params in ({"status": "solved"}, {"channel": "web"}, {"connection_id": "cn2"}):
        assert ids(client.get(path, params=params)) == [h2["id"]]
    a1 = make.appointment(c, start_at="2026-10-01T00:00:00.000Z")
    a2 = make.appointment(c, start_at="2026-10-02T00:00:00.000Z", status="no_show")
    path = f"/v1/contacts/{c['id']}/appointments"
    assert ids(client.get(path)) == [a2["id"], a1["id"]]
    assert ids(client.get(path, params={"order": "asc"})) == [a1["id"], a2["id"]]
    assert ids(client.get(path, params={"status": "no_show"})) == [a2["id"]]
