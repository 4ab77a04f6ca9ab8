"""A deterministic dataset generator: `scale` contacts with proportional related records.

`generate(scale, seed, out)` writes one `<table>.json` per table (compact JSON, keys sorted) plus
`tokens.json`. The configuration tables (workspaces, users, roles, agents, skills, tools,
knowledge base, tags, workflows, ...) are copied from the default fixtures; the contact-scoped
tables are generated over the three fixed workspaces. Same seed, same bytes: everything comes
from `random.Random(seed)` and fixed instants, never from the wall clock.

    python -m mockserver.data.generate --scale 100000 --seed 1 --out /tmp/big
"""

from __future__ import annotations

import argparse
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from ..engine.clock import format_timestamp, parse_timestamp
from ..openapi.yamlload import load_yaml
from .fixtures import default_fixtures_dir

__all__ = ["COPIED_TABLES", "GENERATED_TABLES", "generate"]

# Small global and configuration tables, copied as they are from the default fixtures.
COPIED_TABLES = (
    "workspaces", "users", "roles", "senders", "whatsapp_templates", "verification_rules",
    "workspace_settings", "models", "builtin_tools", "agents", "agent_connections", "skills",
    "custom_tools", "kb_nodes", "conversation_tags", "workflows", "workflow_folders",
    "workflow_executions", "workflow_events",
)
GENERATED_TABLES = (
    "contacts", "conversations", "conversation_summaries", "messages", "tickets", "ticket_notes",
    "calls", "reservations", "airbnb_transactions", "appointments", "helpdesk_tickets",
    "agent_runs", "escalations",
)

# Every generated instant falls in this window, before the tests' frozen "now".
_START = parse_timestamp("2026-01-05T00:00:00.000Z")
_END = parse_timestamp("2026-10-31T00:00:00.000Z")
_DAY = 86_400_000
_MINUTE = 60_000

_WORKSPACES = (("ws_harborview", 70), ("ws_alpine", 20), ("ws_desert", 10))
_LISTINGS = {
    "ws_harborview": [("lst_gull_cottage", "Gull Cottage", 215), ("lst_driftwood_loft", "Driftwood Loft", 189),
                      ("lst_lighthouse_suite", "Lighthouse Suite", 245), ("lst_tidepool_house", "Tidepool House", 410)],
    "ws_alpine": [("lst_edelweiss_chalet", "Edelweiss Chalet", 520), ("lst_snowberry_cabin", "Snowberry Cabin", 280)],
    "ws_desert": [("lst_saguaro_casita", "Saguaro Casita", 175), ("lst_mesa_villa", "Mesa Villa", 265)],
}
_CURRENCY = {"ws_harborview": "USD", "ws_alpine": "EUR", "ws_desert": "USD"}
_PMS = {"ws_harborview": ("hostaway", "guesty"), "ws_alpine": ("guesty",), "ws_desert": ("hostaway",)}
_HELPDESK = {"ws_harborview": ("cn_harbor_zendesk", "cn_harbor_plain"), "ws_alpine": ("cn_alpine_zendesk",),
             "ws_desert": ("cn_desert_plain",)}
_FIRST = ("Emma", "Liam", "Olivia", "Noah", "Ava", "Lucas", "Sofia", "Mateo", "Mia", "Ethan", "Hannah", "Jonas",
          "Chloé", "Daniel", "Aisha", "Yuki", "Ingrid", "Pierre", "Isabella", "Omar", "Grace", "Felix", "Zoe",
          "Marcus", "Elena", "Tom", "Nina", "Ben", "Laura", "Kenji", "Priya", "Carlos", "Rachel", "Oscar")
_LAST = ("Clarke", "Meyer", "Rossi", "Bennett", "Khan", "Okafor", "Lee", "Fischer", "Martin", "Brooks", "Dubois",
         "Wilson", "García", "O'Connor", "Tanaka", "Nguyen", "Patel", "Scott", "Lindqvist", "Kowalski", "Johnson",
         "Petrova", "Cohen", "Huber", "Larsen", "Schmidt", "Mendoza", "Green", "Haddad", "Santos", "Reed")
