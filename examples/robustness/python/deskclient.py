"""A small client of the Workspace API, the "your code" that robustness mode tries to break.

It syncs a workspace's contacts into an address book (cursor paging), resolves the open tickets
that wait on a third party, and retries throttled (429), failing (5xx) and dropped calls.

Three bugs are planted in it, one at a time, by the environment variable DESK_BUG; unset, the
client is the fixed one. Each is a bug the faithful mock's default answers never show:
- `null-type`: a contact's type (guest, owner, ...) is read as `contact["type"].lower()`, but
  the document says `type` is nullable (every fixture contact has one);
- `empty-page`: the paging loop trusts `has_more: true` to promise a next page *with items*
  and reads its last item, but a last page may be empty;
- `retry-after`: a 429 is retried after the client's own short back-off, ignoring the
  `Retry-After` header the answer carries.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import httpx

__all__ = ["BUGS", "ApiError", "DeskClient"]

BUGS = ("null-type", "empty-page", "retry-after")


class ApiError(Exception):
    """A call the API refused (a documented 4xx), or that kept failing after the retries."""

    def __init__(self, status: int | None, message: str) -> None:
        super().__init__(f"{status or 'no answer'}: {message}")
        self.status = status


class DeskClient:
    """The API's calls this desk tool makes, with retries; `sleep` is how it waits."""

    def __init__(self, base_url: str, token: str, *, sleep: Callable[[float], None] = time.sleep,
                 attempts: int = 4, bug: str | None = None,
                 event_hooks: dict[str, list[Callable[..., Any]]] | None = None) -> None:
        self.bug = os.environ.get("DESK_BUG", "") if bug is None else bug
        if self.bug and self.bug not in BUGS:
            raise ValueError(f"DESK_BUG={self.bug!r}: one of {', '.join(BUGS)}")
        self._http = httpx.Client(base_url=base_url.rstrip("/"), timeout=10,
                                  headers={"Authorization": f"Bearer {token}"},
                                  event_hooks=event_hooks)
        self._sleep = sleep
        self._attempts = attempts

    def close(self) -> None:
        self._http.close()

    # -- calls, retried --------------------------------------------------------------------

    def _wait(self, response: httpx.Response | None, attempt: int) -> float:
        backoff = 0.25 * 2 ** attempt
        if response is None or self.bug == "retry-after":
            return backoff  # (planted bug "retry-after": Retry-After ignored)
        retry_after = response.headers.get("Retry-After", "")
        return max(float(retry_after), backoff) if retry_after.isdigit() else backoff

    def call(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        """The answer's JSON body; 429, 5xx and lost connections are retried, other
        refusals raise ApiError at once."""
        for attempt in range(self._attempts):
            last = attempt + 1 == self._attempts
            try:
                response = self._http.request(method, path, **kwargs)
            except httpx.TransportError as exc:  # a dropped connection, a time-out
                if last:
                    raise ApiError(None, f"{method} {path}: {exc!r}") from exc
                self._sleep(self._wait(None, attempt))
                continue
            if response.status_code == 429 or response.status_code >= 500:
                if last:
                    raise ApiError(response.status_code, f"{method} {path}: gave up retrying")
                self._sleep(self._wait(response, attempt))
                continue
            if response.status_code >= 400:
                raise ApiError(response.status_code, response.json().get("error", ""))
            body: dict[str, Any] = response.json()
            return body
        raise AssertionError("unreachable")

    def pages(self, path: str, **params: Any) -> Iterator[list[dict[str, Any]]]:
        """Each page's items, following `next_cursor` while `has_more`."""
        params = {**params, "limit": 10}
        while True:
            page = self.call("GET", path, params=params)
            yield page["data"]
            if not page["has_more"]:
                return
            params["cursor"] = page["next_cursor"]

    # -- what the desk tool does -----------------------------------------------------------

    def sync_contacts(self, workspace_id: str) -> dict[str, dict[str, str]]:
        """The workspace's contacts by id: display name and type."""
        book: dict[str, dict[str, str]] = {}
        for items in self.pages("/v1/contacts", workspace_id=workspace_id):
            for contact in items:
                if self.bug == "null-type":
                    kind = contact["type"].lower()  # (planted bug: null)
                else:
                    kind = (contact["type"] or "unknown").lower()
                name = f"{contact['first_name']} {contact['last_name']}".strip()
                book[contact["id"]] = {"name": name or contact["id"], "type": kind}
            if self.bug == "empty-page" or items:  # (planted bug: an empty page has no last)
                print(f"synced {len(book)} contacts, back to {items[-1]['last_message_at']}")
        return book

    def resolve_third_party(self, workspace_id: str) -> list[str]:
        """Resolve the open tickets waiting on a third party; their ids."""
        resolved = []
        workload: Counter[str] = Counter()
        for items in self.pages("/v1/tickets", workspace_id=workspace_id, status="open"):
            for ticket in items:
                workload[(ticket["assignee"] or {}).get("name") or "(unassigned)"] += 1
                if ticket["waiting_on"] == "third_party":
                    self.call("POST", f"/v1/tickets/{ticket['id']}/resolve")
                    resolved.append(ticket["id"])
        print("open tickets by assignee:", dict(sorted(workload.items())))
        return resolved
