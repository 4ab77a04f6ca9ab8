"""The pytest plugin runs custom tools' code by default (the user's own tests, in process),
switched off by option, ini or marker (issue 42, DECISIONS T11); off, a run says it was not
executed."""

from __future__ import annotations

import pytest

from mockserver.engine.handlers import load_handlers

pytest_plugins = ["pytester"]
load_handlers()  # one copy of the handler modules for the inner runs (test_pytest_plugin.py)

INNER = """
import pytest

NOT_RUN = "not executed: the mock runs custom tools' code only when asked"

def run(mock_api, **kwargs):
    client = mock_api.client(**kwargs)
    response = client.post("/v1/custom-tools/kg_harbor_tides/run",
                           json={"parameters": {"date": "2026-11-02"}})
    assert response.status_code == 200, response.text
    return response.json()["data"]

def test_default(mock_api):
    for kwargs in ({}, {"in_process": True}):
        data = run(mock_api, **kwargs)
        if EXPECT_RUN:
            assert data["message"].startswith("Low tide on Monday November 02"), data
            assert data["logs"] is None
        else:
            assert data["message"] == "tide-times ran with date"
            assert data["logs"].startswith(NOT_RUN)

@pytest.mark.mock_api(run_tool_code=False)
def test_marker_off(mock_api):
    assert run(mock_api)["logs"].startswith(NOT_RUN)

@pytest.mark.mock_api(run_tool_code=True)
def test_marker_on(mock_api):
    assert run(mock_api)["message"].startswith("Low tide on Monday")
"""


def _run(pytester: pytest.Pytester, expect_run: bool, *args: str) -> pytest.RunResult:
    pytester.makepyfile(test_inner=INNER.replace("EXPECT_RUN", repr(expect_run)))
    return pytester.runpytest_inprocess("-p", "no:cacheprovider", *args)


def test_on_by_default(pytester: pytest.Pytester) -> None:
    _run(pytester, True).assert_outcomes(passed=3)


def test_off_by_option(pytester: pytest.Pytester) -> None:
    _run(pytester, False, "--mock-api-run-tool-code=off").assert_outcomes(passed=3)


def test_off_by_ini(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nmock_api_run_tool_code = false\n")
    _run(pytester, False).assert_outcomes(passed=3)
