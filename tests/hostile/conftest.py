"""A real served mock for the hostile-input suite: `python -m mockserver serve` in its own
process on a loopback port (uvicorn, its protocol and limits, as users run it), and helpers
to send it raw bytes a polite client would not."""

from __future__ import annotations

import contextlib
import os
import re
import select
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import httpx
import orjson
import pytest

WRITE = "mock-write-token"
OTHER = "mock-other-token"  # a token of another workspace only
WS = "ws_harborview"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Served:
    """A served mock: its base URL, process and the file its stderr (the request log) goes to."""

    base: str
    port: int
    process: subprocess.Popen[str]
    log: Path

    def rss_kib(self) -> int:
        with open(f"/proc/{self.process.pid}/status") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        raise RuntimeError("no VmRSS")


def start(tmp: Path, *options: str) -> Served:
    port = free_port()
    log = tmp / f"serve-{port}.log"
    with log.open("w") as sink:  # the child keeps its own copy of the descriptor
        process = _popen(port, sink, options)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        try:
            httpx.get(f"{base}/openapi.json", timeout=1)
            return Served(base, port, process, log)
        except httpx.TransportError:
            if time.monotonic() > deadline or process.poll() is not None:
                process.kill()
                process.communicate()
                raise RuntimeError(f"serve did not start: {log.read_text()}") from None
            time.sleep(0.05)


def _popen(port: int, sink: IO[str], options: tuple[str, ...]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "mockserver", "serve", "--port", str(port), "--rate-limit", "0",
         "--self-check", *options],
        stdout=subprocess.PIPE, stderr=sink, text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"})


def stop(served: Served) -> str:
    served.process.send_signal(signal.SIGTERM)
    stdout, _ = served.process.communicate(timeout=20)
    return stdout


@pytest.fixture(scope="session")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    found = start(tmp_path_factory.mktemp("served"))
    yield found
    stop(found)


@pytest.fixture
def api(served: Served) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=served.base, timeout=10) as client:
        client.post("/__mock__/reset")
        yield client


def auth(token: str = WRITE) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def raw(port: int, data: bytes | Iterable[bytes], *,
        timeout: float = 10) -> tuple[int, dict[str, str], bytes]:
    """Send raw bytes (or chunks of them) on a fresh connection, stopping as soon as the server
    answers (as a client reading while it sends would); the answer's status, headers, body."""
    chunks = [data] if isinstance(data, bytes) else data
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        for chunk in chunks:
            if select.select([sock], [], [], 0)[0]:
                break  # answered (refused) before the request was all sent
            try:
                sock.sendall(chunk)
            except (BrokenPipeError, ConnectionResetError):
                break
        received = []
        with contextlib.suppress(ConnectionResetError, TimeoutError):
            while chunk := sock.recv(65536):
                received.append(chunk)
                head, _, body = b"".join(received).partition(b"\r\n\r\n")
                length = re.search(rb"(?i)content-length: *(\d+)", head)
                if length and len(body) >= int(length.group(1)):
                    break
    answer = b"".join(received)
    head, _, body = answer.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {k.strip().lower(): v.strip() for k, _, v in (h.partition(":") for h in lines[1:])}
    return status, headers, body


def error_of(status: int, headers: dict[str, str], body: bytes, *expected: int) -> str:
    """The `{"error"}` message of a JSON refusal with one of the expected statuses."""
    assert status in expected, (status, body[:300])
    assert headers.get("content-type", "").startswith("application/json"), (headers, body[:300])
    parsed = orjson.loads(body)
    assert list(parsed) == ["error"] and parsed["error"], parsed
    return str(parsed["error"])
