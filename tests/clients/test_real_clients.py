"""Production-style clients (integrations.py) against the mock, in both modes.

Default mode: they work unchanged, with the answers they would get without their extra
parameters. Strict mode (`strict_params`): their first undocumented parameter is refused
with 400 naming it.
"""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

from . import integrations
from .integrations import ApiError


def _run(mock_api: Any, job: Any) -> Any:
    async def main() -> Any:
        async with httpx.AsyncClient(base_url=mock_api.base_url,
                                     headers=mock_api.headers()) as client:
            return await job(client)

    return asyncio.run(main())


def test_guest_lookup_by_email(mock_api: Any) -> None:
    ws = mock_api.workspaces.primary
    guest = _run(mock_api, lambda c: integrations.guest_overview(c, ws, "emma.clarke@gmail.com"))
    assert guest is not None and guest.contact_id == "ph_emma_clarke"
    assert guest.name == "Emma Clarke"
    assert len(guest.messages) == 7  # both of her threads
    # Her tickets are resolved/closed: the client's own contact filter leaves none open.
    assert guest.open_tickets == []
    ignored = [r for r in mock_api.requests(path="/v1/tickets") if r.ignored_params]
    assert ignored and all(set(r.ignored_params) == {"contact_id", "_"} for r in ignored)


def test_guest_created_from_an_unknown_email_sender(mock_api: Any) -> None:
    ws = mock_api.workspaces.primary
    guest = _run(mock_api, lambda c: integrations.guest_overview(
        c, ws, "olivia.grant@outlook.com"))
    assert guest is not None and guest.name == "olivia.grant@outlook.com"
    assert guest.open_tickets == ["xd_olivia_grant_availability"]
    assert guest.messages[0].startswith("Hello, is Gull Cottage free")


def test_lookup_walks_every_page_without_limit(mock_api: Any) -> None:
    ws = mock_api.workspaces.primary
    assert _run(mock_api, lambda c: integrations.find_guest_by_email(c, ws, "nobody@x.y")) is None
    pages = [r for r in mock_api.requests(path="/v1/contacts") if r.path == "/v1/contacts"]
    assert len(pages) >= 2 and all("limit" not in r.query for r in pages)
    assert "cursor" in pages[-1].query


def test_poller_and_dashboard(mock_api: Any) -> None:
    ws = mock_api.workspaces.primary
    polled = _run(mock_api, lambda c: integrations.inbox_poll(
        c, ws, "2026-10-20T00:00:00.000Z", "trace-4f2a"))
    direct = mock_api.client().get("/v1/conversations", params={
        "workspace_id": ws, "sort_by": "last_message_at", "order": "desc",
        "updated_since": "2026-10-20T00:00:00.000Z"}).json()["data"]
    assert polled[:len(direct)] == [c["id"] for c in direct]
    counts = _run(mock_api, lambda c: integrations.dashboard(c, ["ws_harborview", "ws_alpine"]))
    assert counts["ws_harborview"] > 0


@pytest.mark.mock_api(strict_params=True)
@pytest.mark.parametrize(("name", "job"), [
    ("_", lambda ws: lambda c: integrations.find_guest_by_email(c, ws, "emma.clarke@gmail.com")),
    ("trace_id", lambda ws: lambda c: integrations.inbox_poll(c, ws, "2026-10-20T00:00:00.000Z",
                                                              "t")),
    ("include", lambda ws: lambda c: integrations.dashboard(c, [ws])),
])
def test_strict_mode_refuses_each_client(mock_api: Any, name: str, job: Any) -> None:
    ws = mock_api.workspaces.primary
    with pytest.raises(ApiError) as info:
        _run(mock_api, job(ws))
    assert info.value.status == 400
    # The first undocumented parameter in the request is the one named.
    assert info.value.message == f"unknown query parameter '{name}'"


@pytest.mark.mock_api(strict_params=True)
def test_strict_mode_names_the_undocumented_filter(mock_api: Any) -> None:
    ws = mock_api.workspaces.primary
    response = mock_api.client().get("/v1/tickets", params={"workspace_id": ws,
                                                            "contact_id": "ph_emma_clarke"})
    assert response.status_code == 400
    assert response.json() == {"error": "unknown query parameter 'contact_id'"}
