"""The conformance gate as a container (docker/gate.Dockerfile) against the mock's container,
as README's recipe runs it: it passes, and it fails (exit 1) against a server that breaks a
documented promise (here: the mock's control API planting a 500 on every ticket list)."""

from __future__ import annotations

import os
import subprocess

import httpx
import pytest

from .conftest import CONTROL_TOKEN, docker, run_label


@pytest.fixture(scope="module")
def gate_image() -> str:
    name = os.environ.get("MOCK_API_TEST_GATE_IMAGE")
    if not name:
        pytest.fail("the gate's container test needs its image: run scripts/test-image "
                    "(it builds docker/gate.Dockerfile and sets MOCK_API_TEST_GATE_IMAGE)",
                    pytrace=False)
    return name


def _gate(gate_image: str, url: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["docker", "run", "--rm", "--network", "host", "--label",
         f"org.workspace-api-mock.run={run_label()}", gate_image,
         "--base-url", url, "--token", "mock-write-token", "--phases", "examples",
         "--max-examples", "1", "--rate", "0", "--include", "/v1/tickets"],
        capture_output=True, text=True, timeout=600)


def test_the_gate_container_passes_the_mock_and_fails_a_broken_server(gate_image, start) -> None:
    mock = start({"MOCK_API_CONTROL_TOKEN": CONTROL_TOKEN, "MOCK_API_RATE_LIMIT": "0"})
    mock.wait_serving()
    assert docker("inspect", "-f", "{{.Config.User}}", gate_image) == "10001:10001"
    passed = _gate(gate_image, mock.url)
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert "PASS" in passed.stdout
    planted = httpx.post(f"{mock.url}/__mock__/faults", headers={
        "X-Mock-Control-Token": CONTROL_TOKEN}, json={"method": "GET", "path": "/v1/tickets",
                                                      "status": 500,
                                                      "count": None})
    assert planted.status_code == 201, planted.text
    failed = _gate(gate_image, mock.url)
    assert failed.returncode == 1, failed.stdout + failed.stderr
