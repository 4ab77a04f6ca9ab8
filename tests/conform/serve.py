"""Serve an ASGI app (the mock, or a broken variant of it) with uvicorn in a thread.

The port is the one the socket was bound to, and that socket is the one uvicorn listens on:
picking a free port first and binding it again later left a window in which another process
(an xdist worker serving its own mock) could take the port.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import uvicorn


def _bound() -> socket.socket:
    """A socket bound to a port the system picks. No SO_REUSEADDR: on Linux it would let
    another socket asking for it bind the same port while this one is not yet listening."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    return sock


@contextmanager
def refused_port() -> Iterator[int]:
    """A port nothing answers on for as long as the block runs: bound, never listening, so no
    other process can take it and a connection is refused."""
    with _bound() as sock:
        yield int(sock.getsockname()[1])


@contextmanager
def serve(app: Any) -> Iterator[str]:
    sock = _bound()
    port = int(sock.getsockname()[1])
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning",
                                           access_log=False, lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    try:
        thread.start()
        deadline = time.monotonic() + 10
        while not server.started:
            if time.monotonic() > deadline or not thread.is_alive():
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.01)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()
