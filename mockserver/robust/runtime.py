"""A variation plan at work in one session (`MockState.variations`).

Content items are written into the session's records when the plan is set (the store's
copy-on-write layer: the shared seed is untouched, and every read of a record agrees within
the session); `restore` puts the records back. Every other item acts on answers: the
pipeline (engine/app.py `MockApp.serve`) hands an API request of a varied in-memory session
that no fault answered to `answer`, its variation layer in the core's place, which counts the
operation's calls, answers an answer item's call itself (a documented error, a 429, a 5xx, a
delay, a dropped connection), rewrites a page, adds the extra fields of the records in the
body, proves the answer valid with the self-check (the extra fields, and only those, stripped
first) and leaves the indexes of the items that varied it in `Exchange.varied`, which the
pipeline journals (and logs) with the answer before sending it.
"""

from __future__ import annotations

import itertools
import threading
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import parse_qsl, urlencode

import orjson

from ..data.tables import TABLES
from ..engine.app import MockApp
from ..engine.exchange import Exchange, json_headers
from ..engine.faults import Effect, FaultRule
from ..engine.progression import KINDS as PROGRESSING
from ..engine.responses import documented_error
from ..engine.selfcheck import SelfCheck
from ..engine.store import Store
from .catalogue import Catalogue
from .plan import describe

__all__ = ["EMPTY_PAGE_CURSOR", "Variations"]

# The `next_cursor` of the page before an empty last page (empty-last-page): a request
# carrying it is answered with the empty page.
EMPTY_PAGE_CURSOR = "robust-empty-last-page"
RawHeaders = list[tuple[bytes, bytes]]
_checkers: dict[int, SelfCheck] = {}


def _checker(mock: MockApp) -> SelfCheck:
    """The mock's self-check, or one over its document when the mock runs without: a varied
    answer is always proven valid."""
    if mock.selfcheck is not None:
        return mock.selfcheck
    found = _checkers.get(id(mock.spec))
    if found is None:
        found = _checkers[id(mock.spec)] = SelfCheck(mock.spec)
    return found


def _vary_record(record: Mapping[str, Any], item: dict[str, Any],
                 catalogue: Catalogue) -> dict[str, Any]:
    """The record with one content item applied (a new dict)."""
    kind, name = item["kind"], item["field"]
    out = dict(record)
    if kind == "null":
        out[name] = None
    elif kind == "absent":
        out.pop(name, None)
    elif kind == "empty-array":
        out[name] = []
    elif kind == "one-item":
        out[name] = list(out.get(name) or [])[:1]
    elif kind == "max-items":
        facts = catalogue.fields(item["table"])[name]
        bound = min(s["maxItems"] for s in facts.schemas if "maxItems" in s)
        current = list(out.get(name) or [])
        out[name] = list(itertools.islice(itertools.cycle(current), bound)) if current else []
    elif kind == "empty-string":
        out[name] = ""
    else:  # a valued kind
        out[name] = item["value"]
    return out


