"""`--export DIR`: each failure the gate can state as a property of one response, written as a
standalone pytest file (httpx only, nothing of this package) that replays the requests that
produced it, the writes the same check family made before it included, against `BASE_URL` and
`TOKEN` from the environment, and asserts the property that broke.

What a replayed failure asserts (`expectation`):
- a 5xx, a dropped connection or a time-out (`server_error`): a response below 500;
- a status the gate required (401 without a valid token, 400 for an out-of-range limit or a
  forged cursor, 404 after a delete): that status;
- an error body (`error_shape`): exactly `{"error": string}`.
Other failures (orderings, filters, read-backs that compare two reads) are listed in DIR's
README with their curl commands, not exported.

Ids a replayed create answers with are carried into the later requests in place of the ids
the gate's run saw, so the file replays against a fresh server.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from .violations import Exchange, Violation

if TYPE_CHECKING:
    from .gate import Gate

__all__ = ["expectation", "export_failures"]

# check -> the status a correct server answers to the failing request
EXPECTED_STATUS = {"auth_401": 401, "pagination_refuses_limit": 400,
                   "pagination_refuses_cursor": 400, "law_delete_sticks": 404}

TEMPLATE = '''"""Replays a failure the conformance gate found (exported with --export).

{operation}: {check} ({family})
{message}

Run against the server that failed, or any other implementation of the API:

    BASE_URL=http://127.0.0.1:8080 TOKEN=... pytest {name}

Needs only httpx and pytest. Gate run: seed {seed}.
"""

import json
import os

import httpx

BASE_URL = os.environ["BASE_URL"].rstrip("/")
TOKENS = {{"token": os.environ.get("TOKEN", ""), "read_token": os.environ.get("READ_TOKEN", ""),
          "foreign_token": os.environ.get("FOREIGN_TOKEN", "")}}

# The writes the gate sent before the failing request (same check family), in order:
# (method, path and query, JSON body or None, credentials, the id the gate's run got back).
SETUP = {setup}
# The failing request: (method, path and query, JSON body or None, credentials).
REQUEST = {request}
EXPECT = {expect}


def _headers(credentials):
    kind, value = credentials
    if kind == "none":
        return {{}}
    if kind == "raw":
        return {{"Authorization": value}}
    return {{"Authorization": "Bearer " + TOKENS[kind]}}


def _carry(text, ids):
    for old, new in ids.items():
        text = text.replace(old, new)
    return text


def _send(client, method, target, body, credentials, ids):
    content = None if body is None else _carry(json.dumps(body), ids).encode()
    headers = {{"Accept": "application/json", **_headers(credentials)}}
    if content is not None:
        headers["Content-Type"] = "application/json"
    return client.request(method, BASE_URL + _carry(target, ids), content=content,
                          headers=headers)


def test_replay():
    ids = {{}}
    with httpx.Client(timeout=30) as client:
        for method, target, body, credentials, created in SETUP:
            answer = _send(client, method, target, body, credentials, ids)
            assert answer.status_code < 300, (method, target, answer.status_code, answer.text)
            if created:
                data = answer.json()
                data = data.get("data", data) if isinstance(data, dict) else data
                ids[created] = str(data.get("id"))
        method, target, body, credentials = REQUEST
        response = _send(client, method, target, body, credentials, ids)
    if "status" in EXPECT:
        assert response.status_code == EXPECT["status"], (response.status_code, response.text)
    if "below" in EXPECT:
        assert response.status_code < EXPECT["below"], (response.status_code, response.text)
    if EXPECT.get("error_shape"):
        assert 400 <= response.status_code < 500, response.status_code
        body = response.json()
        assert isinstance(body, dict) and set(body) == {{"error"}}, body
        assert isinstance(body["error"], str), body
'''


def expectation(violation: Violation) -> dict[str, Any] | None:
    """What a correct server answers to the failing request, or None: not exportable."""
    if violation.exchange is None:
        return None
    if violation.check == "server_error":
        return {"below": 500}
    if violation.check in EXPECTED_STATUS:
        return {"status": EXPECTED_STATUS[violation.check]}
    if violation.check == "error_shape":
        return {"error_shape": True}
    return None


def _credentials(gate: Gate, headers: dict[str, str]) -> tuple[str, str]:
    value = next((v for k, v in headers.items() if k.lower() == "authorization"), None)
    if value is None:
        return ("none", "")
    config = gate.config
    for kind, token in (("token", config.token), ("read_token", config.read_token),
                        ("foreign_token", config.foreign_token)):
        if token and value == f"Bearer {token}":
            return (kind, "")
    return ("raw", value)  # a malformed or unknown credential the gate sent on purpose


def _target(exchange: Exchange) -> str:
    split = urlsplit(exchange.url)
    return split.path + (f"?{split.query}" if split.query else "")


def _body(exchange: Exchange) -> Any:
    body = exchange.body
    if isinstance(body, bytes | str):
        try:
            return json.loads(body)
        except ValueError:
            return body if isinstance(body, str) else body.decode("utf-8", "replace")
    return body


def _created_id(exchange: Exchange) -> str | None:
    if exchange.method != "POST":
        return None
    data = exchange.json()
    data = data.get("data", data) if isinstance(data, dict) else None
    value = data.get("id") if isinstance(data, dict) else None
    return str(value) if value else None


def _file(gate: Gate, violation: Violation, name: str, expect: dict[str, Any]) -> str:
    assert violation.exchange is not None
    setup = [(e.method, _target(e), _body(e), _credentials(gate, e.headers), _created_id(e))
             for e in violation.setup]
    request = (violation.exchange.method, _target(violation.exchange),
               _body(violation.exchange), _credentials(gate, violation.exchange.headers))
    return TEMPLATE.format(
        operation=violation.operation or "(run)", check=violation.check,
        family=violation.family, message=violation.message.replace('"""', "'''"), name=name,
        seed=gate.config.seed, setup=_literal(setup), request=_literal(request),
        expect=repr(expect))


def _literal(value: Any) -> str:
    return repr(value)  # tuples, lists, dicts, strings, numbers, None: valid Python


def export_failures(gate: Gate, directory: Path) -> list[str]:
    """Write the exportable failures of the run to `directory`; the file names written."""
    directory.mkdir(parents=True, exist_ok=True)
    written, skipped = [], []
    for number, violation in enumerate(gate.violations, 1):
        expect = expectation(violation)
        if expect is None:
            skipped.append(violation)
            continue
        slug = re.sub(r"[^a-z0-9]+", "_", f"{violation.operation or 'run'}_{violation.check}"
                      .lower()).strip("_")
        name = f"test_{number:03d}_{slug}.py"
        (directory / name).write_text(_file(gate, violation, name, expect), encoding="utf-8")
        written.append(name)
    lines = ["# Failures exported by the conformance gate", "",
             "Each `test_*.py` replays one failure: the writes that came before it, then the "
             "request that failed, and asserts what a correct server answers. They need only "
             "`httpx` and `pytest`:", "",
             "```sh", "pip install httpx pytest",
             "BASE_URL=http://127.0.0.1:8080 TOKEN=your-token pytest -q .",
             "# READ_TOKEN / FOREIGN_TOKEN too, for failures the gate found with those tokens",
             "```", "", f"Gate run: seed {gate.config.seed}, {len(written)} file(s).", ""]
    if skipped:
        lines += ["Not exported (the property compares several reads; reproduce with curl, "
                  "the token as `$TOKEN`):", ""]
        lines += [f"- {v.operation or '(run)'} `{v.check}`: {v.message}"
                  + (f"\n  `{v.curl}`" if v.curl else "") for v in skipped]
    (directory / "README.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return written
