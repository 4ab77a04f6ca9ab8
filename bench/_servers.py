"""Start servers in subprocesses for the benchmarks: the mock, and a bare Starlette baseline."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator

import httpx


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_ready(url: str, headers: dict[str, str] | None = None, timeout: float = 30) -> float:
    """Seconds until the first answer."""
    start = time.perf_counter()
    while True:
        try:
            httpx.get(url, headers=headers, timeout=1)
            return time.perf_counter() - start
        except httpx.TransportError:
            if time.perf_counter() - start > timeout:
                raise
            time.sleep(0.01)


@contextlib.contextmanager
def running(argv: list[str], url: str, headers: dict[str, str] | None = None,
            cpu: int | None = None) -> Iterator[subprocess.Popen[bytes]]:
    if cpu is not None and hasattr(os, "sched_setaffinity"):
        argv = ["taskset", "-c", str(cpu), *argv]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        wait_ready(url, headers)
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


def mock_argv(port: int, *extra: str) -> list[str]:
    return [sys.executable, "-m", "mockserver", "serve", "--port", str(port), *extra]
