"""The pytest plugin attached to a mock that is already running (`--mock-api-server URL`,
`--mock-api-control-token`; issue 43 item 8): a downstream suite using every helper runs
against a `serve` process this test starts, each test in its own session there, alone and
under xdist; the ini and environment spellings; a server that does not answer is a usage
error naming the option."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.standalone.test_serve_cli import _free_port, _wait

TOKEN = "attach-secret"
ROOT = Path(__file__).resolve().parents[2]

# Every helper of the fixture over the control API: journal, last_request, faults, clock,
# rate limits, add/get, reset, sessions and snapshots (mock_api_origin), is_mock.
DOWNSTREAM = '''
import httpx
import pytest

TICKET = "xd_lucas_meyer_hot_tub"


def test_writes_stay_in_the_test_session(mock_api):
    assert mock_api.is_mock and "/sessions/" in mock_api.base_url
    client = mock_api.client()
    assert client.post(f"/v1/tickets/{TICKET}/resolve", json={}).status_code == 200
    assert client.get(f"/v1/tickets/{TICKET}").json()["data"]["status"] == "resolved"
    [sent] = mock_api.requests(method="POST")
    assert sent.path == f"/v1/tickets/{TICKET}/resolve"
    assert mock_api.last_request.path == f"/v1/tickets/{TICKET}"


def test_another_session_sees_the_fixtures(mock_api):
    got = mock_api.client().get(f"/v1/tickets/{TICKET}")
    assert got.json()["data"]["status"] == "pending"


def test_clock_faults_and_rate_limits(mock_api):
    mock_api.clock.set("2027-01-01T00:00:00Z")
    mock_api.clock.advance(60)
    assert mock_api.clock.now() == "2027-01-01T00:01:00.000Z" and mock_api.clock.is_frozen()
    mock_api.fault(method="GET", path="/v1/agents", status=503, count=1)
    client = mock_api.client()
    params = {"workspace_id": mock_api.workspaces.primary}
    assert client.get("/v1/agents", params=params).status_code == 503
    assert client.get("/v1/agents", params=params).status_code == 200
    mock_api.set_rate_limit(1)
    limited = client.get("/v1/agents", params=params)
    assert limited.status_code == 429 and "retry-after" in limited.headers


def test_add_get_and_reset(mock_api):
    added = mock_api.add("tickets", subject="attached")
    assert mock_api.get("tickets", added["id"])["subject"] == "attached"
    mock_api.reset()
    assert mock_api.get("tickets", added["id"]) is None


def test_the_server_wants_its_control_token(mock_api):
    server = mock_api.base_url.split("/sessions/")[0]
    assert httpx.get(server + "/__mock__/sessions").status_code == 403
'''

FORKED = '''
import pytest

TICKET = "xd_lucas_meyer_hot_tub"


@pytest.fixture(scope="module")
def mock_api_origin(mock_api_snapshot):
    def setup(api):
        api.client().post(f"/v1/tickets/{TICKET}/resolve", json={})
        api.clock.advance(3600)
    return mock_api_snapshot(setup)


def test_the_fork_starts_from_the_set_up(mock_api):
    got = mock_api.client().get(f"/v1/tickets/{TICKET}")
    assert got.json()["data"]["status"] == "resolved"
    assert mock_api.clock.now() == "2026-11-01T13:00:00.000Z"
'''


@pytest.fixture(scope="module")
def running_mock() -> Iterator[str]:
    """A standalone mock (`serve`) on a free loopback port, with a control token."""
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    proc = subprocess.Popen(
        [sys.executable, "-m", "mockserver", "serve", "--port", str(port), "--quiet",
         "--clock", "2026-11-01T12:00:00Z", "--control-token", TOKEN, "--session-idle", "0"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait(base)
        yield base
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def _pytest(tmp_path: Path, *args: str, env: dict[str, str] | None = None
            ) -> subprocess.CompletedProcess[str]:
    import os

    # This checkout's mockserver first, whatever the working directory.
    path = os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           *args, str(tmp_path)], capture_output=True, text=True, cwd=tmp_path,
                          timeout=300, env={**os.environ, "PYTHONPATH": path, **(env or {})})


@pytest.mark.parametrize("xdist", [(), ("-n", "2")], ids=["one-process", "xdist"])
def test_a_downstream_suite_runs_against_the_running_mock(
        running_mock: str, tmp_path: Path, xdist: tuple[str, ...]) -> None:
    (tmp_path / "test_downstream.py").write_text(DOWNSTREAM)
    (tmp_path / "test_forked.py").write_text(FORKED)
    done = _pytest(tmp_path, "--mock-api-server", running_mock,
                   "--mock-api-control-token", TOKEN, *xdist)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "6 passed" in done.stdout, done.stdout
    # Each test had a session of its own on that server (and left none behind).
    sessions = httpx.get(f"{running_mock}/__mock__/sessions",
                         headers={"X-Mock-Control-Token": TOKEN}).json()
    assert sessions["sessions"] == 0, sessions


def test_ini_and_environment_spellings(running_mock: str, tmp_path: Path) -> None:
    (tmp_path / "test_downstream.py").write_text(DOWNSTREAM)
    (tmp_path / "pytest.ini").write_text(f"[pytest]\nmock_api_server = {running_mock}\n")
    done = _pytest(tmp_path, "-k", "clock_faults", env={"MOCK_API_CONTROL_TOKEN": TOKEN})
    assert done.returncode == 0 and "1 passed" in done.stdout, done.stdout + done.stderr


def test_a_wrong_token_or_no_server_is_a_usage_error(running_mock: str, tmp_path: Path) -> None:
    (tmp_path / "test_downstream.py").write_text(DOWNSTREAM)
    wrong = _pytest(tmp_path, "--mock-api-server", running_mock, "--mock-api-control-token",
                    "nope", "-k", "clock_faults")
    assert wrong.returncode != 0
    assert "--mock-api-server" in wrong.stdout + wrong.stderr
    assert "--mock-api-control-token" in wrong.stdout + wrong.stderr
    nowhere = _pytest(tmp_path, "--mock-api-server", f"http://127.0.0.1:{_free_port()}",
                      "-k", "clock_faults")
    assert nowhere.returncode != 0 and "does not answer" in nowhere.stdout + nowhere.stderr
