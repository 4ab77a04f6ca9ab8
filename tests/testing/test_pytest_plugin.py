"""The pytest plugin, exercised the way users run it: inner test files under pytester."""

from __future__ import annotations

import re
import textwrap
import threading
from collections.abc import Iterator
from typing import Any

import h11  # noqa: F401
import httpcore  # noqa: F401
import httpx
import pytest
import uvicorn

from mockserver.engine.handlers import load_handlers
from mockserver.testing.plugin import MockServer
from mockserver.testing.transport import DirectTransport

pytest_plugins = ["pytester"]

# Inner runs are in-process; pytester drops modules first imported during a run. Re-imported
# later, handler modules would register twice and httpx would map exceptions of a stale
# httpcore. Importing them here keeps one copy loaded for the whole session.
load_handlers()


def run(pytester: pytest.Pytester, source: str, *args: str) -> pytest.RunResult:
    pytester.makepyfile(test_inner=source)
    return pytester.runpytest_inprocess("-p", "no:cacheprovider", "-rs", *args)


# The inner run's tests reach the mock over its control API, as xdist workers reach the
# server they share: the shared server, registered in the process that runs the tests.
OVER_HTTP = """
from mockserver.testing.shared import PLUGIN_NAME, SharedServer

def pytest_configure(config):
    config.pluginmanager.register(SharedServer(config), PLUGIN_NAME)
"""


@pytest.fixture(params=["in_process", "http"])
def control(request: pytest.FixtureRequest, pytester: pytest.Pytester) -> str:
    """Runs a test once per control implementation: the mock in the test's process, and the
    mock over its control API (control.HttpControl)."""
    if request.param == "http":
        add_conftest(pytester, OVER_HTTP)
    return str(request.param)


def add_conftest(pytester: pytest.Pytester, source: str) -> None:
    """Lines for the inner run's conftest, after those already there (the control's)."""
    conftest = pytester.path / "conftest.py"
    before = conftest.read_text() if conftest.exists() else ""
    conftest.write_text(before + textwrap.dedent(source))


def test_reset_between_tests_and_identities(pytester: pytest.Pytester, control: str) -> None:
    result = run(pytester, """
        import pytest

        def test_first(mock_api):
            assert mock_api.tokens.write == "mock-write-token"
            assert mock_api.tokens.read == "mock-read-token"
            assert mock_api.tokens.other == "mock-other-token"
            assert mock_api.workspaces.primary == "ws_harborview"
            assert mock_api.workspaces.secondary == "ws_alpine"
            assert mock_api.workspaces.other == "ws_desert"
            client = mock_api.client()
            done = client.post("/v1/tickets/xd_aisha_khan_parking/resolve")
            assert done.status_code == 200, done.text
            mock_api.clock.advance(120)
            mock_api.set_rate_limit(1)
            mock_api.fault(method="GET", path="/v1/models", status=503, count=None)

        def test_second_sees_fixtures_only(mock_api):
            assert not mock_api.requests()
            assert mock_api.clock.now() == "2026-11-01T12:00:00.000Z"
            assert mock_api.clock.is_frozen()
            client = mock_api.client()
            got = client.get("/v1/tickets/xd_aisha_khan_parking")
            assert got.json()["data"]["status"] == "new"
            assert client.get("/v1/models").status_code == 200  # no fault, no limit of 1

        def test_reset_within_a_test(mock_api):
            client = mock_api.client()
            client.post("/v1/tickets/xd_aisha_khan_parking/resolve")
            mock_api.clock.set("2027-01-01T00:00:00Z")
            mock_api.reset()
            assert mock_api.requests() == []
            assert mock_api.clock.now() == "2026-11-01T12:00:00.000Z"
            assert client.get("/v1/tickets/xd_aisha_khan_parking").json()["data"]["status"] == "new"

        def test_read_token_cannot_write(mock_api):
            client = mock_api.client("read")
            response = client.post("/v1/tickets/xd_aisha_khan_parking/resolve")
            assert response.status_code == 403
    """)
    result.assert_outcomes(passed=4)


def test_add_and_get(pytester: pytest.Pytester, control: str) -> None:
    """mock_api.add and mock_api.get, in the test's process and over the control API alike:
    the same record, the same refusals, and the next test sees the fixtures only."""
    result = run(pytester, """
        import pytest

        ADDED = []

        def test_first(mock_api):
            with pytest.raises(ValueError, match="mock_api.add\\('contacts'\\): .*'name'"):
                mock_api.add("contacts", {"name": "not a contact field"})
            with pytest.raises(pytest.UsageError, match="no table 'nope'; tables: .*contacts"):
                mock_api.add("nope")
            contact = mock_api.add("contacts", {"first_name": "Zed"}, last_name="Added")
            assert contact["workspace_id"] == "ws_harborview" and contact["id"].startswith("ph")
            with pytest.raises(ValueError, match="'id'"):
                mock_api.add("contacts", id=contact["id"])
            client = mock_api.client()
            got = client.get(f"/v1/contacts/{contact['id']}")
            assert got.status_code == 200, got.text
            assert got.json()["data"]["first_name"] == "Zed"
            assert mock_api.get("contacts", contact["id"]) == contact
            assert mock_api.get("contacts", "ph_nobody") is None
            ADDED.append(contact["id"])

        def test_second_sees_fixtures_only(mock_api):
            assert mock_api.get("contacts", ADDED[0]) is None
    """)
    result.assert_outcomes(passed=2)


