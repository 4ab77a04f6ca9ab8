"""Clients written the way production integrations of the API are written.

They are deliberately not written for the mock: no `limit` (the default page size), cursors
followed until `next_cursor` is falsy without reading `has_more`, parameters the API does not
document (a filter the client re-applies itself, cache busters, tracing ids), only the fields
each needs read, and independent reads fetched in parallel. The first one follows the one
public client of the real API that could be found (a JavaScript integration running in
production): it looks a guest up by email among the contacts, then fetches the guest's
messages and tickets at once.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx

_bust = itertools.count(1_732_300_000_000)


class ApiError(Exception):
    def __init__(self, response: httpx.Response) -> None:
        self.status = response.status_code
        try:
            self.message = str(response.json().get("error"))
        except ValueError:
            self.message = response.text
        super().__init__(f"{self.status}: {self.message}")


async def _get(client: httpx.AsyncClient, path: str, **params: Any) -> Any:
    # Like the JS client: a cache buster on every read, which the service ignores.
    response = await client.get(path, params={**params, "_": next(_bust)})
    if response.status_code != 200:
        raise ApiError(response)
    return response.json()


async def _all(client: httpx.AsyncClient, path: str, **params: Any) -> AsyncIterator[Any]:
    """Every item of a list: follow next_cursor until it is falsy (has_more is not read)."""
    cursor = None
    while True:
        page = await _get(client, path, **params, **({"cursor": cursor} if cursor else {}))
        for item in page["data"]:
            yield item
        cursor = page.get("next_cursor")
        if not cursor:
            return


@dataclass
class GuestOverview:
    contact_id: str
    name: str
    messages: list[str]
    open_tickets: list[str]


async def find_guest_by_email(client: httpx.AsyncClient, workspace_id: str,
                              email: str) -> dict[str, Any] | None:
    """The contact list has no email filter: walk it, matching the email channel or, for a
    contact created from an unknown email sender, the first name (the sender's address)."""
    async for contact in _all(client, "/v1/contacts", workspace_id=workspace_id):
        detail = await _get(client, f"/v1/contacts/{contact['id']}", workspace_id=workspace_id)
        channels = detail["data"].get("channels") or []
        if (contact.get("first_name") or "").lower() == email.lower() or any(
                ch.get("type") == "email" and ch.get("value", "").lower() == email.lower()
                for ch in channels):
            return contact
    return None


async def guest_overview(client: httpx.AsyncClient, workspace_id: str,
                         email: str) -> GuestOverview | None:
    contact = await find_guest_by_email(client, workspace_id, email)
    if contact is None:
        return None
    contact_id = contact["id"]

    async def messages() -> list[str]:
        return [m["body"] async for m in _all(client, f"/v1/conversations/{contact_id}/messages",
                                              workspace_id=workspace_id)]

    async def tickets() -> list[str]:
        # `contact_id` is not a documented filter of the ticket list; the client sends it
        # anyway and filters the answer itself (the real service ignores it).
        return [t["id"] async for t in _all(client, "/v1/tickets", workspace_id=workspace_id,
                                            contact_id=contact_id, status="open")
                if t["contact_id"] == contact_id]

    bodies, open_tickets = await asyncio.gather(messages(), tickets())
    name = " ".join(p for p in (contact.get("first_name"), contact.get("last_name")) if p)
    return GuestOverview(contact_id, name, bodies, open_tickets)


async def inbox_poll(client: httpx.AsyncClient, workspace_id: str, since: str,
                     trace_id: str) -> list[str]:
    """A poller: conversations written since a bound, newest activity first, with a tracing
    id the service does not know."""
    return [c["id"] async for c in _all(client, "/v1/conversations", workspace_id=workspace_id,
                                        sort_by="last_message_at", order="desc",
                                        updated_since=since, trace_id=trace_id)]


async def dashboard(client: httpx.AsyncClient, workspace_ids: list[str]) -> dict[str, int]:
    """Open tickets per workspace, the workspaces fetched in parallel."""
    async def count(ws: str) -> int:
        return len([t async for t in _all(client, "/v1/tickets", workspace_id=ws,
                                          status="open", include="assignee")])

    counts = await asyncio.gather(*(count(ws) for ws in workspace_ids))
    return dict(zip(workspace_ids, counts, strict=True))
