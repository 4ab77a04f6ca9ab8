"""The pytest plugin with `--mock-api-state`: the mock_api fixture over a state in Redis
(a shared session per test, as in memory; a fresh namespace per session, deleted at its
end)."""

from __future__ import annotations

# httpcore is imported here, before the in-process run below, which unloads the modules it
# imports first: httpx's later requests would then raise another httpcore's ConnectError than
# the one httpx maps, and the serve helpers of later tests would not catch it.
import httpcore  # noqa: F401
import pytest
import redis
from redis_server import RedisServer

from mockserver.engine.handlers import load_handlers

pytest_plugins = ["pytester"]
load_handlers()  # as tests/testing/test_pytest_plugin.py: one copy of the handlers for inner runs


def test_mock_api_over_shared_state(pytester: pytest.Pytester,
                                    redis_server: RedisServer) -> None:
    client = redis.Redis.from_url(redis_server.url)
    before = set(client.keys("mock:{pytest-*"))
    pytester.makepyfile(test_inner="""
        def test_write(mock_api):
            api = mock_api.client()
            made = api.post("/v1/kb/nodes", params={"workspace_id": mock_api.workspaces.primary},
                            json={"title": "t", "body": "x"})
            assert made.status_code == 201
            assert mock_api.get("kb_nodes", made.json()["data"]["id"]) is not None
            assert [e.path for e in mock_api.requests()] == ["/v1/kb/nodes"]
            mock_api.clock.advance(60)
            assert mock_api.clock.now() == "2026-11-01T12:01:00.000Z"

        def test_back_to_the_fixtures(mock_api):
            assert mock_api.requests() == []
            assert mock_api.clock.now() == "2026-11-01T12:00:00.000Z"
            assert mock_api.state.replicated
            assert mock_api.state.name.endswith("-test_back_to_the")  # its own session (16 characters)
    """)
    pytester.makepyfile(test_forked="""
        import pytest

        @pytest.fixture(scope="module")
        def mock_api_origin(mock_api_snapshot):
            def set_up(api):
                api.client().post("/v1/tickets/xd_aisha_khan_parking/resolve")
                api.clock.advance(3600)
            return mock_api_snapshot(set_up)

        @pytest.mark.parametrize("run", [1, 2])
        def test_fork(mock_api, run):
            api = mock_api.client()
            ticket = api.get("/v1/tickets/xd_aisha_khan_parking").json()["data"]
            assert ticket["status"] == "resolved"
            assert mock_api.clock.now() == "2026-11-01T13:00:00.000Z"
            api.post("/v1/tickets/xd_aisha_khan_parking/reopen")  # not seen by the next run
    """)
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider",
                                          "--mock-api-state", redis_server.url)
    result.assert_outcomes(passed=4)
    assert set(client.keys("mock:{pytest-*")) == before  # the session's namespace is gone
    client.close()
