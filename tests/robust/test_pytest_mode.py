"""@pytest.mark.mock_api_robust: a test's body under hypothesis over variation plans, the
failure shrunk to the plan item that breaks it, printed in words with a replay that fails
the same way; a client that copes passes."""

from __future__ import annotations

import re

import pytest

from mockserver.engine.handlers import load_handlers

pytest_plugins = ["pytester"]
load_handlers()  # (see tests/testing/test_pytest_plugin.py: one copy of the handlers for the session)

CLIENT = """
import pytest

def sync(client, careful):
    names = []
    response = client.get("/v1/contacts", params={"workspace_id": "ws_harborview",
                                                   "limit": 100})
    if response.status_code != 200:
        return names  # a rate limit: this client tries again later
    for contact in response.json()["data"]:
        kind = contact["type"]
        if careful and kind is None:
            continue
        names.append(kind.upper())  # the planted bug: type may be null
    return names

@pytest.mark.mock_api_robust(kinds=["null", "rate-limit", "unicode"],
                             operations=["listContacts"], max_examples=MAX)
def test_sync(mock_api):
    with mock_api.client() as client:
        sync(client, careful=CAREFUL)
"""


def _run(pytester: pytest.Pytester, careful: bool, *args: str) -> pytest.RunResult:
    pytester.makepyfile(test_inner=CLIENT.replace("CAREFUL", str(careful)).replace(
        "MAX", "60"))
    return pytester.runpytest_inprocess("-p", "no:cacheprovider", *args)


def test_the_breaking_item_is_found_shrunk_and_replayed(pytester: pytest.Pytester) -> None:
    result = _run(pytester, careful=False)
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "AttributeError" in out
    lines = out.splitlines()
    start = lines.index(next(ln for ln in lines if "the minimal plan that breaks" in ln))
    plan_lines = [ln.strip().removeprefix("E").strip() for ln in lines[start + 1:start + 3]]
    assert re.fullmatch(r"\[0\] listContacts: contacts \S+\.type = null", plan_lines[0]), out
    assert plan_lines[1].startswith("replay: pytest test_inner.py::test_sync "), out
    replay = re.search(r"--mock-api-robust-replay='([^']+)'", plan_lines[1])
    assert replay is not None
    again = _run(pytester, False, f"--mock-api-robust-replay={replay.group(1)}")
    again.assert_outcomes(failed=1)
    assert "AttributeError" in again.stdout.str()
    assert _run(pytester, True, f"--mock-api-robust-replay={replay.group(1)}").ret == 0


def test_a_client_that_copes_passes(pytester: pytest.Pytester) -> None:
    _run(pytester, careful=True).assert_outcomes(passed=1)


def test_a_marker_without_mock_api_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_inner="""
import pytest

@pytest.mark.mock_api_robust()
def test_nothing():
    pass
""")
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    assert "needs a (sync) test that uses the mock_api fixture" in result.stdout.str()


def test_a_real_server_skips_naming_why(pytester: pytest.Pytester) -> None:
    # the plan is drawn over the in-process session's records; a real server has none: the
    # test skips, as every mock-only helper does there (decision U16)
    pytester.makepyfile(test_inner=CLIENT.replace("CAREFUL", "True").replace("MAX", "2"))
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "-rs",
                                          "--mock-api-base-url=http://127.0.0.1:9",
                                          "--mock-api-workspace=ws_harborview")
    result.assert_outcomes(skipped=1)
    out = result.stdout.str()
    assert "needs the in-process mock" in out and "--mock-api-base-url targets a real" in out


def test_a_mock_over_http_skips_naming_why(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_inner=CLIENT.replace("CAREFUL", "True").replace("MAX", "2"))
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-rs", "-n", "1",
                                           "--mock-api-share-server")
    result.assert_outcomes(skipped=1)
    assert "reaches the mock over HTTP (--mock-api-share-server" in result.stdout.str()


def test_without_hypothesis_the_marker_names_the_install(pytester: pytest.Pytester) -> None:
    pytester.makeconftest("import sys\nsys.modules['hypothesis'] = None  # not installed\n")
    pytester.makepyfile(test_inner=CLIENT.replace("CAREFUL", "True").replace("MAX", "2"))
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:hypothesispytest")
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "needs hypothesis" in out and "pip install 'workspace-api-mock[robust]'" in out
    assert "faithful answers" not in out
