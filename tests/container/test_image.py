"""The image through real requests: healthy within a bound, the API on the default fixtures,
the control token, sessions, a mounted fixtures directory, a clean stop on SIGTERM, its size."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx

from .conftest import CONTROL_TOKEN, WRITE, docker

CONTROL = {"X-Mock-Control-Token": CONTROL_TOKEN}
HEALTHY_WITHIN = 20.0  # seconds from `docker run` (the healthcheck runs every 5 s)
SIZE_LIMIT_MB = 150


def test_healthy_answers_on_the_default_fixtures_and_runs_as_non_root(image, start) -> None:
    mock = start({"MOCK_API_CONTROL_TOKEN": CONTROL_TOKEN})
    took = mock.wait_healthy(HEALTHY_WITHIN)
    print(f"healthy {took:.1f} s after docker run")
    listed = httpx.get(f"{mock.url}/v1/conversations", params={"workspace_id": "ws_harborview"},
                       headers=WRITE)
    assert listed.status_code == 200 and len(listed.json()["data"]) == 20
    assert httpx.get(f"{mock.url}/v1/conversations", params={"workspace_id": "ws_harborview"}
                     ).status_code == 401
    assert docker("inspect", "-f", "{{.Config.User}}", mock.id) == "10001:10001"
    assert "8080/tcp" in docker("inspect", "-f", "{{json .Config.ExposedPorts}}", image)
    assert f"serving http://0.0.0.0:{mock.port}/v1" in mock.logs()


def test_control_api_needs_the_token(start) -> None:
    mock = start({"MOCK_API_CONTROL_TOKEN": CONTROL_TOKEN, "MOCK_API_RATE_LIMIT": "0"})
    mock.wait_serving()
    refused = httpx.get(f"{mock.url}/__mock__/clock")
    assert refused.status_code == 403 and "X-Mock-Control-Token" in refused.json()["error"]
    wrong = httpx.get(f"{mock.url}/__mock__/clock", headers={"X-Mock-Control-Token": "guess"})
    assert wrong.status_code == 403
    assert httpx.get(f"{mock.url}/__mock__/clock", headers=CONTROL).status_code == 200
    moved = httpx.post(f"{mock.url}/__mock__/clock", headers=CONTROL,
                       json={"now": "2027-01-01T00:00:00Z"})
    assert moved.status_code == 200
    now = httpx.get(f"{mock.url}/__mock__/clock", headers=CONTROL).json()["now"]
    assert now.startswith("2027-01-01T00:00")


def test_without_a_token_control_is_off_and_the_log_says_how_to_turn_it_on(start) -> None:
    mock = start()
    mock.wait_serving()
    refused = httpx.post(f"{mock.url}/__mock__/reset")
    assert refused.status_code == 403 and "control token" in refused.json()["error"]
    log = mock.logs()
    assert "control API off: bound to 0.0.0.0 without a control token" in log
    assert "MOCK_API_CONTROL_TOKEN" in log


def test_sessions_are_apart(start) -> None:
    mock = start({"MOCK_API_CONTROL_TOKEN": CONTROL_TOKEN})
    mock.wait_serving()
    made = httpx.post(f"{mock.url}/__mock__/sessions", headers=CONTROL, json={"name": "job-1"})
    assert made.status_code == 201, made.text
    ticket = "/v1/tickets/xd_lucas_meyer_hot_tub"
    resolved = httpx.post(f"{mock.url}/sessions/job-1{ticket}/resolve", headers=WRITE, json={})
    assert resolved.status_code == 200, resolved.text
    assert httpx.get(f"{mock.url}/sessions/job-1{ticket}", headers=WRITE
                     ).json()["data"]["status"] == "resolved"
    by_header = httpx.get(f"{mock.url}{ticket}", headers={**WRITE, "X-Mock-Session": "job-1"})
    assert by_header.json()["data"]["status"] == "resolved"
    assert httpx.get(f"{mock.url}{ticket}", headers=WRITE).json()["data"]["status"] == "pending"


def test_a_directory_mounted_at_fixtures_is_served(start, tmp_path: Path) -> None:
    out = tmp_path / "data"
    subprocess.run([sys.executable, "-m", "mockserver", "fixtures", "generate", "--scale", "3",
                    "--seed", "7", "--out", str(out)], check=True, capture_output=True)
    os.chmod(tmp_path, 0o755)
    for path in [out, *out.iterdir()]:
        os.chmod(path, 0o755 if path.is_dir() else 0o644)  # the image's user is not root
    wanted = {c["id"] for c in json.loads((out / "contacts.json").read_text())
              if c["workspace_id"] == "ws_harborview"}
    mock = start(volumes=(f"{out}:/fixtures:ro",))
    mock.wait_serving()
    listed = httpx.get(f"{mock.url}/v1/contacts", params={"workspace_id": "ws_harborview"},
                       headers=WRITE)
    assert listed.status_code == 200, listed.text
    assert {c["id"] for c in listed.json()["data"]} == wanted
    assert "fixtures: /fixtures" in mock.logs()


def test_sigterm_stops_it_cleanly_within_two_seconds(start) -> None:
    mock = start()
    mock.wait_serving()
    began = time.monotonic()
    docker("kill", "--signal", "TERM", mock.id)
    exit_code = docker("wait", mock.id, timeout=10)
    took = time.monotonic() - began
    print(f"stopped {took:.2f} s after SIGTERM")
    assert exit_code == "0" and took < 2.0, mock.logs()
    # stdout and stderr (the off-loopback warnings) interleave in `docker logs`: the line is
    # there, not always last.
    assert "mock stopped" in mock.logs().splitlines(), mock.logs()


def test_image_size(image) -> None:
    size = int(docker("image", "inspect", "-f", "{{.Size}}", image)) / 1e6
    print(f"image size {size:.1f} MB")
    assert size < SIZE_LIMIT_MB