_LANGS = ("en", "en", "en", "de", "fr", "es", "it", "ja", "nl")
_CHANNELS = ("whatsapp", "sms", "email", "unthreaded_email", "airbnb", "web_chat")
_DELIVERED = {"whatsapp": "read", "sms": "delivered", "airbnb": "read", "web_chat": "read"}
# (topic, guest question, reply, ticket subject); {listing} is filled per contact.
_TOPICS = (
    ("door_code", "Hi, the keypad at {listing} keeps flashing red when we enter the code.",
     "Sorry about that! Please enter the code followed by the check mark; if it still fails, the spare key is in the lockbox by the side gate.",
     "Door code not working at {listing}"),
    ("checkin", "What time is check-in at {listing}?",
     "Check-in is from 4pm and checkout by 11am. You'll receive the door code on the morning of arrival.",
     "Check-in time question for {listing}"),
    ("late_checkout", "Could we check out of {listing} at 1pm instead of 11am?",
     "There's no arrival that day, so a 1pm checkout is fine at no charge. Leave the keys on the kitchen counter.",
     "Late checkout request for {listing}"),
    ("parking", "Where can we park at {listing}? We have two cars.",
     "There's one reserved spot; for the second car we'll leave a visitor permit by the front door.",
     "Parking permit for {listing}"),
    ("hot_tub", "The hot tub at {listing} is not warm at all.",
     "Thanks for letting us know. Please check the breaker on the side panel; we'll send a technician tomorrow morning if it stays cold.",
     "Hot tub not heating at {listing}"),
    ("refund", "We need to cancel our stay at {listing}, can we get a refund?",
     "I'm sorry to hear that. I've passed your request to the team, who will check the cancellation policy and get back to you today.",
     "Cancellation and refund request, {listing}"),
    ("wifi", "What's the Wi-Fi password at {listing}?",
     "The network name and password are on the card next to the router in the living room.",
     "Wi-Fi question at {listing}"),
    ("ski_pass", "Can we order lift passes through you for our stay at {listing}?",
     "Yes, we can pre-order 6-day passes at the partner rate. How many adults and children are skiing?",
     "Lift pass pre-order for {listing}"),
    ("heating", "The heating in the bedroom at {listing} doesn't seem to work.",
     "The bedroom thermostat is next to the wardrobe; it was probably in eco mode. Press the flame button twice.",
     "Heating problem at {listing}"),
    ("pets", "Do you allow a small dog at {listing}?",
     "Dogs up to 20 kg are welcome for a 60 fee per stay. Please keep them off the beds.",
     "Pet request for {listing}"),
)
_FOLLOW_UPS = ("Thanks, that worked!", "Perfect, thank you.", "Great, see you then.",
               "Still not working, can someone call me?", "Ok, we'll try that.")


def _load_defaults() -> tuple[dict[str, list[dict[str, Any]]], list[dict[str, Any]]]:
    # The fixture loader's YAML reading (yamlload.py): an unquoted timestamp stays a string.
    base = default_fixtures_dir()
    tables = {name: load_yaml((base / f"{name}.yaml").read_bytes()) or []
              for name in COPIED_TABLES}
    tokens = load_yaml((base / "tokens.yaml").read_bytes())
    return tables, tokens


