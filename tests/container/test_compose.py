"""compose.yaml: two replicas of the image on one Redis are one mock. Started with
docker-compose, its replicas moved onto the host's network, on a redis-server the test
starts (registries, and so Redis's image, are out of reach here). Checked through both
replicas: read-your-writes, one rate-limit window, a cursor from one replica read on the other."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import yaml

from .conftest import CONTROL_TOKEN, WRITE, free_port, run_label

ROOT = Path(__file__).resolve().parents[2]
CONTROL = {"X-Mock-Control-Token": CONTROL_TOKEN}
HARBORVIEW = {"workspace_id": "ws_harborview"}


@pytest.fixture(scope="module")
def replicas(image, redis_server, tmp_path_factory) -> Iterator[tuple[str, str]]:
    binary = shutil.which("docker-compose")
    if binary is None:
        pytest.fail("the compose test needs docker-compose (apt-get install docker-compose)",
                    pytrace=False)
    project = run_label().replace("-", "") + "compose"
    ports = free_port(), free_port()
    env = {**os.environ, "MOCK_API_IMAGE": image, "MOCK_API_STATE": redis_server.url,
           "MOCK_API_STATE_NAMESPACE": project, "MOCK_API_CONTROL_TOKEN": CONTROL_TOKEN}
    # The replicas as compose.yaml defines them, moved onto the host's network on ports of
    # their own (docker-compose refuses published ports there); Redis is the test's.
    spec = yaml.safe_load((ROOT / "compose.yaml").read_text())
    services = {}
    for name, port in zip(("mock-a", "mock-b"), ports, strict=True):
        service = {k: v for k, v in spec["services"][name].items()
                   if k not in ("ports", "depends_on")}
        service["network_mode"] = "host"
        service["environment"] = {**service["environment"], "MOCK_API_PORT": str(port)}
        services[name] = service
    file = tmp_path_factory.mktemp("compose") / "compose.yaml"
    file.write_text(yaml.safe_dump({"services": services}))
    compose = [binary, "--ansi", "never", "-p", project, "-f", str(file)]

    def run(*args: str) -> str:
        done = subprocess.run([*compose, *args], env=env, capture_output=True, text=True,
                              timeout=180)
        assert done.returncode == 0, f"docker-compose {' '.join(args)}: {done.stderr}"
        return done.stdout

    run("up", "-d")
    urls = tuple(f"http://127.0.0.1:{port}" for port in ports)
    try:
        deadline = time.monotonic() + 60
        for url in urls:
            while True:
                try:
                    httpx.get(f"{url}/openapi.json", timeout=1)
                    break
                except httpx.TransportError:
                    if time.monotonic() > deadline:
                        raise AssertionError(run("logs")) from None
                    time.sleep(0.2)
        yield urls[0], urls[1]
    finally:
        run("down", "-v", "--remove-orphans")


def test_read_your_writes_across_replicas(replicas: tuple[str, str]) -> None:
    a, b = replicas
    ticket = "/v1/tickets/xd_lucas_meyer_hot_tub"
    assert httpx.get(f"{b}{ticket}", headers=WRITE).json()["data"]["status"] == "pending"
    done = httpx.post(f"{a}{ticket}/resolve", headers=WRITE, json={})
    assert done.status_code == 200, done.text
    assert httpx.get(f"{b}{ticket}", headers=WRITE).json()["data"]["status"] == "resolved"


def test_a_cursor_of_one_replica_reads_on_the_other(replicas: tuple[str, str]) -> None:
    a, b = replicas
    whole = httpx.get(f"{a}/v1/conversations", params={**HARBORVIEW, "limit": 10},
                      headers=WRITE).json()["data"]
    first = httpx.get(f"{a}/v1/conversations", params={**HARBORVIEW, "limit": 5},
                      headers=WRITE).json()
    second = httpx.get(f"{b}/v1/conversations", headers=WRITE, params={
        **HARBORVIEW, "limit": 5, "cursor": first["next_cursor"]})
    assert second.status_code == 200, f"a cursor of replica A on replica B: {second.text}"
    assert [c["id"] for c in first["data"] + second.json()["data"]] == [c["id"] for c in whole]


def test_one_rate_limit_window_for_both_replicas(replicas: tuple[str, str]) -> None:
    a, b = replicas
    # A fresh window (the clock moved through B), the limit set through A; the window counts
    # the requests on A and B together.
    assert httpx.post(f"{b}/__mock__/clock", headers=CONTROL,
                      json={"advance_seconds": 120}).status_code == 200
    assert httpx.post(f"{a}/__mock__/rate-limits", headers=CONTROL,
                      json={"per_minute": 4}).status_code == 200
    statuses = [httpx.get(f"{url}/v1/conversations", params=HARBORVIEW, headers=WRITE)
                for url in (a, b, a, b, b)]
    assert [r.status_code for r in statuses] == [200, 200, 200, 200, 429]
    assert int(statuses[-1].headers["Retry-After"]) >= 1
    assert "error" in statuses[-1].json()
