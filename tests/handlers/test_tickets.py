"""Tickets: queue filters, search, transcript, replies, notes and the state machine."""

from __future__ import annotations

from conftest import COLLEAGUE, OTHER, READ, auth

from mockserver.engine.clock import parse_timestamp

from .conftest import ALPINE, HARBOR, Factory


def ids(response) -> list[str]:
    assert response.status_code == 200, response.text
    return [item["id"] for item in response.json()["data"]]


# -- the queue ------------------------------------------------------------------------------


def test_list_filters_and_order(client, make: Factory) -> None:
    c = make.contact()
    new = make.ticket(c, status="new", last_message_at="2026-10-05T00:00:00.000Z",
                      waiting_on="customer", channel="whatsapp", inbox_type_id="owner")
    pending = make.ticket(c, status="pending", last_message_at="2026-10-06T00:00:00.000Z")
    resolved = make.ticket(c, status="resolved", last_message_at="2026-10-07T00:00:00.000Z")
    closed = make.ticket(c, status="closed", last_message_at="2026-10-08T00:00:00.000Z")
    other_ws = make.ticket(make.contact(ALPINE), status="new")
    mine = {new["id"], pending["id"], resolved["id"], closed["id"]}

    def listed(**params: str) -> list[str]:
        got = ids(client.get("/v1/tickets", params={"workspace_id": HARBOR, "limit": 100, **params}))
        assert other_ws["id"] not in got
        return [i for i in got if i in mine]

    assert listed() == [closed["id"], resolved["id"], pending["id"], new["id"]]
    assert listed(order="asc") == [new["id"], pending["id"], resolved["id"], closed["id"]]
    assert listed(status="open") == [pending["id"], new["id"]]
    assert listed(status="resolved") == [resolved["id"]]
    assert listed(waiting_on="customer") == [new["id"]]
    assert listed(channel="whatsapp") == [new["id"]]
    assert listed(inbox_type_id="owner") == [new["id"]]


def test_search_matches_subject_summary_and_preview(client, make: Factory) -> None:
    c = make.contact()
    by_subject = make.ticket(c, subject="Broken KETTLE-x9", status="new")
    by_summary = make.ticket(c, summary="guest reports kettle-X9 noise", status="resolved")
    by_preview = make.ticket(c, last_message_preview="the Kettle-x9 is fixed", status="pending")
    make.ticket(c, subject="nothing here")
    got = ids(client.get("/v1/tickets/search",
                         params={"workspace_id": HARBOR, "query": "kettle-x9", "limit": 100}))
    assert set(got) == {by_subject["id"], by_summary["id"], by_preview["id"]}
    got = ids(client.get("/v1/tickets/search", params={"workspace_id": HARBOR,
                                                       "query": "KETTLE-X9", "status": "open"}))
    assert set(got) == {by_subject["id"], by_preview["id"]}


def test_get_ticket_and_contact_tickets(client, make: Factory) -> None:
    c = make.contact()
    t1 = make.ticket(c, status="new", last_message_at="2026-10-02T00:00:00.000Z")
    t2 = make.ticket(c, status="closed", last_message_at="2026-10-03T00:00:00.000Z")
    make.ticket(make.contact())  # another contact's
    r = client.get(f"/v1/tickets/{t1['id']}")
    assert r.status_code == 200 and r.json()["data"]["subject"] == t1["subject"]
    assert ids(client.get(f"/v1/contacts/{c['id']}/tickets")) == [t2["id"], t1["id"]]
    assert ids(client.get(f"/v1/contacts/{c['id']}/tickets", params={"status": "open"})) == [t1["id"]]
    assert client.get("/v1/tickets/xdnope").status_code == 404
    r = client.get(f"/v1/tickets/{t1['id']}", params={"workspace_id": ALPINE})
    assert r.status_code == 404


def test_ticket_of_another_workspace_is_forbidden(client, make: Factory) -> None:
    t = make.ticket(make.contact())
    assert client.get(f"/v1/tickets/{t['id']}", headers=auth(OTHER)).status_code == 403


