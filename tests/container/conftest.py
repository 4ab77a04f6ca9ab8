"""The container tests: run by scripts/test-image against the image it built (outside the
default pytest run, see pyproject's norecursedirs). Without Docker or an image they fail,
saying so; they are never skipped."""

from __future__ import annotations

import os
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

import httpx
import pytest

WRITE = {"Authorization": "Bearer mock-write-token"}
CONTROL_TOKEN = "ci-control-token"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def docker(*args: str, check: bool = True, timeout: float = 120) -> str:
    done = subprocess.run(["docker", *args], capture_output=True, text=True, timeout=timeout)
    if check and done.returncode != 0:
        raise AssertionError(f"docker {' '.join(args)}: {done.returncode} {done.stderr}")
    return done.stdout.strip()


@pytest.fixture(scope="session")
def image() -> str:
    """The image under test (scripts/test-image builds it and sets MOCK_API_TEST_IMAGE)."""
    name = os.environ.get("MOCK_API_TEST_IMAGE")
    if not name:
        pytest.fail("tests/container need Docker and the image: run scripts/test-image "
                    "(it builds the image and sets MOCK_API_TEST_IMAGE)", pytrace=False)
    try:
        docker("image", "inspect", name, timeout=30)
    except (OSError, AssertionError, subprocess.TimeoutExpired) as exc:
        pytest.fail(f"tests/container need a Docker daemon with the image {name}: {exc}",
                    pytrace=False)
    return name


def run_label() -> str:
    return os.environ.get("MOCK_API_TEST_RUN", "wsmock-local")


@dataclass
class Started:
    """A container of the image on the host network, on a free port of its own."""

    id: str
    port: int
    started: float
    env: dict[str, str] = field(default_factory=dict)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def health(self) -> str:
        return docker("inspect", "-f", "{{.State.Health.Status}}", self.id)

    def logs(self) -> str:
        done = subprocess.run(["docker", "logs", self.id], capture_output=True, text=True)
        return done.stdout + done.stderr

    def wait_healthy(self, bound: float) -> float:
        """Seconds from `docker run` to the healthcheck's first "healthy" (fails past bound)."""
        while (status := self.health()) != "healthy":
            state = docker("inspect", "-f", "{{.State.Status}}", self.id)
            if state != "running" or time.monotonic() - self.started > bound:
                raise AssertionError(f"not healthy within {bound} s ({status}, {state}):\n"
                                     f"{self.logs()}")
            time.sleep(0.2)
        return time.monotonic() - self.started

    def wait_serving(self, bound: float = 30) -> None:
        while True:
            try:
                httpx.get(f"{self.url}/openapi.json", timeout=1)
                return
            except httpx.TransportError:
                if time.monotonic() - self.started > bound:
                    raise AssertionError(f"not serving within {bound} s:\n{self.logs()}") from None
                time.sleep(0.1)


@pytest.fixture
def start(image: str) -> Iterator[object]:
    """start(env=..., volumes=...) runs the image; every container is removed afterwards."""
    made: list[Started] = []

    def run(env: dict[str, str] | None = None, volumes: tuple[str, ...] = (),
            args: tuple[str, ...] = ()) -> Started:
        port = free_port()
        env = {"MOCK_API_PORT": str(port), **(env or {})}
        cmd = ["run", "-d", "--network", "host", "--label",
               f"org.workspace-api-mock.run={run_label()}"]
        for key, value in env.items():
            cmd += ["-e", f"{key}={value}"]
        for volume in volumes:
            cmd += ["-v", volume]
        began = time.monotonic()
        found = Started(docker(*cmd, image, *args), port, began, env)
        made.append(found)
        return found

    yield run
    for container in made:
        docker("rm", "-f", container.id, check=False)
