"""The test author's toolbox (issue 44, decisions W1 to W10), shown the way users run it:
inner test files under pytester, in the test's process and over the control API.

- verification: `mock_api.calls(...)`, `assert_called(...)` and its near misses, the
  strict-requests mode failing a test on a 405;
- stubs: one whole answer for N requests, then the state's own; off-contract refused unless
  `validate=False`;
- without pytest: `MockApi.start(...)` in a plain script;
- HAR export of the journal.
"""

from __future__ import annotations

import textwrap

import pytest
from test_pytest_plugin import OVER_HTTP, add_conftest, run

pytest_plugins = ["pytester"]


@pytest.fixture(params=["in_process", "http"])
def control(request: pytest.FixtureRequest, pytester: pytest.Pytester) -> str:
    if request.param == "http":
        add_conftest(pytester, OVER_HTTP)
    return str(request.param)


# -- W1: calls and assert_called -------------------------------------------------------------

def test_calls_count_by_operation_method_path_and_status(pytester: pytest.Pytester,
                                                         control: str) -> None:
    result = run(pytester, """
        def test_counts(mock_api):
            client = mock_api.client()
            ws = {"workspace_id": mock_api.workspaces.primary}
            client.get("/v1/tickets", params=ws)
            client.get("/v1/tickets", params=ws)
            client.get("/v1/tickets/xd_aisha_khan_parking")
            client.get("/v1/tickets/tk_nobody")
            client.post("/v1/tickets/xd_aisha_khan_parking/notes", json={"body": "hi"})
            assert len(mock_api.calls()) == 5
            assert len(mock_api.calls("listTickets")) == 2
            assert len(mock_api.calls(operation="getTicket")) == 2
            assert len(mock_api.calls(operation="getTicket", status=404)) == 1
            assert len(mock_api.calls(path="/v1/tickets")) == 2  # exact, not a prefix
            assert len(mock_api.calls(path="/v1/tickets/{id}")) == 2  # a template
            assert len(mock_api.calls(path="/v1/tickets/*")) == 3  # a prefix
            assert len(mock_api.calls(method="post")) == 1
            [note] = mock_api.calls(method="POST", path="/v1/tickets/{id}/notes", status=201)
            assert note.json == {"body": "hi"}
            mock_api.assert_called("listTickets", times=2)
            mock_api.assert_called("GET /v1/tickets/{id}", times=2)
            mock_api.assert_called("/v1/tickets/xd_aisha_khan_parking/notes", times=1)
            mock_api.assert_not_called("deleteTicket")
    """)
    result.assert_outcomes(passed=1)


def test_assert_called_lists_the_near_misses(pytester: pytest.Pytester, control: str) -> None:
    result = run(pytester, """
        def test_wrong_count(mock_api):
            client = mock_api.client()
            client.get("/v1/tickets/xd_aisha_khan_parking")
            client.post("/v1/tickets/xd_aisha_khan_parking/resolve")
            client.get("/v1/models")
            mock_api.assert_called("POST /v1/tickets/{id}/notes", times=1)

        def test_nothing_received(mock_api):
            mock_api.assert_called("listTickets")
    """)
    result.assert_outcomes(failed=2)
    text = result.stdout.str()
    assert ("expected POST /v1/tickets/{id}/notes to be called 1 time; "
            "it was called 0 times") in text
    assert "closest other requests (near misses):" in text
    near = text.split("closest other requests (near misses):", 1)[1]
    # closest first: the POST on a ticket, then the GET of the same ticket, then /v1/models
    first, second, third = [line.lstrip("E ") for line in near.splitlines()[1:4]]
    assert first.startswith("#2 POST /v1/tickets/xd_aisha_khan_parking/resolve -> 200")
    assert second.startswith("#1 GET /v1/tickets/xd_aisha_khan_parking -> 200 (getTicket)")
    assert third.startswith("#3 GET /v1/models -> 200")
    assert "the mock received no request in this test" in text


# -- W2, W3: the strict-requests mode -----------------------------------------------------------

STRICT_TESTS = """
    import pytest

    def test_a_405(mock_api):
        assert mock_api.client().delete("/v1/models").status_code == 405

    def test_an_unknown_route(mock_api):
        assert mock_api.client().get("/v1/nothing-here").status_code == 404

    def test_a_missing_record_is_not_unexpected(mock_api):
        assert mock_api.client().get("/v1/tickets/tk_nobody").status_code == 404

    def test_a_planted_fault_is_not_unexpected(mock_api):
        mock_api.fault(method="GET", path="/v1/models", status=503)
        assert mock_api.client().get("/v1/models").status_code == 503

    @pytest.mark.mock_api(strict_requests=False)
    def test_turned_off(mock_api):
        assert mock_api.client().delete("/v1/models").status_code == 405
"""


@pytest.mark.parametrize("how", ["option", "ini", "marker"])
def test_strict_requests_fails_a_test_on_a_405(pytester: pytest.Pytester, control: str,
                                               how: str) -> None:
    source = STRICT_TESTS
    args: list[str] = []
    if how == "option":
        args = ["--mock-api-strict-requests"]
    elif how == "ini":
        pytester.makeini("[pytest]\nmock_api_strict_requests = true\n")
    else:
        source = "\n".join(line.replace("    def test_a_", "    @pytest.mark.mock_api("
                                        "strict_requests=True)\n    def test_a_").replace(
            "    def test_an_", "    @pytest.mark.mock_api(strict_requests=True)\n"
                               "    def test_an_") for line in source.splitlines())
    result = run(pytester, textwrap.dedent(source), *args)
    result.assert_outcomes(passed=5, errors=2)
    text = result.stdout.str()
    assert "#1 DELETE /v1/models -> 405" in text
    assert "#1 GET /v1/nothing-here -> 404 (no operation)" in text
    assert "tk_nobody" not in text.split("short test summary")[0].split("ERROR at teardown")[-1]


def test_strict_requests_is_off_by_default(pytester: pytest.Pytester) -> None:
    result = run(pytester, textwrap.dedent(STRICT_TESTS))
    result.assert_outcomes(passed=5)