def test_journal_redacts_the_token(pytester: pytest.Pytester, control: str) -> None:
    result = run(pytester, """
        def test_journal(mock_api):
            client = mock_api.client()
            client.post("/v1/tickets/xd_aisha_khan_parking/notes",
                        json={"body": "called the guest"})
            client.get("/v1/tickets", params={"workspace_id": mock_api.workspaces.primary,
                                              "limit": 1})
            [post] = mock_api.requests(method="POST")
            assert post.path == "/v1/tickets/xd_aisha_khan_parking/notes"
            assert post.json == {"body": "called the guest"}
            assert post.status == 201
            assert "mock-write-token" not in post.headers["authorization"]
            assert post.headers["authorization"].startswith("Bearer mock")
            [get] = mock_api.requests(path="/v1/tickets", method="GET")
            assert get.query == {"workspace_id": "ws_harborview", "limit": "1"}
            assert get.status == 200
            assert mock_api.last_request == get
    """)
    result.assert_outcomes(passed=1)


def test_clock_and_rate_limit(pytester: pytest.Pytester, control: str) -> None:
    result = run(pytester, """
        import pytest

        @pytest.mark.mock_api(rate_limit=2)
        def test_limited(mock_api):
            client = mock_api.client()
            params = {"workspace_id": mock_api.workspaces.primary}
            assert client.get("/v1/tickets", params=params).status_code == 200
            assert client.get("/v1/tickets", params=params).status_code == 200
            limited = client.get("/v1/tickets", params=params)
            assert limited.status_code == 429
            assert int(limited.headers["Retry-After"]) >= 1
            mock_api.clock.advance(60)
            assert client.get("/v1/tickets", params=params).status_code == 200

        def test_default_limit_is_back(mock_api):
            client = mock_api.client()
            params = {"workspace_id": mock_api.workspaces.secondary}
            assert all(client.get("/v1/tickets", params=params).status_code == 200
                       for _ in range(5))

        def test_clock_set(mock_api):
            mock_api.clock.set("2027-01-01T00:00:00Z")
            assert mock_api.clock.now() == "2027-01-01T00:00:00.000Z"
    """)
    result.assert_outcomes(passed=3)


def test_faults(pytester: pytest.Pytester, control: str) -> None:
    result = run(pytester, """
        import time
        import httpx
        import pytest

        def test_status_fault_hits_count_requests(mock_api):
            client = mock_api.client()
            mock_api.fault(method="GET", path="/v1", status=503, count=2)
            assert client.get("/v1").status_code == 503
            assert client.get("/v1").status_code == 503
            assert client.get("/v1").status_code == 200
            assert [r.fault is not None for r in mock_api.requests()] == [True, True, False]

        def test_delay(mock_api):
            client = mock_api.client()
            mock_api.fault(path="/v1", delay=0.2)
            started = time.perf_counter()
            assert client.get("/v1").status_code == 200
            assert time.perf_counter() - started >= 0.2

        def test_drop(mock_api):
            client = mock_api.client()
            mock_api.fault(path="/v1/*", drop=True)
            with pytest.raises(httpx.RemoteProtocolError):
                client.get("/v1/models")
            assert client.get("/v1/models").status_code == 200

        def test_faults_do_not_leak(mock_api):
            assert mock_api.client().get("/v1").status_code == 200
    """)
    result.assert_outcomes(passed=4)
    assert "Traceback" not in result.stdout.str()


def test_marker_ini_and_config_fixture(pytester: pytest.Pytester) -> None:
    import yaml

    from mockserver.data.fixtures import default_fixtures_dir

    extra = pytester.mkdir("extra")
    tickets = yaml.safe_load((default_fixtures_dir() / "tickets.yaml").read_text())
    first = {**tickets[0], "subject": "Overlaid subject"}
    (extra / "tickets.yaml").write_text(yaml.safe_dump([first]))
    pytester.makeini("""
        [pytest]
        mock_api_seed = 7
        mock_api_clock = 2026-05-05T05:05:05Z
    """)
    pytester.makeconftest("""
        import pytest

        @pytest.fixture
        def mock_api_config(mock_api_config, request):
            if "override" in request.node.name:
                return mock_api_config.replace(rate_limit=1)
            return mock_api_config
    """)
    result = run(pytester, """
        import pytest

        def test_ini(mock_api):
            assert mock_api.config.seed == 7
            assert mock_api.clock.now() == "2026-05-05T05:05:05.000Z"

        @pytest.mark.mock_api(fixtures=["default", "extra"], seed=3)
        def test_marker_fixtures(mock_api):
            assert mock_api.config.seed == 3
            response = mock_api.client().get("/v1/tickets/" + FIRST)
            assert response.json()["data"]["subject"] == "Overlaid subject"

        def test_override_fixture(mock_api):
            client = mock_api.client()
            assert client.get("/v1").status_code == 200
            assert client.get("/v1").status_code == 429

        def test_back_to_default_fixtures(mock_api):
            assert mock_api.get("tickets", FIRST)["subject"] != "Overlaid subject"
    """.replace("FIRST", repr(first["id"])), "--mock-api-rate-limit", "50")
    result.assert_outcomes(passed=4)


def test_in_process_transports(pytester: pytest.Pytester) -> None:
    result = run(pytester, """
        import asyncio
        import httpx

        def test_sync(mock_api):
            client = mock_api.client(in_process=True)
            assert client.get("/v1/models").status_code == 200
            with httpx.Client(base_url="http://api.test", transport=mock_api.transport(),
                              headers=mock_api.headers("read")) as other:
                assert other.get("/v1/workspaces").status_code == 200
            assert [r.path for r in mock_api.requests()] == ["/v1/models", "/v1/workspaces"]

        def test_async(mock_api):
            async def main():
                async with mock_api.async_client(in_process=True) as client:
                    responses = await asyncio.gather(*(client.get("/v1") for _ in range(3)))
                return [r.status_code for r in responses]
            assert asyncio.run(main()) == [200, 200, 200]
            assert len(mock_api.requests(path="/v1")) == 3

        def test_drop_in_process(mock_api):
            mock_api.fault(path="/v1", drop=True)
            import pytest
            with pytest.raises(httpx.RemoteProtocolError):
                mock_api.client(in_process=True).get("/v1")
    """)
    result.assert_outcomes(passed=3)


