"""`python -m mockserver serve` as users run it: a real process on a loopback port, its banner,
one JSON log line per request with the token redacted, and a clean stop on SIGTERM."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import time

import httpx

TOKEN = "mock-write-token"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait(base: str) -> None:
    deadline = time.monotonic() + 30
    while True:
        try:
            httpx.get(f"{base}/v1", timeout=1)
            return
        except httpx.TransportError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def test_serve_logs_each_request_and_stops_cleanly_on_sigterm() -> None:
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    proc = subprocess.Popen(
        [sys.executable, "-m", "mockserver", "serve", "--port", str(port), "--log-format", "json",
         "--rate-limit", "0", "--response-cache", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        _wait(base)
        headers = {"Authorization": f"Bearer {TOKEN}"}
        listed = httpx.get(f"{base}/v1/conversations", params={"workspace_id": "ws_harborview"},
                           headers=headers)
        assert listed.status_code == 200 and len(listed.json()["data"]) == 20
        assert httpx.get(f"{base}/v1/tickets/nope", headers=headers).status_code == 404
    finally:
        proc.send_signal(signal.SIGTERM)
        stdout, stderr = proc.communicate(timeout=20)
    assert proc.returncode == 0, stderr
    assert f"serving {base}/v1" in stdout and "rate limit: off" in stdout
    assert stdout.rstrip().endswith("mock stopped")
    lines = [json.loads(line) for line in stderr.splitlines() if line.startswith("{")]
    requests = [(line["method"], line["path"], line["status"]) for line in lines]
    assert ("GET", "/v1/conversations", 200) in requests
    assert ("GET", "/v1/tickets/nope", 404) in requests
    assert TOKEN not in stderr  # tokens are redacted in the log
