"""One mock for many test processes: the server the xdist controller starts for its workers
(`--mock-api-share-server`) or a container of the mock's image (`--mock-api-container`). Tests
reach it over its control API, each in a session of its own (`control.HttpControl`)."""

from __future__ import annotations

import dataclasses
from typing import Any

import orjson
import pytest

from .config import MockApiConfig, config_from_options
from .control import HttpControl
from .identities import Tokens, Workspaces, identities, mock_identities
from .server import MockApiSnapshot, MockServer

PLUGIN_NAME = "mock_api_shared_server"


class SharedServer:
    """One mock server for every worker, in the xdist controller (or, registered as
    `mock_api_shared_server` in a process that runs tests, for that process's tests). Workers
    learn its URL and the fixtures' tokens and workspaces through `workerinput`; each of their
    tests creates its own session there over the control API."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.server: MockServer | None = None
        self.info = ""

    def _start(self) -> str:
        if self.server is None:
            mock_config = config_from_options(self.config)
            self.server = MockServer()
            mock, app = self.server.mock_for(mock_config)
            self.server.dispatch.target = app
            tokens, workspaces = mock_identities(mock.state)
            self.info = orjson.dumps({
                "url": self.server.base_url, "key": server_key(mock_config),
                "tokens": dataclasses.asdict(tokens),
                "workspaces": dataclasses.asdict(workspaces),
            }).decode()
        return self.info

    def pytest_configure_node(self, node: Any) -> None:
        node.workerinput["mock_api_shared"] = self._start()

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        if self.server is not None:
            self.server.stop()
            self.server = None


class ContainerServer(SharedServer):
    """--mock-api-container IMAGE: the mock in a container (started on first use, or for the
    xdist workers), reached over its control API as the shared server is; its control token
    travels with the server's URL."""

    def __init__(self, config: pytest.Config, image: str) -> None:
        super().__init__(config)
        self.image = image
        self.container: Any = None

    def _start(self) -> str:
        if self.container is None:
            from .containers import MockApiContainer, fixture_tokens

            mock_config = config_from_options(self.config)
            if len(mock_config.fixtures) > 1:
                raise pytest.UsageError("--mock-api-container mounts one fixtures directory "
                                        "(at /fixtures); give one --mock-api-fixtures")
            fixtures = mock_config.fixtures[0] if mock_config.fixtures else None
            self.container = MockApiContainer(self.image, fixtures=fixtures, options={
                "self_check": mock_config.self_check, "journal_size": mock_config.journal_size,
                "strict_params": mock_config.strict_params, "session_idle": 0, "quiet": True})
            self.container.start()
            tokens, workspaces = identities(fixture_tokens(fixtures))
            self.info = orjson.dumps({
                "url": self.container.base_url, "key": server_key(mock_config),
                "tokens": dataclasses.asdict(tokens),
                "workspaces": dataclasses.asdict(workspaces),
                "control_token": self.container.control_token,
            }).decode()
        return self.info

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        if self.container is not None:
            self.container.stop()
            self.container = None


class AttachedServer(SharedServer):
    """--mock-api-server URL: a mock already running (`serve`, a CI service container,
    compose), reached over its control API as the container is (decision U15). Its tokens and
    workspaces are read from the plugin's fixtures (`--mock-api-fixtures`, default the
    packaged ones): the server must serve the same."""

    def __init__(self, config: pytest.Config, url: str, token: str | None) -> None:
        super().__init__(config)
        self.url, self.token = url.rstrip("/"), token

    def _start(self) -> str:
        if not self.info:
            from .containers import fixture_tokens
            from .control import ControlClient

            mock_config = config_from_options(self.config)
            if len(mock_config.fixtures) > 1:
                raise pytest.UsageError("--mock-api-server: the running mock's fixtures are "
                                        "read from one --mock-api-fixtures directory")
            client = ControlClient(self.url, self.token)
            try:
                client.call("listSessions")
            except Exception as exc:  # refused (RuntimeError) or unreachable (httpx's)
                raise pytest.UsageError(
                    f"--mock-api-server {self.url}: its control API does not answer "
                    f"({type(exc).__name__}: {exc}); is the mock running there, and is "
                    "--mock-api-control-token its --control-token?") from None
            finally:
                client.close()
            fixtures = mock_config.fixtures[0] if mock_config.fixtures else None
            tokens, workspaces = identities(fixture_tokens(fixtures))
            self.info = orjson.dumps({
                "url": self.url, "key": server_key(mock_config),
                "tokens": dataclasses.asdict(tokens),
                "workspaces": dataclasses.asdict(workspaces),
                "control_token": self.token,
            }).decode()
        return self.info

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        pass  # not ours to stop


def attach_options(config: pytest.Config) -> tuple[str, str | None] | None:
    """(URL, control token) of `--mock-api-server` (option, MOCK_API_SERVER, ini), or None."""
    import os

    url = (config.getoption("--mock-api-server") or os.environ.get("MOCK_API_SERVER")
           or config.getini("mock_api_server"))
    if not url:
        return None
    token = (config.getoption("--mock-api-control-token")
             or os.environ.get("MOCK_API_CONTROL_TOKEN") or config.getini("mock_api_control_token"))
    return str(url), (str(token) if token else None)


def register(config: pytest.Config, image: str | None, share: bool,
             attach: tuple[str, str | None] | None = None) -> None:
    """In the process that starts the run: the running mock to attach to, the container, or
    the shared server of xdist."""
    if hasattr(config, "workerinput"):
        return
    if attach is not None:
        if image:
            raise pytest.UsageError("--mock-api-server and --mock-api-container each name the "
                                    "mock to use: give one")
        config.pluginmanager.register(AttachedServer(config, *attach), PLUGIN_NAME)
    elif image:
        config.pluginmanager.register(ContainerServer(config, image), PLUGIN_NAME)
    elif share and getattr(config.option, "numprocesses", None):
        config.pluginmanager.register(SharedServer(config), PLUGIN_NAME)


def shared_info(config: pytest.Config) -> dict[str, Any] | None:
    """The shared server's URL, identities and control token: from the xdist controller, or
    the one this process registered (a container without xdist); None: in-process."""
    found = getattr(config, "workerinput", {}).get("mock_api_shared")
    if found is None:
        plugin = config.pluginmanager.get_plugin(PLUGIN_NAME)
        if isinstance(plugin, SharedServer):
            found = plugin._start()
    return None if found is None else dict(orjson.loads(found))


def server_key(config: MockApiConfig) -> list[Any]:
    """What a test's settings must share with the server's: they are the server's own."""
    return [[str(p) for p in config.fixtures], config.self_check, config.journal_size,
            config.strict_params]


def open_shared(info: dict[str, Any], config: MockApiConfig, pytestconfig: pytest.Config,
                label: str, origin: MockApiSnapshot | None
                ) -> tuple[HttpControl, str, Tokens, Workspaces]:
    """A fresh session for one test on the shared server, with its base URL and identities."""
    if server_key(config) != info["key"]:
        raise pytest.UsageError(
            "this test's mock_api settings (fixtures, self_check, journal_size, strict_params) "
            "differ from the shared server's; run it without --mock-api-share-server")
    worker = getattr(pytestconfig, "workerinput", {}).get("workerid", "w")
    control = HttpControl.open(info["url"], info.get("control_token"), config, worker, label,
                               origin)
    return (control, control.base_url, Tokens(**info["tokens"]),
            Workspaces(**info["workspaces"]))