# -- transcript and replies --------------------------------------------------------------


def test_send_message_moves_ticket_conversation_and_contact(client, make: Factory) -> None:
    c = make.contact()
    t = make.ticket(c)
    make.message(c["id"], ticket_id=t["id"], created_at="2026-10-01T09:00:00.000Z")
    make.message(c["id"], created_at="2026-10-01T08:00:00.000Z")  # not in the ticket
    body = "Your door code is 4821. " * 10
    r = client.post(f"/v1/tickets/{t['id']}/messages", json={"body": body})
    assert r.status_code == 200, r.text
    sent = r.json()["data"]
    assert sent["ticket_id"] == t["id"] and sent["conversation_id"] == c["id"]
    assert sent["status"] == "sent" and sent["channel"] == t["channel"]

    msgs = client.get(f"/v1/tickets/{t['id']}/messages").json()["data"]
    assert [m["id"] for m in msgs][-1] == sent["id"] and len(msgs) == 2
    new = msgs[-1]
    assert new["direction"] == "outbound" and new["body"] == body
    assert new["sender"]["user_id"] == make.user_id() and new["attachments"] == []
    desc = client.get(f"/v1/tickets/{t['id']}/messages", params={"order": "desc"}).json()["data"]
    assert desc[0]["id"] == sent["id"]

    ticket = client.get(f"/v1/tickets/{t['id']}").json()["data"]
    assert ticket["last_message_at"] == new["created_at"] == ticket["updated_at"]
    assert ticket["last_message_preview"] == body[:140]
    assert ticket["first_response_at"] == t["first_response_at"]  # already set: unchanged
    assert ticket["time_to_first_response_ms"] == t["time_to_first_response_ms"]

    conv = client.get(f"/v1/conversations/{c['id']}").json()["data"]
    assert conv["last_message_at"] == new["created_at"] and conv["updated_at"] == new["created_at"]
    assert conv["last_message_preview"] == body[:140] and conv["authorship"] == "human"
    listed = client.get("/v1/conversations", params={"workspace_id": HARBOR}).json()["data"]
    assert listed[0]["id"] == c["id"]
    contact = client.get(f"/v1/contacts/{c['id']}").json()["data"]
    assert contact["last_message_at"] == new["created_at"]
    in_conv = client.get(f"/v1/conversations/{c['id']}/messages").json()["data"]
    assert sent["id"] in [m["id"] for m in in_conv]


def test_send_message_needs_write_token(client, make: Factory) -> None:
    t = make.ticket(make.contact())
    r = client.post(f"/v1/tickets/{t['id']}/messages", json={"body": "x"}, headers=auth(READ))
    assert r.status_code == 403


def _upload(client, data: bytes, content_type: str, ws: str = HARBOR) -> str:
    r = client.post("/v1/attachments/upload-url", json={"workspace_id": ws})
    assert r.status_code == 201, r.text
    url = r.json()["data"]["upload_url"]
    path = url.split("://", 1)[1].split("/", 1)[1]
    put = client.put("/" + path, content=data, headers={"Content-Type": content_type})
    assert put.status_code == 200, put.text
    return put.json()["storageId"]


def _attachment(storage_id: str, size: int, content_type: str = "application/pdf") -> dict:
    return {"attachment_id": storage_id, "filename": "guide.pdf", "content_type": content_type,
            "size": size}


def test_send_message_with_attachment(client, make: Factory) -> None:
    c = make.contact()
    t = make.ticket(c)
    sid = _upload(client, b"%PDF-1.7 guide", "application/pdf")
    r = client.post(f"/v1/tickets/{t['id']}/messages",
                    json={"body": "see attached", "attachments": [_attachment(sid, 14)]})
    assert r.status_code == 200, r.text
    msgs = client.get(f"/v1/tickets/{t['id']}/messages").json()["data"]
    (att,) = msgs[-1]["attachments"]
    assert att["name"] == "guide.pdf" and att["content_type"] == "application/pdf"
    assert sid in att["url"]