def test_self_check_violation_is_raised_in_the_test(pytester: pytest.Pytester) -> None:
    result = run(pytester, """
        import pytest
        from mockserver.engine.errors import ResponseContractViolation

        def test_broken_handler(mock_api, monkeypatch):
            monkeypatch.setitem(mock_api.mock.handlers, "getApiIndex",
                                lambda ctx: {"surprise": True})
            with pytest.raises(ResponseContractViolation, match="getApiIndex"):
                mock_api.client().get("/v1")

        def test_violation_from_a_foreign_client_fails_at_teardown(mock_api, monkeypatch):
            import httpx
            monkeypatch.setitem(mock_api.mock.handlers, "getApiIndex",
                                lambda ctx: {"surprise": True})
            assert httpx.get(mock_api.base_url + "/v1",
                             headers=mock_api.headers()).status_code == 500
    """)
    result.assert_outcomes(passed=2, errors=1)
    result.stdout.fnmatch_lines(["*ResponseContractViolation*"])


@pytest.fixture
def second_server() -> Iterator[str]:
    """A separate mock on its own port, standing in for "a real server"."""
    import socket

    from mockserver.engine.app import Config
    from mockserver.standalone.server import create_app

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    app = create_app(Config(frozen_clock="2026-11-01T12:00:00.000Z"))
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port,
                                           log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started:
        thread.join(0.005)
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(5)
    sock.close()