class _Builder:
    def __init__(self, scale: int, seed: int, config: dict[str, list[dict[str, Any]]]) -> None:
        self.scale = scale
        self.rng = random.Random(seed)
        self.out: dict[str, list[dict[str, Any]]] = {name: [] for name in GENERATED_TABLES}
        self.users: dict[str, list[dict[str, Any]]] = {}
        for user in config["users"]:
            for ws in user["_workspace_ids"]:
                self.users.setdefault(ws, []).append(user)
        # The agent that answers each workspace: its first agent with a message trigger.
        self.agent: dict[str, tuple[str, str, str]] = {}
        for agent in config["agents"]:
            ws = agent["workspace_id"]
            trigger = next((t for t in agent["triggers"] if t["type"] == "message"), None)
            if ws not in self.agent and trigger is not None and agent["operation_mode"] != "inactive":
                self.agent[ws] = (agent["id"], trigger["id"], agent["name"])
        weights = [w for _, w in _WORKSPACES]
        self.workspace_of: Callable[[], str] = lambda: self.rng.choices(
            [ws for ws, _ in _WORKSPACES], weights)[0]

    # -- small helpers ---------------------------------------------------------------

    @staticmethod
    def ts(epoch_ms: int) -> str:
        return format_timestamp(epoch_ms)

    def person(self, ws: str) -> dict[str, Any]:
        user = self.rng.choice(self.users[ws])
        return {"id": user["id"], "name": f"{user['first_name']} {user['last_name']}",
                "email": user["email"], "picture_url": user["picture_url"]}

    # -- one contact and everything around it ------------------------------------------

    def contact(self, n: int) -> None:
        rng = self.rng
        ws = self.workspace_of()
        cid = f"ph_g{n:07d}"
        first, last = rng.choice(_FIRST), rng.choice(_LAST)
        channel = rng.choice(_CHANNELS)
        handle = f"{first.lower()}.{last.lower()}{n}".replace("'", "").replace("é", "e").replace("í", "i")
        value = {
            "whatsapp": f"+1206{n:07d}", "sms": f"+1425{n:07d}", "email": f"{handle}@example.com",
            "unthreaded_email": f"{handle}@example.org", "airbnb": f"airbnb-thread-{1_900_000_000 + n}",
            "web_chat": f"visitor-{n:08x}",
        }[channel]
        listing_id, listing_name, rate = rng.choice(_LISTINGS[ws])
        topic = rng.choice(_TOPICS if ws == "ws_alpine" else [t for t in _TOPICS if t[0] != "ski_pass"])
        created = rng.randrange(_START, _END - 20 * _DAY)
        wants_ticket = rng.random() < 0.3
        count = rng.choice((0, 1, 1, 1, 2, 3)) if not wants_ticket else rng.choice((2, 2, 3))
        agent_id, trigger_id, agent_name = self.agent[ws]
        ai_replies = rng.random() < 0.6
        human = self.person(ws)
        messages: list[dict[str, Any]] = []
        when = created + rng.randrange(_MINUTE, 10 * _DAY)
        ticket_id = f"xd_g{n:07d}" if wants_ticket else None
        for k in range(count):
            inbound = k % 2 == 0
            if inbound:
                body = topic[1] if k == 0 else rng.choice(_FOLLOW_UPS)
                body = body.format(listing=listing_name)
                sender = {"user_id": None, "external_id": value, "name": f"{first} {last}"}
                status = "received"
            else:
                body = topic[2]
                by_ai = ai_replies and k == 1
                sender = ({"user_id": None, "external_id": None, "name": agent_name} if by_ai else
                          {"user_id": human["id"], "external_id": None, "name": human["name"]})
                status = _DELIVERED.get(channel, "sent")
            messages.append({
                "id": f"ms_g{n:07d}_{k + 1:02d}", "workspace_id": ws, "conversation_id": cid,
                "ticket_id": ticket_id, "channel": channel, "body": body,
                "direction": "inbound" if inbound else "outbound", "status": status,
                "sent_at": self.ts(when), "created_at": self.ts(when), "sender": sender, "attachments": [],
            })
            when += rng.randrange(20_000, 3 * 60 * _MINUTE)
        self.out["messages"].extend(messages)
        last_at = messages[-1]["sent_at"] if messages else self.ts(created)
        last_ms = parse_timestamp(last_at)
        preview = messages[-1]["body"][:140] if messages else ""
        outbound = [m for m in messages if m["direction"] == "outbound"]
        authors = {"ai" if m["sender"]["user_id"] is None else "human" for m in outbound}
        authorship = None if not authors else (authors.pop() if len(authors) == 1 else "mixed")
        archived = rng.random() < 0.15
        follow_up = (self.ts(_END + rng.randrange(2 * _DAY, 6 * _DAY))
                     if not archived and rng.random() < 0.05 else None)
        assigned = rng.random() < 0.25
        conv_updated = last_ms + (2 * 60 * _MINUTE if (archived or follow_up) else 0)
        self.out["contacts"].append({
            "id": cid, "workspace_id": ws, "first_name": first, "last_name": last, "image_url": None,
            "language": rng.choice(_LANGS), "type": "guest", "inbox_type_id": "guest", "archived": archived,
            "ai_paused": False, "last_channel": channel, "last_message_at": last_at,
            "last_message_preview": preview, "created_at": self.ts(created), "updated_at": last_at,
            "channels": [{"id": f"hg_g{n:07d}", "type": channel, "value": value}],
        })
        self.out["conversations"].append({
            "id": cid, "workspace_id": ws,
            "contact": {"id": cid, "first_name": first, "last_name": last, "image_url": None, "inbox_type_id": "guest"},
            "channel": channel, "archived": archived, "ai_paused": False, "follow_up_at": follow_up,
            "assignee": human if assigned else None,
            "assigned_at": self.ts(created + _MINUTE) if assigned else None,
            "assigned_by": self.users[ws][0]["id"] if assigned else None,
            "authorship": authorship, "last_message_at": last_at, "last_message_preview": preview,
            "created_at": self.ts(created), "updated_at": self.ts(max(conv_updated, created + _MINUTE) if assigned else conv_updated),
        })
        if messages and rng.random() < 0.2:
            self.out["conversation_summaries"].append({
                "id": cid, "summary": f"{topic[3].format(listing=listing_name)}; {first} was answered.",
                "sentiment": rng.choice(("positive", "neutral", "negative")),
            })
        if wants_ticket:
            self.ticket(n, ws, cid, channel, topic[3].format(listing=listing_name), messages, human)
        if rng.random() < 0.5:
            self.reservation(n, ws, cid, first, last, value, channel, listing_id, rate, created)
        if rng.random() < 0.05:
            self.call(n, ws, cid, value, last_ms, ticket_id)
        if rng.random() < 0.03:
            self.appointment(n, ws, cid, first, last, value, created)
        if ai_replies and len(messages) >= 2 and rng.random() < 0.25:
            self.agent_run(n, ws, cid, agent_id, trigger_id, messages, topic)

    def ticket(self, n: int, ws: str, cid: str, channel: str, subject: str,
               messages: list[dict[str, Any]], assignee: dict[str, Any]) -> None:
        rng = self.rng
        first = parse_timestamp(messages[0]["sent_at"])
        response = parse_timestamp(next(m for m in messages if m["direction"] == "outbound")["sent_at"])
        last = parse_timestamp(messages[-1]["sent_at"])
        status = rng.choices(("new", "pending", "resolved", "closed"), (2, 2, 4, 2))[0]
        reopen = rng.choice((0, 0, 0, 1, 2)) if status != "new" else 0
        resolved = first_resolved = closed = None
        if status in ("resolved", "closed"):
            resolved = last + rng.randrange(_MINUTE, 2 * _DAY)
            first_resolved = resolved - rng.randrange(_DAY, 3 * _DAY) if reopen else resolved
            first_resolved = max(first_resolved, first + 1)
            if status == "closed":
                closed = resolved + rng.randrange(_DAY, 7 * _DAY)
        elif reopen:
            first_resolved = first + rng.randrange(1, max(2, last - first + 1))
        updated = max(x for x in (last, resolved, closed, first_resolved) if x is not None)
        tid = f"xd_g{n:07d}"
        self.out["tickets"].append({
            "id": tid, "workspace_id": ws, "contact_id": cid, "conversation_id": cid, "channel": channel,
            "status": status, "waiting_on": {"new": "team", "pending": rng.choice(("customer", "third_party", "team"))}.get(status, "none"),
            "inbox_type_id": "guest", "subject": subject, "summary": f"{subject}. {messages[0]['body']}",
            "ai_paused": False, "assignee": assignee if rng.random() < 0.7 else None, "follow_up_at": None,
            "first_message_at": self.ts(first), "first_response_at": self.ts(response),
            "resolved_at": self.ts(resolved) if resolved else None,
            "first_resolved_at": self.ts(first_resolved) if first_resolved else None,
            "closed_at": self.ts(closed) if closed else None,
            "time_to_first_response_ms": response - first,
            "time_to_resolution_ms": resolved - first if resolved else None,
            "reopen_count": reopen, "ai_participated": any(m["sender"]["user_id"] is None and m["direction"] == "outbound" for m in messages),
            "last_message_at": self.ts(last), "last_message_preview": messages[-1]["body"][:140],
            "created_at": self.ts(first), "updated_at": self.ts(updated), "call_transcript_id": None,
        })
        if rng.random() < 0.3:
            for k in range(rng.choice((1, 1, 2))):
                at = first + (k + 1) * rng.randrange(_MINUTE, 60 * _MINUTE)
                user = self.person(ws)
                self.out["ticket_notes"].append({
                    "id": f"nt_g{n:07d}_{k + 1}", "workspace_id": ws, "ticket_id": tid, "contact_id": cid,
                    "body": rng.choice(("Called the guest, waiting for photos.", "Vendor booked for tomorrow morning.",
                                        "Refund approved by Maria.", "Checked the lock dashboard: battery low.")),
                    "author": {"user_id": user["id"], "name": user["name"], "email": user["email"],
                               "picture_url": user["picture_url"]},
                    "created_at": self.ts(at), "updated_at": None,
                    "attachments": ([{"url": f"https://files.example.com/notes/{tid}/photo-{k + 1}.jpg",
                                      "content_type": "image/jpeg", "name": f"photo-{k + 1}.jpg"}]
                                    if rng.random() < 0.3 else []),
                })
        if rng.random() < 0.1:
            connection = rng.choice(_HELPDESK[ws])
            self.out["helpdesk_tickets"].append({
                "id": f"hd_g{n:07d}", "workspace_id": ws, "contact_id": cid, "ticket_id": tid,
                "connection_id": connection, "external_ticket_id": str(40_000 + n),
                "external_group_id": "360001122334", "external_assignee_id": str(9000 + n % 7),
                "subject": subject, "description": messages[0]["body"],
                "status": {"new": "new", "pending": "pending", "resolved": "solved", "closed": "closed"}[status],
                "priority": rng.choice(("low", "normal", "high", "urgent")), "type": rng.choice(("question", "incident", "problem", "task")),
                "channel": rng.choice(("email", "web", "chat")), "tags": [subject.split()[0].lower()],
                "requester": {"external_id": f"req-{n}", "name": messages[0]["sender"]["name"],
                              "email": f"guest{n}@example.com"},
                "last_external_update_at": self.ts(updated), "created_at": self.ts(first),
            })

    def reservation(self, n: int, ws: str, cid: str, first: str, last: str, value: str, channel: str,
                    listing_id: str, rate: int, created: int) -> None:
        rng = self.rng
        arrive_ms = created + rng.randrange(_DAY, 120 * _DAY)
        arrive_ms -= arrive_ms % _DAY
        nights = rng.randrange(2, 9)
        depart_ms = arrive_ms + nights * _DAY
        cleaning = 120 if ws != "ws_alpine" else 250
        total = float(nights * rate + cleaning)
        source = "airbnb" if channel == "airbnb" else rng.choice(("direct", "booking.com", "vrbo", "airbnb"))
        paid = rng.random() < 0.7
        code = f"HM{n:08d}" if source == "airbnb" else f"{ws[3:5].upper()}-{n:07d}"
        rid = f"rs_g{n:07d}"
        airbnb: dict[str, Any] | None = None
        if source == "airbnb":
            fee = round(total * 0.03, 2)
            tax = round(total * 0.12, 2)
            airbnb = {
                "currency": _CURRENCY[ws], "expected_payout_amount": round(total - fee, 2),
                "expected_payout_amount_before_taxes": round(total - fee - tax, 2), "listing_base_price": float(rate),
                "listing_cancellation_payout": None, "listing_cancellation_host_fee": None,
                "total_paid_amount": round(total * 1.14, 2), "transient_occupancy_tax_paid_amount": tax,
                "airbnb_collected_tax_amount": tax, "pass_through_tax_amount_paid_to_host": 0.0,
                "pass_through_tax_expected_amount": 0.0, "host_fee_base": round(fee / 1.2, 2),
                "host_fee_vat": round(fee - fee / 1.2, 2), "guest_fee_base": round(total * 0.12, 2),
                "guest_fee_vat": 0.0, "tax_withholding_amount": None,
            }
        adults = rng.randrange(1, 5)
        children = rng.choice((0, 0, 1, 2))
        email = value if "@" in value else None
        phone = value if value.startswith("+") else None
        stamp = self.ts(created)
        self.out["reservations"].append({
            "id": rid, "workspace_id": ws, "contact_id": cid, "listing_id": listing_id,
            "pms_platform": rng.choice(_PMS[ws]), "external_id": str(10_000_000 + n), "channel_name": source,
            "channel_reservation_id": code, "confirmation_code": code,
            "status": rng.choices(("confirmed", "cancelled", "inquiry", "new"), (8, 1, 1, 1))[0],
            "source": {"direct": "website", "airbnb": "airbnbOfficial", "booking.com": "bookingcom", "vrbo": "homeaway"}[source],
            "arrival_date": self.ts(arrive_ms)[:10], "departure_date": self.ts(depart_ms)[:10],
            "arrival_at": self.ts(arrive_ms + 23 * 60 * _MINUTE), "departure_at": self.ts(depart_ms + 18 * 60 * _MINUTE),
            "num_nights": nights, "number_of_guests": adults + children, "number_of_adults": adults,
            "number_of_children": children, "number_of_infants": 0, "number_of_pets": rng.choice((0, 0, 0, 1)),
            "guest": {"name": f"{first} {last}", "first_name": first, "last_name": last, "email": email,
                      "phone": phone, "country": None, "city": None, "locale": None,
                      "external_account_id": f"airbnb-{n}" if airbnb else None},
            "payment": {"is_paid": paid, "total_price": total, "currency": _CURRENCY[ws],
                        "outstanding_balance": 0.0 if paid else total},
            "airbnb_payment": airbnb, "door_code": f"{rng.randrange(1000, 10000)}" if ws != "ws_alpine" else None,
            "key_code": f"{rng.randrange(1000, 10000)}" if ws == "ws_alpine" else None,
            "guest_note": None, "ai_paused": False, "created_at": stamp, "updated_at": stamp,
        })
        if airbnb:
            self.out["airbnb_transactions"].append({
                "id": f"at_g{n:07d}", "workspace_id": ws, "reservation_id": rid, "confirmation_code": code,
                "listing_id": listing_id, "type": "reservation", "date": self.ts(arrive_ms)[:10],
                "start_date": self.ts(arrive_ms)[:10], "nights": nights, "guest_name": f"{first} {last}",
                "currency": _CURRENCY[ws], "amount": airbnb["expected_payout_amount"], "paid_out": 0.0,
                "host_fee": round(airbnb["host_fee_base"] + airbnb["host_fee_vat"], 2),
                "cleaning_fee": float(cleaning), "gross_earnings": total, "details": None, "created_at": stamp,
            })

    def call(self, n: int, ws: str, cid: str, value: str, at: int, ticket_id: str | None) -> None:
        rng = self.rng
        missed = rng.random() < 0.2
        seconds = 0 if missed else rng.randrange(20, 600)
        phone = value if value.startswith("+") else f"+1503{n:07d}"
        cid_ = f"ce_g{n:07d}"
        self.out["calls"].append({
            "id": cid_, "workspace_id": ws, "contact_id": cid, "conversation_id": cid, "ticket_id": ticket_id,
            "call_id": f"retell-g{n:07d}", "direction": "inbound", "from_phone": phone, "to_phone": "+12065550100",
            "source": "retell", "is_missed": missed, "transfer_status": None, "duration_ms": seconds * 1000,
            "sentiment": None if missed else rng.choice(("positive", "neutral", "negative")),
            "summary": None if missed else "Guest called about their stay; answered by the voice agent.",
            "recording_url": None if missed else f"https://recordings.example-voice.com/{ws}/{cid_}.mp3",
            "started_at": self.ts(at - seconds * 1000 - _MINUTE), "created_at": self.ts(at - _MINUTE + 5000),
            "call_status": {"success": not missed, "is_voicemail_reached": False, "is_transferred": False},
            "transcript": [] if missed else [
                {"author": "agent", "text": "Thanks for calling, how can I help?", "start": 0.0, "end": 2.5},
                {"author": "guest", "text": "Hi, I have a question about my booking.", "start": 2.8, "end": 5.9},
            ],
        })

    def appointment(self, n: int, ws: str, cid: str, first: str, last: str, value: str, created: int) -> None:
        rng = self.rng
        start = created + rng.randrange(_DAY, 30 * _DAY)
        start -= start % (30 * _MINUTE)
        minutes = rng.choice((15, 30, 45, 60))
        self.out["appointments"].append({
            "id": f"ap_g{n:07d}", "workspace_id": ws, "contact_id": cid, "external_id": f"cal-g{n:07d}",
            "status": rng.choice(("awaiting_response", "confirmed", "completed", "no_show", "cancelled", "rescheduled")),
            "start_at": self.ts(start), "end_at": self.ts(start + minutes * _MINUTE), "duration_ms": minutes * _MINUTE,
            "origin": rng.choice(("direct", "short_link")), "notes": None, "generated_context": None,
            "short_link_id": None, "strength_indicator": round(rng.random(), 2),
            "booking_info": {"name": f"{first} {last}", "email": value if "@" in value else None,
                             "phone": value if value.startswith("+") else None, "notes": None},
            "references": [], "last_synced_at": self.ts(_END), "created_at": self.ts(created),
        })

    def agent_run(self, n: int, ws: str, cid: str, agent_id: str, trigger_id: str,
                  messages: list[dict[str, Any]], topic: tuple[str, ...]) -> None:
        rng = self.rng
        started = parse_timestamp(messages[0]["sent_at"]) + 1000
        status = rng.choices(("completed", "failed", "running", "accepted"), (85, 7, 4, 4))[0]
        done = status in ("completed", "failed")
        duration = rng.randrange(5_000, 45_000) if done else 0
        escalated = status == "completed" and rng.random() < 0.3
        tokens_in, tokens_out = (rng.randrange(2_000, 9_000), rng.randrange(200, 900)) if done else (0, 0)
        rid = f"ar_g{n:07d}"
        self.out["agent_runs"].append({
            "id": rid, "run_id": f"run_g{n:07d}", "agent_id": agent_id, "workspace_id": ws,
            "status": status, "disposition": "escalated" if escalated else {"completed": "resolved", "failed": "error"}.get(status, "pending"),
            "disposition_reason": "Needs a human decision." if escalated else "Answered from the knowledge base.",
            "autopilot_sent": done and not escalated, "proposal_outcome": "escalated" if escalated else None,
            "contact_id": cid, "conversation_id": cid, "trigger_id": trigger_id,
            "error": "Model timeout after 60000 ms" if status == "failed" else None,
            "duration_ms": duration, "token_usage": {"input": tokens_in, "output": tokens_out},
            "total_cost": round(tokens_in * 3e-6 + tokens_out * 15e-6, 6), "trace_id": f"trace-g{n:07d}",
            "created_at": self.ts(started), "completed_at": self.ts(started + duration) if done else None,
            "session_id": f"sess_g{n:07d}", "trigger_event_id": f"te_g{n:07d}",
            "response": None if escalated or not done or status == "failed" else topic[2],
            "reflection": ("The guest needs a decision only the team can make, so I escalated." if escalated else
                           "Answered from the knowledge base; no tool was needed.") if done else None,
            "tool_trace": [],
        })
        if escalated:
            state = rng.choice(("pending", "pending", "reviewed", "resolved", "dismissed"))
            reviewer = self.person(ws) if state != "pending" else None
            self.out["escalations"].append({
                "id": f"es_g{n:07d}", "workspace_id": ws, "type": "chat", "conversation_id": cid, "contact_id": cid,
                "agent_run_id": rid, "agent_id": agent_id, "disposition": "escalated",
                "disposition_reason": "Needs a human decision.", "status": state,
                "created_at": self.ts(started + duration + 1000),
                "reviewed_at": self.ts(started + duration + 3_600_000) if reviewer else None,
                "reviewed_by": ({"user_id": reviewer["id"], "name": reviewer["name"], "email": reviewer["email"],
                                 "picture_url": reviewer["picture_url"]} if reviewer else None),
                "assignee": None, "guest_message": messages[0]["body"], "proposed_response": topic[2],
                "questions_for_operator": "Can we approve this?",
            })


def _dump(path: Path, records: Any) -> None:
    path.write_bytes(orjson.dumps(records, option=orjson.OPT_SORT_KEYS))


def generate(scale: int, seed: int, out: Path) -> None:
    """Write a dataset of `scale` contacts (one conversation each) and related records to `out`."""
    if scale < 0:
        raise ValueError("scale must be >= 0")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    config, tokens = _load_defaults()
    builder = _Builder(scale, seed, config)
    for n in range(1, scale + 1):
        builder.contact(n)
    for name in COPIED_TABLES:
        _dump(out / f"{name}.json", config[name])
    for name in GENERATED_TABLES:
        _dump(out / f"{name}.json", builder.out[name])
    _dump(out / "tokens.json", tokens)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=int, required=True, help="number of contacts")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    generate(args.scale, args.seed, args.out)


if __name__ == "__main__":
    main()
