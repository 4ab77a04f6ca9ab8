"""The mock's container image under Testcontainers (`pip install 'workspace-api-mock[containers]'`).

    from mockserver.testing.containers import MockApiContainer

    with MockApiContainer("workspace-api-mock:latest") as mock:   # started, healthy
        client = mock.client()                                     # auth preset (write token)
        client.get("/v1/conversations", params={"workspace_id": "ws_harborview"})
        mock.control().post("clock", json={"advance_seconds": 60})   # X-Mock-Control-Token set

The container gets a control token of its own (MOCK_API_CONTROL_TOKEN), so its control API is
on; options go in as MOCK_API_* variables (`options={"rate_limit": 5}`), a fixtures directory
is mounted at /fixtures. `network_mode="host"` (or MOCK_API_CONTAINER_NETWORK=host) runs it on
the host's network, on a free port, for daemons without a bridge network.
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from testcontainers.core.container import DockerContainer

__all__ = ["CONTAINER_PORT", "FIXTURES_PATH", "ContainerTokens", "MockApiContainer",
           "fixture_tokens"]

CONTAINER_PORT = 8080  # EXPOSE in the Dockerfile
FIXTURES_PATH = "/fixtures"  # a directory mounted here replaces the default dataset
CONTROL_HEADER = "X-Mock-Control-Token"
NETWORK_ENV = "MOCK_API_CONTAINER_NETWORK"


@dataclass(frozen=True)
class ContainerTokens:
    """The API tokens of the container's fixtures by role, and its control token."""

    write: str | None
    read: str | None
    colleague: str | None
    other: str | None
    control: str


def fixture_tokens(fixtures: str | Path | None = None) -> list[dict[str, Any]]:
    """The token records of a fixtures directory (the default dataset when None)."""
    from ..data.fixtures import default_fixtures_dir

    directory = Path(fixtures) if fixtures is not None else default_fixtures_dir()
    for name in ("tokens.json", "tokens.yaml", "tokens.yml"):
        path = directory / name
        if path.is_file():
            if name.endswith(".json"):
                return list(json.loads(path.read_text()))
            import yaml

            return list(yaml.safe_load(path.read_text()) or [])
    return []


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class MockApiContainer(DockerContainer):
    """The mock's image as a Testcontainers container: `base_url`, `tokens`, `client()`,
    `control()`; `start()` returns once Docker reports the image's HEALTHCHECK healthy."""

    def __init__(self, image: str = "workspace-api-mock:latest", *,
                 control_token: str | None = None, fixtures: str | Path | None = None,
                 options: dict[str, Any] | None = None, network_mode: str | None = None,
                 health_timeout: float = 60.0, **kwargs: Any) -> None:
        super().__init__(image, **kwargs)
        self.control_token = control_token or secrets.token_urlsafe(18)
        self.health_timeout = health_timeout
        self.fixtures = Path(fixtures).resolve() if fixtures is not None else None
        self.with_env("MOCK_API_CONTROL_TOKEN", self.control_token)
        for name, value in (options or {}).items():
            if isinstance(value, bool):
                value = "true" if value else "false"
            self.with_env(f"MOCK_API_{name.upper()}", str(value))
        if self.fixtures is not None:
            self.with_volume_mapping(str(self.fixtures), FIXTURES_PATH, "ro")
        self.network_mode = network_mode or os.environ.get(NETWORK_ENV) or None
        if self.network_mode == "host":
            self.port = _free_port()  # the container's own port is the host's
            self.with_env("MOCK_API_PORT", str(self.port))
            self.with_kwargs(network_mode="host")
        else:
            self.port = CONTAINER_PORT
            self.with_exposed_ports(CONTAINER_PORT)
            if self.network_mode:
                self.with_kwargs(network_mode=self.network_mode)
        roles = {t["access"] if t["token"] not in _ROLE_OF else _ROLE_OF[t["token"]]: t["token"]
                 for t in fixture_tokens(self.fixtures)}
        self.tokens = ContainerTokens(write=roles.get("write"), read=roles.get("read"),
                                      colleague=roles.get("colleague"),
                                      other=roles.get("other"), control=self.control_token)

    def with_kwargs(self, **kwargs: Any) -> MockApiContainer:
        """Docker's create() arguments, added to those given before (the base class replaces
        them, which would drop network_mode="host")."""
        self._kwargs = {**getattr(self, "_kwargs", {}), **kwargs}
        return self

    @property
    def base_url(self) -> str:
        """Where the API answers (`{base_url}/v1/...`) from the host running the tests."""
        if self.network_mode == "host":
            return f"http://127.0.0.1:{self.port}"
        host = self.get_container_host_ip()
        return f"http://{host}:{self.get_exposed_port(CONTAINER_PORT)}"

    def client(self, token: str | None = None, **kwargs: Any) -> httpx.Client:
        """An httpx client on `base_url` with `Authorization: Bearer` (the write token)."""
        token = token or self.tokens.write
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return httpx.Client(base_url=self.base_url, headers=headers, **kwargs)

    def control(self, **kwargs: Any) -> httpx.Client:
        """An httpx client on the control API (`{base_url}/__mock__/`), token preset."""
        return httpx.Client(base_url=f"{self.base_url}/__mock__/",
                            headers={CONTROL_HEADER: self.control_token}, **kwargs)

    def health(self) -> str:
        """Docker's view of the image's HEALTHCHECK: starting, healthy or unhealthy; or the
        container's state when it is not running."""
        container = self.get_wrapped_container()
        container.reload()
        state = container.attrs.get("State", {})
        if state.get("Status") != "running":
            return str(state.get("Status"))
        return str(state.get("Health", {}).get("Status", "none"))

    def wait_healthy(self, timeout: float | None = None) -> MockApiContainer:
        """Wait for the healthcheck's "healthy"; fail with the container's log otherwise."""
        deadline = time.monotonic() + (self.health_timeout if timeout is None else timeout)
        while (status := self.health()) != "healthy":
            if status not in ("starting", "none", "created") or time.monotonic() > deadline:
                out, err = self.get_logs()
                raise RuntimeError(f"the mock's container is {status}, not healthy:\n"
                                   f"{(out + err).decode(errors='replace')}")
            time.sleep(0.2)
        return self

    def start(self) -> MockApiContainer:
        super().start()
        return self.wait_healthy()


_ROLE_OF = {"mock-write-token": "write", "mock-read-token": "read",
            "mock-colleague-token": "colleague", "mock-other-token": "other"}