def test_real_server_mode(pytester: pytest.Pytester, second_server: str,
                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MOCK_API_TOKEN", "mock-write-token")
    monkeypatch.setenv("MOCK_API_WORKSPACE", "ws_harborview")
    result = run(pytester, f"""
        def test_talks_to_the_real_server(mock_api):
            assert mock_api.base_url == "{second_server}"
            assert not mock_api.is_mock
            response = mock_api.client().get(
                "/v1/tickets", params={{"workspace_id": mock_api.workspaces.primary}})
            assert response.status_code == 200

        def test_mock_only_helper_skips(mock_api):
            mock_api.requests()

        def test_missing_token_skips(mock_api):
            mock_api.client("read")
    """, "--mock-api-base-url", second_server)
    result.assert_outcomes(passed=1, skipped=2)
    result.stdout.fnmatch_lines(["*needs the mock server*real server*"])


def test_real_server_mode_without_a_workspace_stops_naming_the_option(
        pytester: pytest.Pytester, second_server: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MOCK_API_TOKEN", "mock-write-token")
    monkeypatch.delenv("MOCK_API_WORKSPACE", raising=False)
    result = run(pytester, """
        def test_first(mock_api):
            raise AssertionError("never runs: the run stops at the fixture")

        def test_second(mock_api):
            pass
    """, "--mock-api-base-url", second_server)
    assert result.ret == 4
    result.assert_outcomes()  # neither test ran
    result.stdout.fnmatch_lines(["*needs its workspace: give --mock-api-workspace ID "
                                 "(or set MOCK_API_WORKSPACE)*"])


def test_a_marker_that_cannot_apply_warns(pytester: pytest.Pytester, second_server: str,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MOCK_API_TOKEN", "mock-write-token")
    monkeypatch.setenv("MOCK_API_WORKSPACE", "ws_harborview")
    result = run(pytester, """
        import pytest

        @pytest.mark.mock_api(rate_limit=3, seed=7)
        def test_limited(mock_api):
            assert not mock_api.is_mock

        def test_plain(mock_api):
            assert not mock_api.is_mock
    """, "--mock-api-base-url", second_server,
        "-W", "default::mockserver.testing.plugin.MockApiWarning")  # this suite makes them errors
    result.assert_outcomes(passed=2, warnings=2)
    result.stdout.fnmatch_lines([
        "*test_limited*",
        "*MockApiWarning: mock_api: rate_limit=3 cannot apply: this run targets the real "
        "server*",
        "*MockApiWarning: mock_api: seed=7 cannot apply*"])
    assert "test_plain" not in result.stdout.str().split("warnings summary")[1]



def test_the_configuration_follows_the_environment_between_tests(
        pytester: pytest.Pytester, second_server: str) -> None:
    # Options, ini and environment are read once per run, yet a test that changes the
    # environment (a fixture setting MOCK_API_BASE_URL) gets a configuration that says so.
    result = run(pytester, f"""
        import pytest

        @pytest.fixture
        def real(monkeypatch):
            monkeypatch.setenv("MOCK_API_BASE_URL", "{second_server}")
            monkeypatch.setenv("MOCK_API_TOKEN", "mock-write-token")
            monkeypatch.setenv("MOCK_API_WORKSPACE", "ws_harborview")

        def test_mock_first(mock_api):
            assert mock_api.is_mock

        def test_then_the_real_server(real, mock_api):
            assert mock_api.base_url == "{second_server}" and not mock_api.is_mock
            assert mock_api.token() == "mock-write-token"

        def test_mock_again(mock_api):
            assert mock_api.is_mock
    """)
    result.assert_outcomes(passed=3)

IGNORED_PARAMS_TESTS = """
    import pytest

    def test_sends_an_extra(mock_api):
        ws = mock_api.workspaces.primary
        response = mock_api.client().get(f"/v1/tickets?workspace_id={ws}&contact_id=ph_x&_=1")
        assert response.status_code == 200
        assert mock_api.last_request.ignored_params == ("contact_id", "_")

    def test_sends_only_documented(mock_api):
        ws = mock_api.workspaces.primary
        assert mock_api.client().get(f"/v1/tickets?workspace_id={ws}&limit=2").status_code == 200

    @pytest.mark.mock_api(strict_params=True)
    def test_strict_by_marker(mock_api):
        ws = mock_api.workspaces.primary
        response = mock_api.client().get(f"/v1/tickets?workspace_id={ws}&contact_id=ph_x")
        assert response.status_code == 400
        assert response.json() == {"error": "unknown query parameter 'contact_id'"}
"""


def _strict_by_marker(result: pytest.RunResult, control: str) -> int:
    """The marker's strict_params: applied in process; over HTTP the server's own setting, so
    a test asking otherwise stops at its set-up, saying so (not run lax). Its errors."""
    if control == "in_process":
        return 0
    result.stdout.fnmatch_lines(["*ERROR at setup of test_strict_by_marker*",
                                 "*strict_params) differ from the shared server's*"])
    return 1


def test_unknown_parameters_are_ignored_by_default(pytester: pytest.Pytester,
                                                   control: str) -> None:
    result = run(pytester, IGNORED_PARAMS_TESTS)
    errors = _strict_by_marker(result, control)
    result.assert_outcomes(passed=3 - errors, errors=errors)


def test_fail_on_ignored_params_fails_the_test_that_sent_one(pytester: pytest.Pytester,
                                                             control: str) -> None:
    result = run(pytester, IGNORED_PARAMS_TESTS, "--mock-api-fail-on-ignored-params")
    # The test passes its own asserts, then fails at teardown naming the parameter and request.
    errors = _strict_by_marker(result, control)
    result.assert_outcomes(passed=3 - errors, errors=1 + errors)
    out = result.stdout.str()
    assert "ERROR at teardown of test_sends_an_extra" in out
    assert "contact_id, _ in GET /v1/tickets?workspace_id=ws_harborview&contact_id=ph_x&_=1" in out


def test_strict_params_by_ini(pytester: pytest.Pytester, control: str) -> None:
    pytester.makeini("""
        [pytest]
        mock_api_strict_params = true
    """)
    result = run(pytester, """
        def test_refused(mock_api):
            ws = mock_api.workspaces.primary
            response = mock_api.client().get(f"/v1/tickets?workspace_id={ws}&_=1")
            assert response.status_code == 400 and "'_'" in response.json()["error"]
    """)
    result.assert_outcomes(passed=1)
    result = run(pytester, """
        def test_refused(mock_api):
            ws = mock_api.workspaces.primary
            response = mock_api.client().get(f"/v1/tickets?workspace_id={ws}&_=1")
            assert response.status_code == 400
    """, "--mock-api-strict-params")
    result.assert_outcomes(passed=1)


def test_a_handler_crash_fails_the_test(pytester: pytest.Pytester) -> None:
    result = run(pytester, """
        def test_crash(mock_api):
            def broken(ctx):
                raise KeyError("boom")
            mock_api.mock.handlers["listModels"] = broken
            response = mock_api.client().get("/v1/models")
    """)
    result.assert_outcomes(failed=1)  # at the call that got the 500, with the exception
    assert "KeyError: 'boom'" in result.stdout.str()


def test_each_test_gets_a_fresh_session(pytester: pytest.Pytester) -> None:
    result = run(pytester, """
        SEEN = []

        def test_first(mock_api):
            SEEN.append(mock_api.session)
            assert mock_api.base_url.endswith("/sessions/" + mock_api.session)
            ticket = "xd_aisha_khan_parking"
            assert mock_api.client().post(f"/v1/tickets/{ticket}/resolve").status_code == 200
            assert mock_api.get("tickets", ticket)["status"] == "resolved"
            assert mock_api.mock.state.store.get("tickets", ticket)["status"] == "new"

        def test_second(mock_api):
            assert mock_api.session != SEEN[0]
            assert mock_api.mock.sessions.get(SEEN[0]) is None  # deleted after its test
            assert mock_api.get("tickets", "xd_aisha_khan_parking")["status"] == "new"
            assert [s.name for s in mock_api.mock.sessions.all()] == [mock_api.session]
    """)
    result.assert_outcomes(passed=2)


def test_snapshots_and_forks(pytester: pytest.Pytester, control: str) -> None:
    """`mock_api_snapshot` and `mock_api.snapshot()` on either control: a module's tests fork
    from one set-up (its writes and clock), each test's changes stay its own."""
    result = run(pytester, """
        import pytest

        TICKET = "/v1/tickets/xd_aisha_khan_parking"

        @pytest.fixture(scope="module")
        def mock_api_origin(mock_api_snapshot):
            def set_up(api):
                assert api.client().post(TICKET + "/resolve").status_code == 200
                api.clock.advance(3600)
            return mock_api_snapshot(set_up, name="desk-resolved")

        @pytest.mark.parametrize("run", [1, 2])
        def test_fork(mock_api, run):
            assert mock_api.requests() == []  # the set-up's requests are not this test's
            client = mock_api.client()
            assert client.get(TICKET).json()["data"]["status"] == "resolved"
            assert mock_api.clock.now() == "2026-11-01T13:00:00.000Z"
            assert client.post(TICKET + "/reopen").status_code == 200  # not seen by run 2
            assert mock_api.snapshot() == mock_api.session + "-snap"
    """)
    result.assert_outcomes(passed=2)


def test_settings_reach_each_test_s_session(pytester: pytest.Pytester, control: str) -> None:
    """ini, the `mock_api_config` fixture and the marker set the session of each test (seed,
    clock, rate limit), in process and over the control API; each test's session is its own
    and is deleted after it."""
    pytester.makeini("""
        [pytest]
        mock_api_clock = 2026-05-05T05:05:05Z
    """)
    add_conftest(pytester, """
        import pytest

        @pytest.fixture
        def mock_api_config(mock_api_config, request):
            if "override" in request.node.name:
                return mock_api_config.replace(rate_limit=1)
            return mock_api_config
    """)
    result = run(pytester, f"""
        import httpx
        import pytest

        SEEN = []

        def session_exists(mock_api, name):
            server = mock_api.base_url.split("/sessions/")[0]
            return httpx.get(f"{{server}}/__mock__/sessions/{{name}}").status_code == 200

        def test_ini(mock_api):
            assert (mock_api.app is None) is {control == "http"}  # the control asked for
            assert mock_api.clock.now() == "2026-05-05T05:05:05.000Z"
            assert mock_api.base_url.endswith("/sessions/" + mock_api.session)
            assert session_exists(mock_api, mock_api.session)
            SEEN.append(mock_api.session)

        @pytest.mark.mock_api(clock="2027-02-02T00:00:00Z", rate_limit=2)
        def test_marker(mock_api):
            assert not session_exists(mock_api, SEEN[0])  # deleted after its test
            assert mock_api.session not in SEEN
            assert mock_api.clock.now() == "2027-02-02T00:00:00.000Z"
            client = mock_api.client()
            assert [client.get("/v1").status_code for _ in range(3)] == [200, 200, 429]

        def test_override(mock_api):
            client = mock_api.client()
            assert [client.get("/v1").status_code for _ in range(2)] == [200, 429]
            mock_api.set_rate_limit(enabled=False)
            assert client.get("/v1").status_code == 200

        @pytest.mark.mock_api(clock="real")
        def test_real_clock(mock_api):
            assert not mock_api.clock.is_frozen()
    """)
    result.assert_outcomes(passed=4)


def test_what_needs_the_process_skips_over_http(pytester: pytest.Pytester) -> None:
    """Over the control API, what needs the mock in the test's process skips the test naming
    it and what does work; the rest of the protocol works."""
    pytester.makeconftest(OVER_HTTP)
    result = run(pytester, """
        import pytest

        @pytest.mark.parametrize("what", ["state", "mock", "journal", "transport()",
                                          "async_transport()"])
        def test_needs_the_process(mock_api, what):
            assert mock_api.is_mock and "/sessions/" in mock_api.base_url
            assert mock_api.app is None
            if what.endswith("()"):
                getattr(mock_api, what[:-2])()
            else:
                getattr(mock_api, what)
    """)
    result.assert_outcomes(skipped=5)
    for what in ("state", "mock", "journal", "transport()", "async_transport()"):
        result.stdout.fnmatch_lines([f"*mock_api.{what} needs the mock in this process; with "
                                     "--mock-api-share-server*get() work*"])


def test_the_control_client_takes_its_operations_from_the_document() -> None:
    """Every call of the HTTP control names an operation of spec/control-openapi.yaml; its
    method and path (under the session's prefix when it has one) are the document's."""
    from mockserver.standalone.operations import ControlError, control_spec
    from mockserver.testing.control import ControlClient

    sent: list[tuple[str, str, str | None]] = []
    status = [200]  # the operation's success status: anything else is an error

    def answer(request: httpx.Request) -> httpx.Response:
        sent.append((request.method, request.url.path, request.headers.get("x-mock-control-token")))
        return httpx.Response(status[0], json={})

    client = ControlClient("http://127.0.0.1:9", "secret", transport=httpx.MockTransport(answer))
    for operation, found in control_spec().by_id.items():
        names = {p: "a b/c" for p in re.findall(r"{(\w+)}", found.path)}  # quoted in the URL
        path = found.path.format(**names)
        status[0] = found.success_status
        client.at("t1-x").call(operation, names)
        assert sent[-1] == (found.method, "/sessions/t1-x" + path, "secret"), operation
        client.call(operation, names)
        assert sent[-1] == (found.method, path, "secret"), operation
    assert len(sent) == 2 * len(control_spec().by_id) >= 20
    client.close()
    client = ControlClient("http://127.0.0.1:9", transport=httpx.MockTransport(
        lambda request: httpx.Response(404, json={"error": "no session 'gone'",
                                                  "reason": "no_session"})))
    with pytest.raises(ControlError, match=r"getClock \(GET /sessions/gone/__mock__/clock\): "
                                           r"404 .*no session 'gone'") as raised:
        client.at("gone").call("getClock")
    assert (raised.value.status, raised.value.reason) == (404, "no_session")
    assert isinstance(raised.value, RuntimeError)
    client.close()


def test_get_over_http_is_none_only_for_a_missing_record() -> None:
    """HttpControl.get answers None for the record the server says it lacks (its reason,
    `no_record`), and raises for every other 404 (a session gone, a route an older server
    lacks, an unknown table), whatever the message says."""
    from mockserver.engine.records import no_record
    from mockserver.testing.control import ControlClient, HttpControl

    error: list[dict[str, str]] = [{}]
    client = ControlClient("http://127.0.0.1:9", transport=httpx.MockTransport(
        lambda request: httpx.Response(404, json=error[0])))
    control = HttpControl(client, "t1")
    error[0] = {"error": "anything", "reason": "no_record"}  # what the server answers
    assert control.get("contacts", "ph_x") is None
    error[0] = {"error": no_record("contacts", "ph_x").message, "reason": "no_session"}
    with pytest.raises(RuntimeError, match="has no record"):
        control.get("contacts", "ph_x")
    error[0] = {"error": no_record("contacts", "a/b").message}  # no reason: an older server
    with pytest.raises(RuntimeError, match="has no record"):
        control.get("contacts", "a/b")
    error[0] = {"error": "no table 'nope'", "reason": "unknown_table"}
    with pytest.raises(pytest.UsageError, match="no table"):
        control.get("nope", "x")
    client.close()


def test_xdist_workers_share_one_server(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_inner="""
        import pytest

        @pytest.mark.parametrize("i", range(6))
        def test_writes(mock_api, i, tmp_path_factory):
            client = mock_api.client()
            ticket = "xd_aisha_khan_parking"
            assert client.get(f"/v1/tickets/{ticket}").json()["data"]["status"] == "new"
            assert client.post(f"/v1/tickets/{ticket}/resolve").status_code == 200
            mock_api.fault(method="GET", path="/v1/models", status=503)
            assert client.get("/v1/models").status_code == 503
            assert [r.status for r in mock_api.requests(path="/v1/models")] == [503]
            mock_api.clock.advance(60)
            assert mock_api.clock.now() == "2026-11-01T12:01:00.000Z"
            added = mock_api.add("tickets", subject=f"worker test {i}")
            assert mock_api.get("tickets", added["id"])["subject"] == f"worker test {i}"
            out = tmp_path_factory.getbasetemp().parent / f"url-{i}"
            out.write_text(mock_api.base_url)
    """)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-n", "2",
                                           "--mock-api-share-server")
    result.assert_outcomes(passed=6)
    urls = [p.read_text() for p in pytester.path.parent.glob("**/url-*")]
    assert len(urls) == 6
    servers = {u.split("/sessions/")[0] for u in urls}
    assert len(servers) == 1, servers  # one server for both workers
    assert len({u.split("/sessions/")[1] for u in urls}) == 6  # a session per test
    assert {u.split("/sessions/")[1].split("-")[0] for u in urls} == {"gw0", "gw1"}


def test_clients_share_the_session_transport_and_one_ssl_context(
        pytester: pytest.Pytester) -> None:
    """mock_api.client() costs no TLS set-up, no socket and no new transport per test: the
    clients of successive tests share one in-process transport (closing a client, at teardown,
    leaves it open) that opens no connection to the session's server, and one SSL context; a
    client asking for its own transport settings gets its own. The in-process transport of
    `transport()` is one per mock for the session too."""
    result = run(pytester, """
        import httpx
        from mockserver.testing import server as pytest_plugin

        seen = []

        def test_first(mock_api):
            client = mock_api.client()
            assert client.get("/v1/contacts", params={"workspace_id": "ws_harborview"}
                              ).status_code == 200
            seen.append(client._transport)
            seen.append(pytest_plugin.ssl_context())
            assert client._transport._inner._fallback._pool.connections == []  # no socket
            with httpx.Client(base_url="http://api.test", transport=mock_api.transport(),
                              headers=mock_api.headers()) as in_process:
                assert in_process.get("/v1/models").status_code == 200
            seen.append(mock_api.transport())

        def test_second(mock_api):
            client = mock_api.client("read")
            assert client.get("/v1/contacts", params={"workspace_id": "ws_harborview"}
                              ).status_code == 200
            assert client._transport is seen[0]
            assert seen[0]._inner._fallback._pool.connections == []
            assert mock_api.async_client()._transport._fallback._pool._ssl_context is seen[1]
            assert mock_api.transport() is seen[2]  # closed by a client: still usable
            assert mock_api.client(in_process=True).get("/v1/models").status_code == 200
            own = mock_api.client(http2=False)
            assert own._transport is not seen[0]
            assert own._transport._pool._ssl_context is seen[1]
    """)
    result.assert_outcomes(passed=2)


def test_client_answers_as_the_session_server_does_over_its_socket(
        pytester: pytest.Pytester) -> None:
    """mock_api.client() calls the app in-process; what the code under test gets, and what the
    mock records, is what the same requests get over a socket from the session's uvicorn
    server: statuses, bodies, headers (the `date` apart), journal entries (writes, refusals,
    an encoded path, repeated parameters, a body past the size limit, another method)."""
    result = run(pytester, """
        import asyncio

        import httpx

        WS = "ws_harborview"
        REQUESTS = [
            ("GET", "/v1/contacts", {"params": {"workspace_id": WS, "limit": 2}}),
            ("GET", "/v1/contacts", {"params": [("workspace_id", WS), ("limit", "1"),
                                                 ("limit", "3"), ("nope", "x y")]}),
            ("GET", "/v1/contacts/no%20such%2Fcontact", {"params": {"workspace_id": WS}}),
            ("POST", "/v1/tickets/xd_aisha_khan_parking/notes", {"json": {"body": "hi"}}),
            ("GET", "/v1/tickets/xd_aisha_khan_parking/notes", {}),
            ("POST", "/v1/tickets/xd_aisha_khan_parking/notes", {"content": b"{not json",
                                                                 "headers": {"content-type":
                                                                             "application/json"}}),
            ("POST", "/v1/tickets/xd_aisha_khan_parking/notes", {"content": b"x" * (3 << 20)}),
            ("PUT", "/v1/contacts", {}),
            ("GET", "/v1/models", {"headers": {"authorization": "Bearer wrong"}}),
            ("GET", "/nowhere", {}),
        ]

        def exchange(client, journal):
            seen = []
            for method, path, kwargs in REQUESTS:
                response = client.request(method, path, **kwargs)
                seen.append((response.status_code, response.content, headers_of(response),
                             response.http_version))
            return seen, entries(journal)

        def headers_of(response):  # the date's value apart (it moves)
            return [(k, "<date>" if k == "date" else v)
                    for k, v in response.headers.multi_items()]

        def entries(journal):
            return [(e.method, e.path, e.query_string, [tuple(h) for h in e.raw_headers],
                     e.body, e.status, e.response_body, e.operation_id, e.ignored_params,
                     e.truncated, e.body_size, e.response_size) for e in journal]

        def test_same(mock_api):
            with httpx.Client(base_url=mock_api.base_url, headers=mock_api.headers()) as sock:
                over_socket = exchange(sock, mock_api.journal)
            assert len(over_socket[1]) == len(REQUESTS)
            mock_api.reset()
            client = mock_api.client()
            assert client._transport._inner._fallback._pool.connections == []
            in_process = exchange(client, mock_api.journal)
            assert client._transport._inner._fallback._pool.connections == []  # no socket
            for n, (a, b) in enumerate(zip(over_socket[0], in_process[0])):
                assert a == b, (REQUESTS[n][:2], a, b)
            for n, (a, b) in enumerate(zip(over_socket[1], in_process[1])):
                assert a == b, (REQUESTS[n][:2], a, b)
            assert {s for s, *_ in in_process[0]} >= {200, 201, 400, 401, 404, 405, 413}

            async def on_a_loop():  # and mock_api.async_client() on the test's loop
                async with mock_api.async_client() as client:
                    seen = []
                    for method, path, kwargs in REQUESTS:
                        response = await client.request(method, path, **kwargs)
                        seen.append((response.status_code, response.content,
                                     headers_of(response), response.http_version))
                    assert client._transport._fallback._pool.connections == []
                    return seen

            mock_api.reset()
            assert asyncio.run(on_a_loop()) == over_socket[0]
            assert entries(mock_api.journal) == over_socket[1]
    """)
    result.assert_outcomes(passed=1)


def test_client_keeps_the_socket_s_timeouts_drops_and_fallbacks(
        pytester: pytest.Pytester) -> None:
    """What a socket would do, mock_api.client() does in-process: a response slower than the
    client's read timeout raises httpx.ReadTimeout and the request runs on to its end (it is
    journaled); an injected drop raises RemoteProtocolError; a request to another origin, or
    from a thread whose event loop is running (a sync client in an async test), goes over a
    socket to the session's server."""
    result = run(pytester, """
        import asyncio
        import time

        import httpx
        import pytest

        def test_timeout(mock_api):
            client = mock_api.client()
            mock_api.fault(path="/v1/models", delay=0.3)
            with pytest.raises(httpx.ReadTimeout):
                client.get("/v1/models", timeout=0.05)
            assert mock_api.requests(path="/v1/models") == []  # still running
            time.sleep(0.35)
            assert client.get("/v1").status_code == 200  # the loop runs again: it ends
            assert [e.status for e in mock_api.requests(path="/v1/models")] == [200]

        def test_timeout_drained_at_teardown(mock_api):
            mock_api.fault(path="/v1/models", delay=0.2)
            with pytest.raises(httpx.ReadTimeout):
                mock_api.client().get("/v1/models", timeout=0.05)
            mock_api._dispatch.drain()  # what teardown does
            assert [e.status for e in mock_api.requests(path="/v1/models")] == [200]

        def test_drop(mock_api):
            mock_api.fault(path="/v1", drop=True)
            with pytest.raises(httpx.RemoteProtocolError):
                mock_api.client().get("/v1")

        def connected(client, host):
            pool = client._transport._inner._fallback._pool
            return [c for c in pool.connections if c._origin.host == host.encode()]

        def test_other_origin(mock_api):
            client = mock_api.client()
            url = mock_api.base_url.replace("127.0.0.1", "localhost") + "/v1/models"
            assert client.get(url).status_code == 200
            assert len(connected(client, "localhost")) == 1
            assert len(mock_api.requests(path="/v1/models")) == 1

        def test_inside_a_running_loop(mock_api):
            client = mock_api.client()

            async def main():
                return client.get("/v1/models").status_code

            assert connected(client, "127.0.0.1") == []
            assert asyncio.run(main()) == 200
            assert len(connected(client, "127.0.0.1")) == 1
            assert len(mock_api.requests(path="/v1/models")) == 1

        def test_async_client(mock_api):
            async def main():
                async with mock_api.async_client() as client:
                    mock_api.fault(path="/v1/models", drop=True)
                    with pytest.raises(httpx.RemoteProtocolError):
                        await client.get("/v1/models")
                    mock_api.fault(path="/v1/models", delay=0.3)
                    with pytest.raises(httpx.ReadTimeout):
                        await client.get("/v1/models", timeout=0.05)
                    assert len(mock_api.requests(path="/v1/models")) == 1  # the drop
                    await asyncio.sleep(0.35)  # while the loop runs, the request runs on
                    assert mock_api.requests(path="/v1/models")[-1].status == 200
                    url = mock_api.base_url.replace("127.0.0.1", "localhost") + "/v1"
                    assert (await client.get(url)).status_code == 200  # over a socket
                    assert len(client._transport._fallback._pool.connections) == 1

            asyncio.run(main())
    """)
    result.assert_outcomes(passed=6)


async def _chunked(scope: Any, receive: Any, send: Any) -> None:
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-type", b"text/plain")]})
    await send({"type": "http.response.body", "body": b"one ", "more_body": True})
    await send({"type": "http.response.body", "body": b"two"})


async def _sized(scope: Any, receive: Any, send: Any) -> None:
    status = 204 if scope["path"] == "/empty" else 200
    body = b"" if status == 204 else b'{"echo": "%s"}' % scope["path"].encode()
    headers = [(b"content-type", b"application/json")]
    if status != 204:
        headers.append((b"content-length", str(len(body)).encode()))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def _fails_first(scope: Any, receive: Any, send: Any) -> None:
    raise RuntimeError("before answering")


async def _answers_nothing(scope: Any, receive: Any, send: Any) -> None:
    return None


async def _fails_after_answering(scope: Any, receive: Any, send: Any) -> None:
    await _sized(scope, receive, send)
    raise RuntimeError("after answering")


async def _fails_half_way(scope: Any, receive: Any, send: Any) -> None:
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-length", b"10")]})
    await send({"type": "http.response.body", "body": b"12345", "more_body": True})
    raise RuntimeError("half-way")


@pytest.mark.parametrize("app", [_chunked, _sized, _fails_first, _answers_nothing,
                                 _fails_half_way, _fails_after_answering],
                         ids=lambda app: app.__name__)
@pytest.mark.parametrize("method", ["GET", "HEAD", "POST"])
def test_direct_transport_sends_what_uvicorn_sends(raw_server: MockServer, app: Any,
                                                  method: str) -> None:
    """The session server's uvicorn and DirectTransport, given the same app and request, give
    the client the same answer: status, headers in order (the date's value apart), body (none
    to HEAD, none for 204), chunked framing when the app gives no length, uvicorn's own 500,
    a closed connection (RemoteProtocolError) when the app fails half-way."""
    raw_server.dispatch.target = app
    outcomes = []
    # The app itself, not the plugin's dispatch in front of it: what it raises reaches the
    # transport as it reaches uvicorn.
    direct = DirectTransport(app, httpx.URL(raw_server.base_url), httpx.HTTPTransport())
    for transport in (httpx.HTTPTransport, lambda: direct):
        for path in ("/a%20b", "/empty"):  # a connection each (a failure may close one)
            with httpx.Client(base_url=raw_server.base_url, transport=transport()) as client:
                try:
                    response = client.request(method, path, content=b"body")
                except (httpx.RemoteProtocolError, httpx.ReadError):
                    # The server closed the connection (a reset, when it had unread bytes).
                    outcomes.append((path, "connection lost"))
                    continue
                outcomes.append((path, response.status_code, response.content, [
                    (k, "<date>" if k == "date" else v)
                    for k, v in response.headers.multi_items()]))
    raw_server.dispatch.errors.clear()
    assert outcomes[:2] == outcomes[2:]


@pytest.fixture(scope="module")
def raw_server() -> Iterator[MockServer]:
    """The plugin's session server, serving whatever app a test sets."""
    server = MockServer()
    yield server
    server.stop()


def test_progression_transitions_and_scripts(pytester: pytest.Pytester, control: str) -> None:
    """mock_api.progression, transition, script_agent, script_workflow and scripts, in the
    test's process and over the control API alike: the same answers, the same refusals
    (`Refused` with its status), the ini's mode in every test, the marker's in one, and the
    next test starts from the defaults."""
    pytester.makeini("""
        [pytest]
        mock_api_progression = manual
    """)
    result = run(pytester, """
        import pytest
        from mockserver.engine.progression import Refused

        AGENT, TRIGGER = "ag_harbor_concierge", "tr_harbor_concierge_precheckin"

        def dispatch(client):
            run_id = client.post(f"/v1/agents/{AGENT}/run",
                                 json={"trigger_id": TRIGGER}).json()["data"]["run_id"]
            runs = client.get(f"/v1/agents/{AGENT}/runs").json()["data"]
            return next(r for r in runs if r["run_id"] == run_id)

        def test_manual_by_ini_and_a_transition(mock_api):
            assert mock_api.progression.get()["agent_runs"]["mode"] == "manual"
            client = mock_api.client()
            run = dispatch(client)
            mock_api.clock.advance(3600)
            assert dispatch(client)["status"] == "accepted"
            moved = mock_api.transition("agent_runs", run["id"], "failed", error="boom")
            assert moved["status"] == "failed" and moved["error"] == "boom"
            with pytest.raises(Refused) as refused:
                mock_api.transition("agent_runs", run["id"], "completed")
            assert refused.value.status == 409 and "is failed" in str(refused.value)
            with pytest.raises(Refused) as refused:
                mock_api.transition("agent_runs", "ar_nope", "failed")
            assert refused.value.status == 404
            with pytest.raises(Refused) as refused:
                mock_api.progression.set("agent_runs", mode="later")
            assert refused.value.status == 400 and "mode" in str(refused.value)

        def test_time_and_scripts(mock_api):
            assert mock_api.progression.set("agent_runs", mode="time", running_after=1,
                                            done_after=6)["done_after"] == 6
            mock_api.script_agent(AGENT, [{"status": "completed", "response": "Hi."}])
            client = mock_api.client()
            first, second = dispatch(client), dispatch(client)
            mock_api.clock.advance(7)  # ids and stamps are 1 ms apart
            shown = [client.get(f"/v1/agents/{AGENT}/runs/{r['id']}").json()["data"]
                     for r in (first, second)]
            assert [s["status"] for s in shown] == ["completed", "completed"]
            assert shown[0]["response"] == "Hi." and shown[1]["response"] != "Hi."
            scripts = mock_api.scripts()
            assert [m["record"] for m in scripts["misses"]] == [second["id"]]
            with pytest.raises(Refused) as refused:
                mock_api.script_workflow("wf_door_code_v2", [{"status": "DONE"}])
            assert refused.value.status == 400 and "outcomes/0" in str(refused.value)

        @pytest.mark.mock_api(progression="immediate")
        def test_the_marker(mock_api):
            assert dispatch(mock_api.client())["status"] == "completed"
            assert mock_api.scripts()["agents"] == {}
    """)
    result.assert_outcomes(passed=3)


def test_clients_wait_past_a_tool_runs_limit_unless_told_otherwise(
        pytester: pytest.Pytester) -> None:
    """The fixture's clients read for longer than the mock's longest wait of its own (a
    custom tool's run, 10 s): a slow run is answered by the mock, not cut off by httpx's 5 s
    default (W11); a timeout the test gives is kept."""
    result = run(pytester, """
        import asyncio

        from mockserver.engine.toolexec import LIMITS

        def test_timeouts(mock_api):
            assert mock_api.client().timeout.read > LIMITS.timeout_s
            assert mock_api.client(timeout=0.5).timeout.read == 0.5

            async def both():
                async with mock_api.async_client() as client:
                    assert client.timeout.read > LIMITS.timeout_s
            asyncio.run(both())
    """)
    result.assert_outcomes(passed=1)
