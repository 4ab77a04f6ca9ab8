"""The ten calls of a typical client test (bench_robust.py): up to three pages of contacts,
then a contact by id (or the tickets) for the rest, any status counting and a dropped
connection tolerated. Imported in process; run as a script, it is the client test command
`python -m mockserver robust` runs (MOCK_API_BASE_URL, MOCK_API_TOKEN, MOCK_API_WORKSPACE)."""

from __future__ import annotations

import contextlib
import os
from typing import Any

import httpx


def ten_calls(api: httpx.Client, prefix: str, workspace: str) -> None:
    calls, cursor, ids = 0, None, []
    while calls < 3:  # up to three pages of contacts
        calls += 1
        params: dict[str, Any] = {"workspace_id": workspace, "limit": 10}
        if cursor:
            params["cursor"] = cursor
        try:
            r = api.get(f"{prefix}/v1/contacts", params=params)
            body = r.json() if r.status_code == 200 else {}
        except httpx.TransportError:  # a dropped connection (the `drop` kind)
            continue
        ids += [x["id"] for x in body.get("data", [])]
        cursor = body.get("next_cursor")
        if not cursor:
            break
    for i in range(10 - calls):
        path = f"/v1/contacts/{ids[i % len(ids)]}" if ids else "/v1/tickets"
        with contextlib.suppress(httpx.TransportError):  # a dropped connection
            api.get(f"{prefix}{path}", params={"workspace_id": workspace})


if __name__ == "__main__":
    with httpx.Client(base_url=os.environ["MOCK_API_BASE_URL"],
                      headers={"Authorization": "Bearer " + os.environ["MOCK_API_TOKEN"]}) as c:
        ten_calls(c, "", os.environ["MOCK_API_WORKSPACE"])
