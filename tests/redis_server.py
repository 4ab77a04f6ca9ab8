"""A real `redis-server` for the tests of shared state (never a fake): one per test session
(per xdist worker), on a free loopback port, in a temporary directory."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest

INSTALL = ("redis-server is not installed; the tests of shared state need a real one: "
           "apt-get install redis-server (Debian/Ubuntu), brew install redis (macOS), "
           "or put redis-server on PATH")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class RedisServer:
    """redis-server on 127.0.0.1:`port`, data in `directory` (kept across restart())."""

    def __init__(self, directory: Path) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            pytest.fail(INSTALL, pytrace=False)
        self.binary = binary
        self.directory = directory
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.proc: subprocess.Popen[bytes] | None = None
        self.start()

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [self.binary, "--port", str(self.port), "--bind", "127.0.0.1",
             "--dir", str(self.directory), "--save", "", "--appendonly", "no",
             "--protected-mode", "yes", "--loglevel", "warning"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 10
        while True:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2) as sock:
                    sock.sendall(b"PING\r\n")
                    if sock.recv(16).startswith(b"+PONG"):
                        return
            except OSError:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                err = self.proc.stderr.read().decode() if self.proc.stderr else ""
                pytest.fail(f"redis-server did not start on port {self.port}: {err}",
                            pytrace=False)
            time.sleep(0.02)

    def stop(self, *, save: bool = False) -> None:
        """Stop it (SHUTDOWN SAVE keeps the data for the next start(), as a restart would)."""
        if self.proc is None:
            return
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=2) as sock:
                sock.sendall(b"SHUTDOWN SAVE\r\n" if save else b"SHUTDOWN NOSAVE\r\n")
                sock.recv(16)
        except OSError:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        if self.proc.stderr is not None:
            self.proc.stderr.close()
        self.proc = None

    def restart(self, *, keep_data: bool = True) -> None:
        self.stop(save=keep_data)
        self.start()
