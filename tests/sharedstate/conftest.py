"""Helpers for the tests of shared state: workers in this process (two `MockApp`s on one
namespace, each with its own store, as two `serve` workers have) and `serve` processes."""

from __future__ import annotations

import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pytest
from conftest import FROZEN_AT, auth
from redis_server import RedisServer, free_port
from starlette.testclient import TestClient

from mockserver.engine.app import Config, MockApp
from mockserver.standalone.server import create_app


@pytest.fixture
def namespace() -> str:
    return f"test-{uuid.uuid4().hex[:12]}"


class Workers:
    """Workers of one shared mock in this process; `client(i)` talks to worker i."""

    def __init__(self, url: str, namespace: str, **config: Any) -> None:
        self.url = url
        self.namespace = namespace
        self.config = config
        self.mocks: list[MockApp] = []
        self.clients: list[TestClient] = []

    def add(self, **overrides: Any) -> TestClient:
        settings = {"self_check": True, "frozen_clock": FROZEN_AT, "cursor_secret": b"tests",
                    "storage_secret": "tests",  # ids as the in-memory mock's (H20)
                    "state": self.url, "state_namespace": self.namespace,
                    **self.config, **overrides}
        mock = MockApp(Config(**settings))
        client = TestClient(create_app(mock=mock), headers=auth())
        self.mocks.append(mock)
        self.clients.append(client)
        return client

    def close(self) -> None:
        for client in self.clients:
            client.close()
        for mock in self.mocks:
            mock.state.close()  # the worker's connection


@pytest.fixture
def workers(redis_server: RedisServer, namespace: str) -> Iterator[Workers]:
    found = Workers(redis_server.url, namespace)
    yield found
    found.close()


def in_memory(**config: Any) -> TestClient:
    """The same mock in memory, one process: what the shared mock must match."""
    settings = {"self_check": True, "frozen_clock": FROZEN_AT, "cursor_secret": b"tests",
                "storage_secret": "tests", **config}
    return TestClient(create_app(mock=MockApp(Config(**settings))), headers=auth())


def wait_ready(base: str, proc: subprocess.Popen[bytes], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            httpx.get(f"{base}/__mock__/clock", timeout=1)
            return
        except httpx.TransportError:
            if proc.poll() is not None:
                err = proc.stderr.read().decode() if proc.stderr else ""
                raise AssertionError(f"serve exited with {proc.returncode}: {err}") from None
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


@contextmanager
def serve(url: str, namespace: str, *extra: str, workers: int = 1) -> Iterator[str]:
    """`python -m mockserver serve --state URL` as a process on a free loopback port."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "mockserver", "serve", "--port", str(port), "--quiet",
         "--state", url, "--state-namespace", namespace, "--workers", str(workers), *extra],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_ready(base, proc)
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stderr is not None:
            proc.stderr.close()


def fresh(base: str, token: str = "mock-write-token") -> httpx.Client:
    """A client that opens a new connection per request (so a multi-worker server spreads
    them over its workers)."""
    return httpx.Client(base_url=base, headers=auth(token),
                        limits=httpx.Limits(max_keepalive_connections=0), timeout=30)
