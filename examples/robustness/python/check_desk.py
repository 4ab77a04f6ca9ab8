"""The desk client's own test, the COMMAND `python -m mockserver robust -- ...` runs.

It runs the client against MOCK_API_BASE_URL with MOCK_API_TOKEN on MOCK_API_WORKSPACE (what
robustness mode hands every run) and fails (a non-zero exit) when the client:
- crashes (any exception but ApiError: a documented refusal the client reports is fine);
- resolves a ticket twice;
- sends a request sooner than a 429's `Retry-After` allowed (the client's waits are recorded,
  not slept, so a long Retry-After costs the test nothing).
"""

from __future__ import annotations

import os
import sys
from typing import Any

import httpx
from deskclient import ApiError, DeskClient  # beside this script, on sys.path

Event = tuple[str, Any]


def check_retry_after(timeline: list[Event]) -> None:
    """After each 429, the waits before the next request add up to its Retry-After."""
    owed, waited = 0.0, 0.0
    for event, value in timeline:
        if event == "request":
            assert waited >= owed, (f"a request went out {waited:g}s after a 429 whose "
                                    f"Retry-After was {owed:g}s")
            owed, waited = 0.0, 0.0
        elif event == "sleep":
            waited += value
        elif event == "429":
            owed, waited = float(value or 0), 0.0


def main() -> int:
    timeline: list[Event] = []

    def on_request(request: httpx.Request) -> None:
        timeline.append(("request", f"{request.method} {request.url.path}"))

    def on_response(response: httpx.Response) -> None:
        if response.status_code == 429:
            timeline.append(("429", response.headers.get("Retry-After")))

    client = DeskClient(os.environ["MOCK_API_BASE_URL"], os.environ["MOCK_API_TOKEN"],
                        sleep=lambda seconds: timeline.append(("sleep", seconds)),
                        event_hooks={"request": [on_request], "response": [on_response]})
    workspace = os.environ["MOCK_API_WORKSPACE"]
    try:
        book = client.sync_contacts(workspace)
        resolved = client.resolve_third_party(workspace)
        assert len(resolved) == len(set(resolved)), f"a ticket resolved twice: {resolved}"
        print(f"ok: {len(book)} contacts synced, {len(resolved)} tickets resolved")
    except ApiError as exc:
        print(f"ok: the client reported a refusal: {exc}")
    finally:
        client.close()
    check_retry_after(timeline)
    return 0


if __name__ == "__main__":
    sys.exit(main())