def test_attachment_refusals_name_the_field(client, make: Factory) -> None:
    t = make.ticket(make.contact())
    sid = _upload(client, b"12345", "image/png")
    alpine_sid = _upload(client, b"12345", "image/png", ws=ALPINE)
    cases = [
        ([_attachment(sid, 5, "image/png"), _attachment("stnope", 5, "image/png")],
         "attachments/1/attachment_id"),
        ([_attachment(alpine_sid, 5, "image/png")], "attachments/0/attachment_id"),
        ([_attachment(sid, 6, "image/png")], "attachments/0/size"),
        ([_attachment(sid, 5, "image/jpeg")], "attachments/0/content_type"),
    ]
    for attachments, field in cases:
        r = client.post(f"/v1/tickets/{t['id']}/messages",
                        json={"body": "x", "attachments": attachments})
        assert r.status_code == 400 and field in r.json()["error"], r.text
        r = client.post(f"/v1/tickets/{t['id']}/notes",
                        json={"body": "x", "attachments": attachments})
        assert r.status_code == 400 and field in r.json()["error"], r.text
    # nothing was written by the refused requests
    assert client.get(f"/v1/tickets/{t['id']}/messages").json()["data"] == []
    assert client.get(f"/v1/tickets/{t['id']}/notes").json()["data"] == []


# -- notes ------------------------------------------------------------------------------------


def test_create_note_and_list(client, make: Factory) -> None:
    t = make.ticket(make.contact())
    old = make.note(t, make.colleague_id(), created_at="2026-10-01T00:00:00.000Z")
    sid = _upload(client, b"abc", "text/plain; charset=utf-8")
    r = client.post(f"/v1/tickets/{t['id']}/notes", json={
        "body": "VIP guest", "mention_user_ids": [make.colleague_id()],
        "attachments": [{"attachment_id": sid, "filename": "a.txt", "content_type": "text/plain",
                         "size": 3}],
    })
    assert r.status_code == 201, r.text
    note = r.json()["data"]
    user = make.store.get("users", make.user_id())
    assert note["author"] == {"user_id": user["id"],
                              "name": f"{user['first_name']} {user['last_name']}",
                              "email": user["email"], "picture_url": user["picture_url"]}
    assert note["updated_at"] is None and note["contact_id"] == t["contact_id"]
    assert note["attachments"][0]["name"] == "a.txt"
    listed = client.get(f"/v1/tickets/{t['id']}/notes").json()["data"]
    assert [n["id"] for n in listed] == [note["id"], old["id"]]  # newest first by default
    listed = client.get(f"/v1/tickets/{t['id']}/notes", params={"order": "asc"}).json()["data"]
    assert [n["id"] for n in listed] == [old["id"], note["id"]]
    ticket = client.get(f"/v1/tickets/{t['id']}").json()["data"]
    assert ticket["updated_at"] == note["created_at"]


def test_note_mentions_must_be_workspace_members(client, make: Factory) -> None:
    t = make.ticket(make.contact())
    r = client.post(f"/v1/tickets/{t['id']}/notes",
                    json={"body": "x", "mention_user_ids": [make.colleague_id(), make.other_user_id()]})
    assert r.status_code == 400 and "mention_user_ids/1" in r.json()["error"]
    r = client.post(f"/v1/tickets/{t['id']}/notes", json={"body": "x", "mention_user_ids": ["usnope"]})
    assert r.status_code == 400 and "mention_user_ids/0" in r.json()["error"]


def test_only_the_author_edits_a_note(client, make: Factory) -> None:
    t = make.ticket(make.contact())
    note = client.post(f"/v1/tickets/{t['id']}/notes", json={"body": "first"}).json()["data"]
    r = client.patch(f"/v1/tickets/{t['id']}/notes/{note['id']}", json={"body": "hijack"},
                     headers=auth(COLLEAGUE))
    assert r.status_code == 403 and "author" in r.json()["error"]
    r = client.patch(f"/v1/tickets/{t['id']}/notes/{note['id']}", json={"body": "second"})
    assert r.status_code == 200, r.text
    edited = r.json()["data"]
    assert edited["body"] == "second" and edited["updated_at"] is not None
    assert edited["updated_at"] > edited["created_at"]
    listed = client.get(f"/v1/tickets/{t['id']}/notes").json()["data"]
    assert listed[0]["body"] == "second"


