"""One way to make an error answer: every `{"error": ...}` body is built by
`engine/responses.py`, and a 429 says the seconds its `Retry-After` says, whoever makes it (the
rate limiter, `Prefer: code=429`, robustness mode's rate-limit item)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from conftest import auth
from starlette.testclient import TestClient

from mockserver.engine.app import MockApp
from mockserver.standalone.server import create_app

PACKAGE = Path(__file__).resolve().parents[2] / "mockserver"
RETRY = re.compile(r"^Rate limit exceeded(: \d+ requests per minute per \w+)?; "
                   r"retry after (\d+) seconds?$")


def _error_bodies(source: str) -> list[int]:
    """Lines of dict displays shaped as the error body (`{"error": ...}`, alone or with a
    `reason`)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Dict) and node.keys:
            keys = {k.value for k in node.keys if isinstance(k, ast.Constant)}
            if "error" in keys and keys <= {"error", "reason"}:
                found.append(node.lineno)
    return found


def test_no_error_body_is_built_outside_responses_py() -> None:
    found = {str(path.relative_to(PACKAGE)): lines
             for path in sorted(PACKAGE.rglob("*.py"))
             if path.name != "responses.py" and "conform" not in path.parts
             for lines in [_error_bodies(path.read_text(encoding="utf-8"))] if lines}
    assert found == {}


def test_the_scan_finds_an_error_body() -> None:
    assert _error_bodies('body = orjson.dumps({"error": message})\n') == [1]
    assert _error_bodies('{"error": None, "result": 1}\n') == []  # a data field, not the shape


def _retry(response: object) -> tuple[int, int]:
    """(the seconds the message says, the Retry-After header) of a 429."""
    found = RETRY.match(response.json()["error"])  # type: ignore[attr-defined]
    assert found, response.json()  # type: ignore[attr-defined]
    return int(found.group(2)), int(response.headers["Retry-After"])  # type: ignore[attr-defined]


def test_every_429_says_the_seconds_its_retry_after_says(mock: MockApp) -> None:
    with TestClient(create_app(mock=mock), headers=auth()) as client:
        preferred = client.get("/v1", headers={"Prefer": "code=429"})
        assert preferred.status_code == 429
        assert _retry(preferred) == (1, 1)
        assert preferred.json()["error"] == "Rate limit exceeded; retry after 1 second"

        assert client.put("/__mock__/variations", json={"plan": [
            {"kind": "rate-limit", "operation": "listModels", "call": 1,
             "retry_after": 7}]}).status_code == 200
        varied = client.get("/v1/models")
        assert varied.status_code == 429
        assert _retry(varied) == (7, 7)
        assert client.delete("/__mock__/variations").status_code == 204

        mock.state.set_rate_limits(per_minute=1, reset_windows=True)
        assert client.get("/v1/models").status_code == 200
        limited = client.get("/v1/models")
        assert limited.status_code == 429
        said, header = _retry(limited)
        assert said == header and 1 <= header <= 60
        assert "1 requests per minute per token" in limited.json()["error"]  # /v1/models: global
