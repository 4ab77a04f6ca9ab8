"""Self-check (selfcheck.py): a body found valid is not checked again; nothing else is spared."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from mockserver.engine import selfcheck
from mockserver.engine.app import MockApp
from mockserver.engine.errors import ResponseContractViolation
from mockserver.engine.selfcheck import SelfCheck


def test_an_invalid_body_fails_every_time_it_is_sent(mock: MockApp) -> None:
    check = SelfCheck(mock.spec)
    models = mock.spec.by_id["listModels"]
    valid = orjson.dumps({"data": []})
    invalid = orjson.dumps({"data": [], "x": 1})
    leaked = orjson.dumps({"data": [{"_x": 1}]})
    for _ in range(3):  # remembered as valid once it passed: checked once, still passes
        check.check(models, 200, valid, {})
        for bad in (invalid, leaked, b"not json"):
            with pytest.raises(ResponseContractViolation):
                check.check(models, 200, bad, {})
    # A body valid for one operation or status is not taken as valid for another.
    with pytest.raises(ResponseContractViolation):
        check.check(mock.spec.by_id["getApiIndex"], 200, valid, {})
    with pytest.raises(ResponseContractViolation):
        check.check(models, 401, valid, {})


def test_a_remembered_body_still_has_its_headers_checked(mock: MockApp) -> None:
    check = SelfCheck(mock.spec)
    models = mock.spec.by_id["listModels"]
    body = orjson.dumps({"error": "Too many requests"})
    check.check(models, 429, body, {"Retry-After": "1"})
    with pytest.raises(ResponseContractViolation, match="Retry-After"):
        check.check(models, 429, body, {})


def test_what_is_remembered_is_bounded(mock: MockApp, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(selfcheck, "_VALID_BODIES", 4)
    check = SelfCheck(mock.spec)
    models = mock.spec.by_id["listModels"]
    for n in range(10):
        check.check(models, 429, orjson.dumps({"error": "x" * (n + 1)}), {"Retry-After": "1"})
        assert 1 <= len(check._valid) <= 4


def test_a_body_found_valid_is_not_parsed_again(mock: MockApp,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    check = SelfCheck(mock.spec)
    models = mock.spec.by_id["listModels"]
    checked: list[bytes] = []
    body_errors = check._body_errors

    def counted(operation: Any, status: int, body: bytes) -> list[str]:
        checked.append(body)
        return body_errors(operation, status, body)

    monkeypatch.setattr(check, "_body_errors", counted)
    page = orjson.dumps({"data": []})
    for _ in range(3):
        check.check(models, 200, bytes(page), {})  # equal bytes, another object each time
    assert checked == [page]
