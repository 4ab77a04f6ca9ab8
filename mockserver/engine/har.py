"""The journal as an HTTP Archive (HAR 1.2): what DevTools, HTTP Toolkit, Bruno and support
tickets open (`GET /__mock__/requests?format=har`, `mock_api.export_har(path)`; decision W7).

Written with `harfile` (the HAR writer schemathesis uses). Each journal entry is one HAR
entry: the request as received (headers redacted as the journal redacts them, the query, the
body as text), the response's status and body (the journal keeps no response headers: the
body's JSON type is given as its content type), the latency as `time` and `timings.wait`.
`startedDateTime` is the wall time the request arrived (DevTools orders by it); the mock
clock's instant, the operation and the fault or stub that answered are in the entry's
`comment`.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterable
from http import HTTPStatus
from urllib.parse import parse_qsl

import harfile

from .journal import JournalEntry

__all__ = ["har_document"]

CREATOR = "workspace-api-mock"


def _text(raw: bytes | None, size: int) -> str:
    """A body as text; one the journal did not keep (too long) as its size."""
    if raw is None:
        return f"<{size} bytes, not kept>" if size else ""
    return raw.decode("utf-8", "replace")


def _reason(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return ""


def _entry(out: harfile.HarFile, entry: JournalEntry, base_url: str) -> None:
    headers = entry.headers
    query = entry.query_string.decode("latin-1")
    request_type = headers.get("content-type", "application/json")
    post = None
    if entry.body is not None or entry.body_size:
        post = harfile.PostData(mimeType=request_type, text=_text(entry.body, entry.body_size))
    response_text = _text(entry.response_body, entry.response_size)
    response_size = entry.response_size or len(entry.response_body or b"")
    notes = [f"mock clock {entry.time}", entry.operation_id or "no operation"]
    if entry.fault:
        notes.append(entry.fault)
    if entry.variations:
        notes.append("variations " + ", ".join(map(str, entry.variations)))
    latency = round(entry.latency_ms, 3)
    out.add_entry(
        startedDateTime=entry.wall_time,
        time=latency,
        request=harfile.Request(
            method=entry.method,
            url=f"{base_url}{entry.path}{'?' + query if query else ''}",
            httpVersion="HTTP/1.1",
            headers=[harfile.Record(name=k, value=v) for k, v in headers.items()],
            queryString=[harfile.Record(name=k, value=v)
                         for k, v in parse_qsl(query, keep_blank_values=True)],
            postData=post,
            bodySize=entry.body_size or len(entry.body or b""),
        ),
        response=harfile.Response(
            status=entry.status,
            statusText=_reason(entry.status),
            httpVersion="HTTP/1.1",
            headers=[],
            content=harfile.Content(size=response_size,
                                    mimeType="application/json" if response_text else "",
                                    text=response_text),
            redirectURL="",
            bodySize=response_size,
        ),
        timings=harfile.Timings(send=0, wait=latency, receive=0),
        comment="; ".join(notes),
    )


def har_document(entries: Iterable[JournalEntry], base_url: str, *,
                 comment: str | None = None) -> dict[str, object]:
    """The HAR 1.2 document (`{"log": ...}`) of these journal entries, oldest first, their
    URLs under `base_url` (where the state is served)."""
    from .. import __version__

    buffer = io.StringIO()
    with harfile.HarFile(buffer, creator=harfile.Creator(name=CREATOR, version=__version__),
                         comment=comment) as out:
        for entry in entries:
            _entry(out, entry, base_url)
    document: dict[str, object] = json.loads(buffer.getvalue())
    return document
