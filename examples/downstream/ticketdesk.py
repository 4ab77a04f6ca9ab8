"""A tiny client of the Workspace API, standing in for "your code" in the example tests."""

from __future__ import annotations

import time
from typing import Any

import httpx

__all__ = ["TicketDesk"]


class TicketDesk:
    """Lists a workspace's open tickets and resolves them, retrying throttled or failed calls."""

    def __init__(self, base_url: str, token: str, *, transport: httpx.BaseTransport | None = None,
                 retries: int = 2, sleep: Any = time.sleep) -> None:
        self._http = httpx.Client(base_url=base_url, transport=transport, timeout=10,
                                  headers={"Authorization": f"Bearer {token}"})
        self._retries = retries
        self._sleep = sleep

    def _call(self, method: str, path: str, **kwargs: Any) -> Any:
        for attempt in range(self._retries + 1):
            response = self._http.request(method, path, **kwargs)
            if response.status_code in (429, 503) and attempt < self._retries:
                self._sleep(float(response.headers.get("Retry-After", "1")))
                continue
            response.raise_for_status()
            return response.json()
        raise AssertionError("unreachable")

    def open_tickets(self, workspace_id: str) -> list[dict[str, Any]]:
        """Every open ticket of the workspace, following the cursor pages."""
        tickets: list[dict[str, Any]] = []
        params: dict[str, Any] = {"workspace_id": workspace_id, "status": "open", "limit": 2}
        while True:
            page = self._call("GET", "/v1/tickets", params=params)
            tickets.extend(page["data"])
            if not page["has_more"]:
                return tickets
            params["cursor"] = page["next_cursor"]

    def resolve(self, ticket_id: str) -> dict[str, Any]:
        return self._call("POST", f"/v1/tickets/{ticket_id}/resolve")["data"]

    def close(self) -> None:
        self._http.close()