class Variations:
    """One session's plan: its items, the calls counted per operation, the items applied."""

    def __init__(self, catalogue: Catalogue, plan: Sequence[dict[str, Any]],
                 seed: int | None) -> None:
        self.catalogue = catalogue
        self.plan = list(plan)
        self.seed = seed
        self.applied: set[int] = set()
        self._calls: Counter[str] = Counter()
        self._lock = threading.Lock()
        self._written: dict[tuple[str, str], tuple[Mapping[str, Any], Mapping[str, Any]]] = {}
        self.answers: dict[str, list[int]] = {}
        self.paging: dict[str, dict[str, int]] = {}
        self.records: dict[tuple[str, str], list[int]] = {}  # content items by record
        for index, item in enumerate(self.plan):
            kind, op = item["kind"], item["operation"]
            if "record" in item:
                self.records.setdefault((item["table"], item["record"]), []).append(index)
            elif kind in ("page-of-one", "empty-last-page"):
                self.paging.setdefault(op, {})[kind] = index
            else:
                self.answers.setdefault(op, []).append(index)

    def to_dict(self) -> dict[str, Any]:
        return {"seed": self.seed, "plan": self.plan, "applied": sorted(self.applied)}

    # -- content ------------------------------------------------------------------------------

    def apply(self, store: Store) -> None:
        """Write the content items into the session's records (one new record each)."""
        with store.lock:
            for (table, key), indexes in self.records.items():
                original = store.get(table, key)
                if original is None:
                    continue
                varied = original
                for index in indexes:
                    if self.plan[index]["kind"] != "extra-field":
                        varied = _vary_record(varied, self.plan[index], self.catalogue)
                if varied is not original:
                    if table in PROGRESSING:
                        # Held as varied: the clock does not move it on (progression.view).
                        varied = {**varied, "_progress": {
                            **(original.get("_progress") or {}), "held": True}}
                    store.insert(table, varied)
                    self._written[(table, key)] = (original, varied)

    def restore(self, store: Store) -> None:
        """Put back the records `apply` wrote (those the session has not written since)."""
        with store.lock:
            for (table, key), (original, varied) in self._written.items():
                if store.get(table, key) is varied:
                    store.insert(table, original)
            self._written.clear()

    # -- answers --------------------------------------------------------------------------------

    def _answer_item(self, operation: str) -> tuple[int, dict[str, Any]] | None:
        """The answer item (index, item) that takes this call, if any (the call counted)."""
        with self._lock:
            self._calls[operation] += 1
            call = self._calls[operation]
        for index in self.answers.get(operation, ()):
            item = self.plan[index]
            first = item["call"]
            if first <= call < first + item.get("failures", 1):
                return index, item
        return None

    async def answer(self, mock: MockApp, ex: Exchange) -> None:
        """Answer one API request of the varied session in the core's place: the pipeline's
        variation layer (app.py `MockApp.serve` calls it for a varied in-memory state's
        request no fault answered, and journals it after; see the module docstring). The
        indexes of the items that varied the answer are left in `ex.varied`."""
        mock.core.name_operation(ex)
        operation = ex.operation
        if operation is None:  # not an operation: the mock's own 404/405
            mock.core.answer(ex)
            return
        found = self._answer_item(operation.operation_id)
        varied: list[int] = []
        item: dict[str, Any] | None = None
        if found is not None:
            index, item = found
            varied.append(index)
            if item["kind"] == "slow":
                if item["delay_ms"]:  # a delay fault's effect (0: no wait, no rule)
                    await FaultRule(id=0, delay_ms=item["delay_ms"]).effect().wait()
                item = None
        if item is not None:
            try:
                effect, answered = self._effect(mock, operation, item)
                ex.answer(*answered)
                ex.effect = effect  # sent as a fault's: a drop loses the connection mid-answer
            except Exception as exc:  # the self-check refused it (a bug of ours): 500
                mock.core.failed(ex, exc, "varying")
        else:
            self._varied(mock, ex, operation, varied)
        with self._lock:
            self.applied.update(varied)
        ex.varied = tuple(sorted(set(varied)))

    def _effect(self, mock: MockApp, operation: Any, item: dict[str, Any]
                ) -> tuple[Effect, tuple[int, bytes, RawHeaders]]:
        """An answer item as the fault effect that answers it (engine/faults.py): a drop, or
        the documented error of its status (`responses.documented_error`, as `Prefer: code=N`
        makes one; a rate-limit item is the 429 with its `Retry-After`), self-checked unless
        a 5xx, which the document does not list (decision V3). With its answer."""
        if item["kind"] == "drop":
            effect = FaultRule(id=0, drop=True).effect()
        else:
            status = 429 if item["kind"] == "rate-limit" else item["status"]
            error = documented_error(operation, status, f"robustness mode: {item['kind']}",
                                     retry_after=item.get("retry_after", 1))
            message = error.message
            if item["kind"] != "rate-limit":
                # Said as injected, and by which item: the document's example error would
                # blame values the client never sent (decision U17).
                injected = (f"injected by robustness mode: status {status} on "
                            f"{operation.operation_id}'s call {item['call']}")
                message = (f"a documented refusal ({injected})" if status < 500 else
                           f"service unavailable ({status}); retry ({injected})")
            effect = FaultRule(id=0, status=status, error=message,
                               headers=error.headers).effect()
        answered = effect.answer()
        assert answered is not None  # a drop's or a status's effect answers
        if item["kind"] != "drop" and answered[0] < 500:
            _checker(mock).check(operation, answered[0], answered[1], dict(error.headers))
        return effect, answered

    def _varied(self, mock: MockApp, ex: Exchange, operation: Any, varied: list[int]) -> None:
        """The core's answer with the paging and content items applied, self-checked."""
        op_id = operation.operation_id
        paging = self.paging.get(op_id, {})
        original_query = ex.query_string
        empty_page = False
        if paging:
            query = parse_qsl(original_query.decode("latin-1"), keep_blank_values=True)
            if "empty-last-page" in paging and ("cursor", EMPTY_PAGE_CURSOR) in query:
                query = [(k, v) for k, v in query if k != "cursor"]
                empty_page = True
            if "page-of-one" in paging:
                query = [(k, v) for k, v in query if k != "limit"] + [("limit", "1")]
                varied.append(paging["page-of-one"])
            ex.query_string = urlencode(query).encode("latin-1")
        try:
            mock.core.answer(ex)
            if 200 <= ex.status < 300 and ex.response[:1] == b"{":
                body, headers = self._rewrite(mock, operation, ex.status, ex.response,
                                              ex.headers, paging, empty_page, varied)
                ex.answer(ex.status, body, headers)
        except Exception as exc:  # a varied answer the self-check refused (a bug of ours)
            mock.core.failed(ex, exc, "varying")
        finally:
            ex.query_string = original_query  # the journal shows what the client sent

    def _rewrite(self, mock: MockApp, operation: Any, status: int, body: bytes,
                 headers: RawHeaders, paging: dict[str, int], empty_page: bool,
                 varied: list[int]) -> tuple[bytes, RawHeaders]:
        payload = orjson.loads(body)
        changed = False
        if "empty-last-page" in paging and isinstance(payload.get("data"), list):
            if empty_page:
                payload.update(data=[], next_cursor=None, has_more=False)
                changed = True
            elif payload["data"] and payload.get("has_more") is False:
                payload.update(next_cursor=EMPTY_PAGE_CURSOR, has_more=True)
                changed = True
            if changed:
                varied.append(paging["empty-last-page"])
        added: list[tuple[dict[str, Any], str]] = []
        if self.records:
            self._walk(payload, added, varied)
        if not changed and not added:
            return body, headers
        final = orjson.dumps(payload)
        for holder, name in added:  # the documented part, proven valid
            del holder[name]
        checked = final if not added else orjson.dumps(payload)
        _checker(mock).check(operation, status, checked,
                             {k.decode("latin-1"): v.decode("latin-1") for k, v in headers})
        return final, json_headers(final)

    def _walk(self, node: Any, added: list[tuple[dict[str, Any], str]],
              varied: list[int]) -> None:
        """Mark the content items whose records the answer holds; add their extra fields."""
        if isinstance(node, list):
            for value in node:
                self._walk(value, added, varied)
            return
        if not isinstance(node, dict):
            return
        for value in node.values():
            if isinstance(value, (dict, list)):
                self._walk(value, added, varied)
        for (table, key), indexes in self.records.items():
            if node.get(TABLES[table].key) != key or not (
                    set(node) <= self.catalogue.documented(table)):
                continue
            for index in indexes:
                item = self.plan[index]
                if index not in varied:
                    varied.append(index)
                if item["kind"] == "extra-field" and item["field"] not in node:
                    node[item["field"]] = item["value"]
                    added.append((node, item["field"]))


def describe_plan(plan: Sequence[dict[str, Any]]) -> str:
    """A plan in words, one item a line (its index first)."""
    return "\n".join(f"[{i}] {item.get('describe') or describe(item)}"
                     for i, item in enumerate(plan))


def is_content(item: dict[str, Any]) -> bool:
    return "record" in item

