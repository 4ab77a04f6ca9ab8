"""Scrubbing personal data out of recorded records, before anything reaches the disk.

Which fields hold personal data is decided from the document's fields once, here (`RULES`),
and stated in docs/getting-started/record.md. A rule names a field by table and path inside
the record (`messages.body`, `*.email` for the field in any table and at any depth,
`*.guest.city` for the field under that parent). `tests/record/test_scrub_rules.py` walks every
string field of every table's schemas and fails when one is neither scrubbed nor kept on
purpose (`kept_field`), so a field added to the document forces a decision.

Pseudonyms are keyed (HMAC-SHA256 under the scrub key) and consistent: the same value of the
same kind maps to the same pseudonym in every table and every recording under one key, so
relations, mirrors (a contact's name in its conversation) and searches still work. Names and
free text are replaced word by word with words of the same length (a name "Maria Santos" in
an assignee is the pseudonym of "Maria" and of "Santos" as a user's first and last name), so
maximum lengths hold; e-mail addresses become addresses under example.com, phone numbers
keep their `+` and length, codes their length and alphabet, URLs become example.com URLs
keeping the file extension.

The scrubber remembers each original value it replaced, in memory only, to check the written
files (`leftovers`): none may remain. The report counts what was replaced per rule, never
values.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import orjson

__all__ = ["KEPT_FIELDS", "KEPT_NAMES", "KEPT_TABLES", "RULES", "Scrubber", "kept_field", "rule_for"]

# kind of pseudonym per rule: name | text | email | phone | handle | code | url | token
RULES: dict[str, str] = {
    # people: contacts, users, guests, assignees, authors, reviewers, requesters, senders
    "*.first_name": "name",
    "*.last_name": "name",
    "*.guest_name": "name",
    "*.assignee.name": "name",
    "*.author.name": "name",
    "*.reviewed_by.name": "name",
    "*.requester.name": "name",
    "*.sender.name": "name",
    "*.guest.name": "name",
    "*.booking_info.name": "name",
    "*.email": "email",
    "*.phone": "phone",
    "*.from_phone": "phone",
    "*.to_phone": "phone",
    "contacts.channels.value": "handle",
    "appointments.references.value": "handle",
    "*.sender.external_id": "token",
    "*.requester.external_id": "token",
    "*.guest.external_account_id": "token",
    # postal details
    "*.guest.city": "name",
    # door and key codes
    "*.door_code": "code",
    "*.key_code": "code",
    # notes, bodies, free-text summaries
    "messages.body": "text",
    "ticket_notes.body": "text",
    "*.last_message_preview": "text",
    "*.guest_note": "text",
    "*.notes": "text",
    "*.booking_info.notes": "text",
    "*.summary": "text",
    "*.subject": "text",
    "*.transcript.text": "text",
    "*.guest_message": "text",
    "*.proposed_response": "text",
    "*.questions_for_operator": "text",
    "*.request_for_additional_info": "text",
    "*.generated_context": "text",
    "airbnb_transactions.details": "text",
    "helpdesk_tickets.description": "text",
    "agent_runs.error": "text",
    "agent_runs.response": "text",  # the model's reply to the guest: message-like
    "agent_runs.reflection": "text",  # its reasoning about the guest's case
    "agent_runs.tool_trace.input.*": "text",  # a tool's arguments and answer: often the
    "agent_runs.tool_trace.output.*": "text",  # guest's details (ids in them are kept)
    "*.disposition_reason": "text",
    "workflow_events.message": "text",
    "workflow_executions.error_summary": "text",
    "whatsapp_templates.variables.*": "text",  # sample values: often a real guest's
    # URLs with personal paths: pictures, recordings, attachments (and their file names)
    "*.image_url": "url",
    "*.picture_url": "url",
    "*.recording_url": "url",
    "*.attachments.url": "url",
    "*.attachments.name": "filename",
}

# String fields deliberately kept (every other string field of a table's schemas has a rule:
# tests/record/test_scrub_rules.py): the workspace's own configuration, which is business
# content rather than personal data, whole tables of it...
KEPT_TABLES: frozenset[str] = frozenset({
    "workspaces", "workspace_settings", "roles", "senders", "whatsapp_templates",
    "verification_rules", "models", "builtin_tools", "agents", "agent_connections", "skills",
    "custom_tools", "kb_nodes", "conversation_tags", "workflows", "workflow_folders",
    "workflow_executions", "workflow_events"})
# ...and, in the other tables, identifiers and references, enumerations and codes of the
# service or its integrations, and the coarse facts (a guest's country and locale, a
# reservation's listing and platform, a currency). Booking references (confirmation codes,
# channel reservation ids) are kept: they are keys the integrations look records up by.
KEPT_NAMES: frozenset[str] = frozenset({
    "id", "ancestors", "entity_ids", "created_by", "assigned_by", "role", "channel", "type",
    "status", "language", "last_channel", "currency", "channel_name", "pms_platform",
    "source", "locale", "country", "priority", "tags", "disposition", "proposal_outcome",
    "sentiment", "transfer_status", "content_type", "origin", "confirmation_code"})
# ...and single fields: the name of a tool an agent run called is the workspace's
# configuration (a built-in or custom tool's name, as in the tables kept whole above).
KEPT_FIELDS: frozenset[str] = frozenset({"agent_runs.tool_trace.name"})


def kept_field(table: str, path: tuple[str, ...]) -> bool:
    """Whether a string field with no rule is kept on purpose (see KEPT_TABLES, KEPT_NAMES)."""
    name = path[-1]
    return (table in KEPT_TABLES or name in KEPT_NAMES or _id_like(name)
            or f"{table}.{'.'.join(path)}" in KEPT_FIELDS)


def _id_like(name: str) -> bool:
    return name == "id" or name.endswith(("_id", "_ids"))


def rule_for(table: str, path: tuple[str, ...]) -> str | None:
    """The rule (a key of RULES) that scrubs the field at `path` of a record of `table`."""
    dotted = ".".join(path)
    exact = f"{table}.{dotted}"
    if exact in RULES:
        return exact
    for depth in range(len(path) - 1, 0, -1):  # any field under it (a free-form mapping),
        children = f"{table}.{'.'.join(path[:depth])}.*"  # but for the ids in it
        if children in RULES:
            return None if _id_like(path[-1]) else children
    for depth in range(min(3, len(path)), 0, -1):  # *.parent.field before *.field
        wild = "*." + ".".join(path[-depth:])
        if wild in RULES:
            return wild
    return None


_CONSONANTS = "bdfgklmnprstvz"
_VOWELS = "aeiou"
_WORD = re.compile(r"[^\W\d_]+|\d+", re.UNICODE)
_EXTENSION = re.compile(r"(\.[A-Za-z0-9]{1,5})$")


@dataclass
class Scrubber:
    """Replaces personal values by keyed pseudonyms; remembers what it replaced (in memory)."""

    key: bytes
    keep: frozenset[str] = frozenset()
    originals: set[str] = field(default_factory=set)
    kept_values: set[str] = field(default_factory=set)  # strings of fields kept (not ids)
    replaced: Counter[str] = field(default_factory=Counter)  # rule -> values replaced
    distinct: dict[str, set[bytes]] = field(default_factory=dict)  # rule -> digests
    _memo: dict[tuple[str, str], str] = field(default_factory=dict)
    _round: str = ""  # while a pseudonym is derived again (it came out as the original)

    def kept(self, table: str, rule: str) -> bool:
        bare = rule.removeprefix("*.").removeprefix(f"{table}.")
        return bool({rule, bare, bare.rsplit(".", 1)[-1], f"{table}.{bare}"} & self.keep)

    def record(self, table: str, record: dict[str, Any]) -> dict[str, Any]:
        """A scrubbed copy of a record of `table`."""
        return {k: self._value(table, (k,), v) for k, v in record.items()}

    def note_kept(self, table: str, node: Any, path: tuple[str, ...] = ()) -> None:
        """Remember the kept strings of an already scrubbed record (a resumed run's)."""
        if isinstance(node, dict):
            for key, value in node.items():
                self.note_kept(table, value, (*path, key))
        elif isinstance(node, list):
            for value in node:
                self.note_kept(table, value, path)
        elif isinstance(node, str) and len(node) >= 3 and path and not path[-1].endswith("_at"):
            rule = rule_for(table, path)
            if rule is None or self.kept(table, rule):
                self.kept_values.add(node)

    def _value(self, table: str, path: tuple[str, ...], value: Any) -> Any:
        if isinstance(value, dict):
            return {k: self._value(table, (*path, k), v) for k, v in value.items()}
        if isinstance(value, list):
            return [self._value(table, path, v) for v in value]
        if not isinstance(value, str) or not value:
            return value
        rule = rule_for(table, path)
        if rule is None or self.kept(table, rule):
            if len(value) >= 3 and not path[-1].endswith("_at"):
                self.kept_values.add(value)
            return value
        pseudonym = self.pseudonym(RULES[rule], value)
        if pseudonym != value:
            self.originals.add(value)
            self.replaced[rule] += 1
            self.distinct.setdefault(rule, set()).add(self._digest("seen", value)[:8])
        return pseudonym

    def _digest(self, kind: str, value: str) -> bytes:
        return hmac.new(self.key, f"{kind}\0{self._round}{value}".encode(),
                        hashlib.sha256).digest()

    def pseudonym(self, kind: str, value: str) -> str:
        """The pseudonym of `value` as a `kind` (the same for the same key, kind and value),
        never `value` itself: a short one (a 4-digit door code: one in 10,000) may come out as
        the original, and is then derived again in another round (a few times at most; a
        value with nothing to replace, such as "--", stays)."""
        memo_key = (kind, value)
        found = self._memo.get(memo_key)
        if found is None:
            derive = getattr(self, f"_{kind}")
            try:
                for attempt in range(8):
                    self._round = f"{attempt}\0" if attempt else ""
                    found = derive(value)
                    if found != value:
                        break
            finally:
                self._round = ""
            assert found is not None
            self._memo[memo_key] = found
        return found

    # -- kinds --------------------------------------------------------------------------------
    def _word(self, word: str) -> str:
        digest = self._digest("word", word.lower())
        if word.isdigit():
            return "".join(str(b % 10) for b in digest[: len(word)]).rjust(len(word), "0")
        letters = []
        for i in range(len(word)):
            pool = _CONSONANTS if i % 2 == 0 else _VOWELS
            letters.append(pool[digest[i % len(digest)] % len(pool)])
        out = "".join(letters)
        return out[:1].upper() + out[1:] if word[:1].isupper() else out

    def _words(self, value: str) -> str:
        return _WORD.sub(lambda m: self._word(m.group(0)), value)

    def _name(self, value: str) -> str:
        # Letters only, so that a pseudonym reads as a name ("Pezaro", not "Gut9 Pezaro9":
        # decision U20); the same word as in a text, so a name mentioned in a message body
        # and the name field agree.
        return self._words(value)

    def _text(self, value: str) -> str:
        return self._words(value)

    def _hex(self, kind: str, value: str, length: int) -> str:
        return self._digest(kind, value).hex()[:length]

    def _email(self, value: str) -> str:
        local, _, domain = value.lower().rpartition("@")
        if not local:
            return f"u{self._hex('email', value.lower(), 10)}@example.com"
        return f"u{self._hex('local', local, 10)}@d{self._hex('domain', domain, 6)}.example.com"

    def _phone(self, value: str) -> str:
        digest = self._digest("phone", re.sub(r"\D", "", value))
        digits = iter(str(b % 10) for b in digest * 2)
        seen = 0
        out = []
        for ch in value:
            if ch.isdigit():
                out.append(ch if seen == 0 else next(digits))  # the country code's lead digit stays
                seen += 1
            else:
                out.append(ch)
        return "".join(out)

    def _handle(self, value: str) -> str:
        if "@" in value:
            return self._email(value)
        if re.fullmatch(r"[+\d][\d ()./-]{5,}", value.strip()):
            return self._phone(value)
        return self._token(value)

    def _token(self, value: str) -> str:
        return f"x{self._hex('token', value, max(8, min(len(value), 24)) - 1)}"

    def _code(self, value: str) -> str:
        digest = self._digest("code", value)
        out = []
        for i, ch in enumerate(value):
            b = digest[i % len(digest)]
            if ch.isdigit():
                out.append(str(b % 10))
            elif ch.isalpha():
                letter = "ABCDEFGHJKLMNPQRSTUVWXYZ"[b % 24]
                out.append(letter if ch.isupper() else letter.lower())
            else:
                out.append(ch)
        return "".join(out)

    def _url(self, value: str) -> str:
        path = value.split("?", 1)[0]
        ext = _EXTENSION.search(path.rsplit("/", 1)[-1])
        return f"https://example.com/scrubbed/{self._hex('url', value, 16)}{ext.group(1) if ext else ''}"

    def _filename(self, value: str) -> str:
        ext = _EXTENSION.search(value)
        return f"file-{self._hex('file', value, 10)}{ext.group(1) if ext else ''}"

    # -- report and check -----------------------------------------------------------------------
    def report(self) -> dict[str, Any]:
        """Per rule: the kind, how many values were replaced and how many distinct ones;
        the rules kept on purpose (`--keep`). Never a value."""
        return {
            "fields": {rule: {"kind": RULES[rule], "replaced": self.replaced[rule],
                              "distinct": len(self.distinct.get(rule, ()))}
                       for rule in sorted(self.replaced)},
            "kept_on_purpose": sorted(self.keep),
            "rules": len(RULES),
        }

    def leftovers(self, files: Iterable[tuple[str, str | None, str]],
                  previous: frozenset[str] = frozenset()) -> list[str]:
        """Where an original value remains in the written files (`name`, table or None,
        JSON text). An original of 8 characters or more is looked for anywhere in the text
        (found through its longest inner word, so one of a single word is found as a whole
        word); a shorter one as a whole string outside the scrubbed fields (whose values are
        pseudonyms: a 4-digit door code may meet another's by chance). An original that a
        field kept on purpose also holds (an agent's name is the sender name of its
        messages; a template's sample text) is that field's, not a leak. `previous`: keyed
        digests of the originals of an interrupted earlier run, checked as whole strings."""
        originals = self.originals - self.kept_values
        if previous:
            previous = previous - {self.original_digest(v) for v in self.kept_values}
        anchors: dict[str, list[str]] = {}
        for value in originals:
            if len(value) >= 8:
                quoted = orjson_quote(value)[1:-1]
                words = _WORDS.findall(quoted)
                inner = words[1:-1] or words
                if inner:
                    anchors.setdefault(max(inner, key=len), []).append(quoted)
        kept_with: dict[str, list[str]] = {}  # anchor -> kept values holding it
        for kept in self.kept_values:
            if len(kept) >= 8:
                for word in set(_WORDS.findall(kept)) & anchors.keys():
                    kept_with.setdefault(word, []).append(orjson_quote(kept))
        for word, holders in kept_with.items():  # inside a field kept on purpose: not a leak
            anchors[word] = [q for q in anchors[word] if not any(q in k for k in holders)]
        short = {v for v in originals if len(v) < 8}
        found = []
        for name, table, text in files:
            in_text = set(_WORDS.findall(text))
            hit = next((q for w in in_text & anchors.keys() for q in anchors[w] if q in text), None)
            if hit is not None:
                found.append(f"{name} ({_where_in(text, lambda s, q=hit: q in s)})")
                continue
            for path, value in _strings(orjson.loads(text)):
                rule = rule_for(table, path) if table else None
                if rule is not None and not self.kept(table or "", rule):
                    continue
                if value in short or (previous and self.original_digest(value) in previous):
                    found.append(f"{name} (field {'.'.join(path)})")
                    break
        return found

    def original_digest(self, value: str) -> str:
        """A keyed digest of an original value (kept in the resume state instead of it)."""
        return self._digest("original", value).hex()[:32]


_WORDS = re.compile(r"\w+")


def _strings(node: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], str]]:
    """Every string of a JSON value with its field path (list positions left out)."""
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _strings(value, (*path, key))
    elif isinstance(node, list):
        for value in node:
            yield from _strings(value, path)
    elif isinstance(node, str):
        yield path, node


def orjson_quote(value: str) -> str:
    """`value` as it appears in a compact JSON file."""
    return orjson.dumps(value).decode()


def _where_in(text: str, search: Any) -> str:
    """The field (path) of the first JSON string of `text` in which `search` matches."""
    try:
        content = orjson.loads(text)
    except orjson.JSONDecodeError:
        return "not JSON"
    stack: list[tuple[str, Any]] = [("", content)]
    while stack:
        path, node = stack.pop()
        if isinstance(node, dict):
            stack.extend((f"{path}.{k}" if path else k, v) for k, v in node.items())
        elif isinstance(node, list):
            stack.extend((path, v) for v in node)
        elif isinstance(node, str) and search(orjson_quote(node)[1:-1]):
            return f"field {path}"
    return "?"
