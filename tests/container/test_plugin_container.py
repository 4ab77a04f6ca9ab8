"""The pytest plugin's container mode (--mock-api-container IMAGE): the mock_api fixture of
a downstream suite served by one container, each test in its own session, the helpers over
the control API with the container's token; alone and under xdist."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

DOWNSTREAM = '''
import httpx

def test_writes_stay_in_the_test_session(mock_api):
    assert "127.0.0.1" in mock_api.base_url and "/sessions/" in mock_api.base_url
    client = mock_api.client()
    done = client.post("/v1/tickets/xd_lucas_meyer_hot_tub/resolve", json={})
    assert done.status_code == 200, done.text
    assert client.get("/v1/tickets/xd_lucas_meyer_hot_tub").json()["data"]["status"] == "resolved"
    [sent] = mock_api.requests(method="POST")
    assert sent.path == "/v1/tickets/xd_lucas_meyer_hot_tub/resolve"

def test_another_session_sees_the_fixtures(mock_api):
    got = mock_api.client().get("/v1/tickets/xd_lucas_meyer_hot_tub")
    assert got.json()["data"]["status"] == "pending"

def test_clock_and_faults_over_the_control_api(mock_api):
    mock_api.clock.set("2027-01-01T00:00:00Z")
    mock_api.clock.advance(60)
    assert mock_api.clock.now().startswith("2027-01-01T00:01:00")
    mock_api.fault(method="GET", path="/v1/agents", status=503, count=1)
    client = mock_api.client()
    params = {"workspace_id": mock_api.workspaces.primary}
    assert client.get("/v1/agents", params=params).status_code == 503
    assert client.get("/v1/agents", params=params).status_code == 200

def test_the_container_needs_its_control_token(mock_api):
    server = mock_api.base_url.split("/sessions/")[0]
    assert httpx.get(server + "/__mock__/sessions").status_code == 403
'''


@pytest.mark.parametrize("xdist", [(), ("-n", "2")], ids=["one-process", "xdist"])
def test_mock_api_runs_against_the_container(image, tmp_path: Path, monkeypatch,
                                             xdist: tuple[str, ...]) -> None:
    (tmp_path / "test_downstream.py").write_text(DOWNSTREAM)
    monkeypatch.setenv("MOCK_API_CONTAINER_NETWORK", "host")
    monkeypatch.setenv("TESTCONTAINERS_RYUK_DISABLED", "true")
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "--mock-api-container", image, *xdist, str(tmp_path)],
                          capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "4 passed" in done.stdout