def test_note_must_belong_to_the_ticket(client, make: Factory) -> None:
    c = make.contact()
    t1, t2 = make.ticket(c), make.ticket(c)
    note = make.note(t1, make.user_id())
    r = client.patch(f"/v1/tickets/{t2['id']}/notes/{note['id']}", json={"body": "x"})
    assert r.status_code == 404
    r = client.patch(f"/v1/tickets/{t1['id']}/notes/ntnope", json={"body": "x"})
    assert r.status_code == 404
    r = client.patch(f"/v1/tickets/{t1['id']}/notes/{note['id']}", json={"body": ""})
    assert r.status_code == 400 and "body" in r.json()["error"]


# -- state machine ----------------------------------------------------------------------------


def test_resolve_reopen_close(client, make: Factory, mock) -> None:
    t = make.ticket(make.contact(), status="pending", created_at="2026-11-01T11:00:00.000Z")
    r = client.post(f"/v1/tickets/{t['id']}/resolve")
    assert r.status_code == 200, r.text
    resolved = r.json()["data"]
    assert resolved["status"] == "resolved" and resolved["waiting_on"] == "none"
    assert resolved["resolved_at"] == resolved["first_resolved_at"] == resolved["updated_at"]
    assert resolved["time_to_resolution_ms"] == (
        parse_timestamp(resolved["resolved_at"]) - parse_timestamp(t["created_at"]))
    assert resolved["time_to_resolution_ms"] >= 3_600_000  # the clock is frozen an hour later

    r = client.post(f"/v1/tickets/{t['id']}/resolve")
    assert r.status_code == 400 and "'resolved'" in r.json()["error"]

    mock.state.advance_clock(60)
    reopened = client.post(f"/v1/tickets/{t['id']}/reopen").json()["data"]
    assert reopened["status"] == "pending" and reopened["reopen_count"] == 1
    assert reopened["resolved_at"] is None and reopened["time_to_resolution_ms"] is None
    assert reopened["first_resolved_at"] == resolved["first_resolved_at"]
    assert reopened["updated_at"] > resolved["updated_at"]
    r = client.post(f"/v1/tickets/{t['id']}/reopen")
    assert r.status_code == 400 and "'pending'" in r.json()["error"]
    r = client.post(f"/v1/tickets/{t['id']}/close")
    assert r.status_code == 400 and "'pending'" in r.json()["error"]

    again = client.post(f"/v1/tickets/{t['id']}/resolve").json()["data"]
    assert again["first_resolved_at"] == resolved["first_resolved_at"]
    assert again["resolved_at"] > resolved["resolved_at"]
    closed = client.post(f"/v1/tickets/{t['id']}/close").json()["data"]
    assert closed["status"] == "closed" and closed["closed_at"] == closed["updated_at"]
    assert closed["reopen_count"] == 1

    for action in ("reopen", "resolve", "close"):
        r = client.post(f"/v1/tickets/{t['id']}/{action}")
        assert r.status_code == 400 and "'closed'" in r.json()["error"], action
    got = client.get(f"/v1/tickets/{t['id']}").json()["data"]
    assert got == closed
    assert t["id"] in ids(client.get("/v1/tickets", params={"workspace_id": HARBOR,
                                                            "status": "closed", "limit": 100}))


def test_new_ticket_cannot_be_reopened_or_closed(client, make: Factory) -> None:
    t = make.ticket(make.contact(), status="new")
    for action in ("reopen", "close"):
        r = client.post(f"/v1/tickets/{t['id']}/{action}")
        assert r.status_code == 400 and "'new'" in r.json()["error"]
    assert client.post(f"/v1/tickets/{t['id']}/resolve", headers=auth(READ)).status_code == 403
    assert client.get(f"/v1/tickets/{t['id']}").json()["data"]["status"] == "new"
