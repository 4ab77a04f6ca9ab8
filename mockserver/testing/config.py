"""The plugin's configuration: `MockApiConfig`, its options and ini settings, and how they are
read (options, ini, environment; the `@pytest.mark.mock_api` marker in `plugin.py`)."""

from __future__ import annotations

import dataclasses
import os
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from ..data.fixtures import default_fixtures_dir

DEFAULT_CLOCK = "2026-11-01T12:00:00.000Z"
DEFAULT_TOKENS = {
    "write": "mock-write-token",
    "read": "mock-read-token",
    "colleague": "mock-colleague-token",
    "other": "mock-other-token",
}
# Real-server mode: where tokens and workspace ids come from (option, environment variable).
REMOTE_SETTINGS = {
    "write": ("--mock-api-token", "MOCK_API_TOKEN"),
    "read": ("--mock-api-read-token", "MOCK_API_READ_TOKEN"),
    "colleague": ("--mock-api-colleague-token", "MOCK_API_COLLEAGUE_TOKEN"),
    "other": ("--mock-api-other-token", "MOCK_API_OTHER_TOKEN"),
    "primary": ("--mock-api-workspace", "MOCK_API_WORKSPACE"),
    "secondary": ("--mock-api-second-workspace", "MOCK_API_SECOND_WORKSPACE"),
    "other_workspace": ("--mock-api-other-workspace", "MOCK_API_OTHER_WORKSPACE"),
}
MARKER_FIELDS = ("fixtures", "rate_limit", "seed", "self_check", "clock", "journal_size",
                  "strict_params", "fail_on_ignored_params", "strict_requests",
                  "run_tool_code", "progression")
PROGRESSION_MODES = ("immediate", "time", "manual")


@dataclass(frozen=True)
class MockApiConfig:
    """How `mock_api` runs. Override the `mock_api_config` fixture to change it for a directory:

        @pytest.fixture
        def mock_api_config(mock_api_config):
            return mock_api_config.replace(rate_limit=10)
    """

    fixtures: tuple[Path, ...] = ()  # fixture directories overlaid in order; () = the defaults
    # Per minute, for every workspace (fixture plan limits included); 0 turns limits off;
    # None keeps the mock's defaults (120, and the fixtures' per-workspace plan limits).
    rate_limit: int | None = None
    seed: int = 0  # deterministic ids
    self_check: bool = True  # every response validated against the document's closed schemas
    clock: str | None = DEFAULT_CLOCK  # frozen at this instant; None: wall time
    journal_size: int = 1000
    # Unknown query parameters: ignored (as the real service does) and journaled by default;
    # strict_params refuses them with 400; fail_on_ignored_params fails the test that sent one.
    strict_params: bool = False
    fail_on_ignored_params: bool = False
    # Custom tools' code runs for real (engine/toolexec.py): the user's own tests, in process.
    run_tool_code: bool = True
    # Fail the test, at teardown, that caused a 404 for an unknown route, a 405 or a 5xx
    # (faults and stubs it planted aside): pytest-httpserver's check_assertions (W2).
    strict_requests: bool = False
    base_url: str | None = None  # a real server: the mock is not started
    # Shared state (redis://HOST:PORT/DB): the mock is one worker of a mock kept in Redis.
    state: str | None = None
    state_namespace: str | None = None  # None: a fresh one per session (deleted at its end)
    remote: Mapping[str, str | None] = field(default_factory=dict)  # tokens/workspaces there
    # The progression mode of every kind in each test's session (immediate, time, manual);
    # None: the mock's default (time, DECISIONS P1).
    progression: str | None = None

    def replace(self, **changes: Any) -> MockApiConfig:
        if "fixtures" in changes:
            changes["fixtures"] = _as_paths(changes["fixtures"])
        return dataclasses.replace(self, **changes)

    @property
    def real_server(self) -> bool:
        return self.base_url is not None


def _as_paths(value: Any, base: Path | None = None) -> tuple[Path, ...]:
    if value is None:
        return ()
    items = [value] if isinstance(value, str | Path) else list(value)
    out = []
    for item in items:
        if item == "default":  # the packaged fixtures, to overlay your own on top of them
            out.append(default_fixtures_dir())
            continue
        path = Path(item)
        if base is not None and not path.is_absolute():
            path = base / path
        out.append(path.resolve())
    return tuple(out)


def add_options(parser: pytest.Parser) -> None:
    """The plugin's command-line options and ini settings."""
    group = parser.getgroup("mock_api", "Workspace API mock (mock_api fixture)")
    group.addoption("--mock-api-fixtures", action="append", default=None, metavar="DIR",
                    help="fixture directory for mock_api (repeat to overlay)")
    group.addoption("--mock-api-rate-limit", type=int, default=None, metavar="N",
                    help="requests per minute per workspace (0: no limits)")
    group.addoption("--mock-api-seed", type=int, default=None, help="seed for generated ids")
    group.addoption("--mock-api-self-check", choices=("on", "off"), default=None,
                    help="validate every mock response against the document (default on)")
    group.addoption("--mock-api-run-tool-code", choices=("on", "off"), default=None,
                    help="run custom tools' code for real (default on; off: deterministic "
                    "answers that say nothing ran)")
    group.addoption("--mock-api-clock", default=None, metavar="ISO|real",
                    help=f"frozen start instant of the mock clock (default {DEFAULT_CLOCK}); "
                         "'real' follows wall time")
    group.addoption("--mock-api-strict-params", action="store_true", default=None,
                    help="refuse unknown query parameters with 400 (default: ignore them)")
    group.addoption("--mock-api-fail-on-ignored-params", action="store_true", default=None,
                    help="fail a test that sent a query parameter the mock ignored")
    group.addoption("--mock-api-strict-requests", action="store_true", default=None,
                    help="fail a test whose requests answered 404 for an unknown route, 405 "
                         "or 5xx (injected faults aside)")
    group.addoption("--mock-api-state", default=None, metavar="redis://HOST:PORT/DB",
                    help="keep the mock's state in Redis (env MOCK_API_STATE)")
    group.addoption("--mock-api-state-namespace", default=None, metavar="NAME",
                    help="its namespace (default: a fresh one per session; env "
                         "MOCK_API_STATE_NAMESPACE)")
    group.addoption("--mock-api-base-url", default=None, metavar="URL",
                    help="run mock_api tests against this real server (env MOCK_API_BASE_URL)")
    group.addoption("--mock-api-container", default=None, metavar="IMAGE",
                    help="run mock_api against the mock's container image (Testcontainers, the "
                         "containers extra): one container for the run, each test in its own "
                         "session (env MOCK_API_CONTAINER)")
    group.addoption("--mock-api-server", default=None, metavar="URL",
                    help="run mock_api against this running mock (`serve`, a CI service "
                         "container): each test in its own session, every helper over its "
                         "control API (env MOCK_API_SERVER)")
    group.addoption("--mock-api-control-token", default=None, metavar="TOKEN",
                    help="the running mock's --control-token, sent as X-Mock-Control-Token "
                         "(env MOCK_API_CONTROL_TOKEN)")
    group.addoption("--mock-api-share-server", action="store_true", default=None,
                    help="under pytest-xdist: one mock server (in the controller) shared by "
                         "every worker, each test in its own session")
    for name, (option, env) in REMOTE_SETTINGS.items():
        group.addoption(option, default=None, help=f"real-server mode: {name} (env {env})")
    parser.addini("mock_api_fixtures", "fixture directories for mock_api", type="paths",
                  default=[])
    parser.addini("mock_api_rate_limit", "requests per minute per workspace", default="")
    parser.addini("mock_api_seed", "seed for generated ids", default="")
    parser.addini("mock_api_self_check", "validate mock responses (default true)", type="bool",
                  default=True)
    parser.addini("mock_api_run_tool_code", "run custom tools' code for real (default true)",
                  type="bool", default=True)
    parser.addini("mock_api_clock", "frozen start instant, or 'real'", default="")
    parser.addini("mock_api_strict_params", "refuse unknown query parameters with 400",
                  type="bool", default=False)
    parser.addini("mock_api_fail_on_ignored_params",
                  "fail a test that sent a query parameter the mock ignored", type="bool",
                  default=False)
    parser.addini("mock_api_strict_requests",
                  "fail a test whose requests answered 404 (unknown route), 405 or 5xx",
                  type="bool", default=False)
    parser.addini("mock_api_base_url", "run against this real server instead", default="")
    parser.addini("mock_api_container", "run mock_api against this image in a container",
                  default="")
    parser.addini("mock_api_server", "run mock_api against this running mock (its URL)",
                  default="")
    parser.addini("mock_api_control_token", "that mock's control token", default="")
    parser.addini("mock_api_share_server", "under xdist, workers share one mock server",
                  type="bool", default=False)
    parser.addini("mock_api_state", "keep the mock's state in Redis: redis://HOST:PORT/DB",
                  default="")
    parser.addini("mock_api_state_namespace", "namespace of that state in Redis", default="")
    parser.addini("mock_api_progression", "progression mode of runs, executions, messages and "
                  "files in each test's session: immediate, time (default) or manual",
                  default="")


# What config_from_options reads besides options and ini (fixed for a pytest run): the
# environment, and the working directory that relative --mock-api-fixtures paths are under.
_ENV_SETTINGS = ("MOCK_API_STATE", "MOCK_API_STATE_NAMESPACE", "MOCK_API_BASE_URL",
                 *(env for _, env in REMOTE_SETTINGS.values()))
_CONFIG_KEY = pytest.StashKey[tuple[tuple[str | None, ...], MockApiConfig]]()


def config_from_options(pytestconfig: pytest.Config) -> MockApiConfig:
    """The configuration from options, ini and environment; worked out once per run (about
    0.2 ms, for every test) while the environment and working directory stay the same."""
    key = (os.getcwd(), *(os.environ.get(name) for name in _ENV_SETTINGS))
    found = pytestconfig.stash.get(_CONFIG_KEY, None)
    if found is not None and found[0] == key:
        return found[1]
    config = _read_config(pytestconfig)
    pytestconfig.stash[_CONFIG_KEY] = (key, config)
    return config


def _read_config(pytestconfig: pytest.Config) -> MockApiConfig:
    def pick(option: str, ini: str) -> Any:
        value = pytestconfig.getoption(option)
        if value is not None:
            return value
        value = pytestconfig.getini(ini)
        return value if value not in ("", None, []) else None

    config = MockApiConfig()
    fixtures = pytestconfig.getoption("--mock-api-fixtures")
    if fixtures:
        config = config.replace(fixtures=_as_paths(fixtures, Path.cwd()))
    elif pytestconfig.getini("mock_api_fixtures"):
        config = config.replace(fixtures=_as_paths(pytestconfig.getini("mock_api_fixtures")))
    rate = pick("--mock-api-rate-limit", "mock_api_rate_limit")
    if rate is not None:
        config = config.replace(rate_limit=int(rate))
    seed = pick("--mock-api-seed", "mock_api_seed")
    if seed is not None:
        config = config.replace(seed=int(seed))
    check = pytestconfig.getoption("--mock-api-self-check")
    config = config.replace(self_check=(check == "on") if check is not None
                            else bool(pytestconfig.getini("mock_api_self_check")))
    run = pytestconfig.getoption("--mock-api-run-tool-code")
    config = config.replace(run_tool_code=(run == "on") if run is not None
                            else bool(pytestconfig.getini("mock_api_run_tool_code")))
    clock = pick("--mock-api-clock", "mock_api_clock")
    if clock is not None:
        config = config.replace(clock=None if clock == "real" else clock)
    for name in ("strict_params", "fail_on_ignored_params", "strict_requests"):
        flag = pytestconfig.getoption(f"--mock-api-{name.replace('_', '-')}")
        config = config.replace(**{name: bool(flag or pytestconfig.getini(f"mock_api_{name}"))})
    progression = pytestconfig.getini("mock_api_progression")
    if progression:
        config = config.replace(progression=_progression_mode(progression,
                                                              "ini mock_api_progression"))
    state = pick("--mock-api-state", "mock_api_state") or os.environ.get("MOCK_API_STATE")
    if state:
        namespace = (pick("--mock-api-state-namespace", "mock_api_state_namespace")
                     or os.environ.get("MOCK_API_STATE_NAMESPACE"))
        config = config.replace(state=state, state_namespace=namespace)
    base_url = (pytestconfig.getoption("--mock-api-base-url") or os.environ.get("MOCK_API_BASE_URL")
                or pytestconfig.getini("mock_api_base_url") or None)
    if base_url:
        remote = {name: pytestconfig.getoption(option) or os.environ.get(env)
                  for name, (option, env) in REMOTE_SETTINGS.items()}
        config = config.replace(base_url=base_url.rstrip("/"), remote=remote)
    return config



class MockApiWarning(UserWarning):
    """Something asked of `mock_api` that cannot apply (shown in the test report's warnings)."""


# What only the mock can do: set against a real server, they cannot apply (decision U4).
_MOCK_ONLY = ("fixtures", "rate_limit", "seed", "clock", "journal_size", "strict_params",
              "fail_on_ignored_params", "strict_requests", "state", "progression")


def check_real_server(config: MockApiConfig) -> None:
    """Real-server mode: stop without a primary workspace (requests would go out with
    `workspace_id=""`), and warn of each mock-only setting that cannot apply."""
    if not config.remote.get("primary"):
        option, variable = REMOTE_SETTINGS["primary"]
        pytest.exit(f"mock_api against the real server at {config.base_url} needs its "
                    f"workspace: give {option} ID (or set {variable})", returncode=4)
    default = MockApiConfig()
    for name in _MOCK_ONLY:
        value = getattr(config, name)
        if value != getattr(default, name):
            warnings.warn(MockApiWarning(
                f"mock_api: {name}={value!r} cannot apply: this run targets the real server "
                f"at {config.base_url}, whose {name.replace('_', ' ')} the tests do not set"),
                stacklevel=2)


def with_marker(config: MockApiConfig, marker: pytest.Mark | None, test_dir: Path) -> MockApiConfig:
    """`config` with a test's `@pytest.mark.mock_api(...)` applied (relative fixture
    directories are under the test's directory)."""
    if marker is None:
        return config
    if marker.args:
        raise pytest.UsageError("@pytest.mark.mock_api takes keyword arguments only")
    unknown = set(marker.kwargs) - set(MARKER_FIELDS)
    if unknown:
        raise pytest.UsageError(f"@pytest.mark.mock_api: unknown {sorted(unknown)}; "
                                f"known: {', '.join(MARKER_FIELDS)}")
    changes = dict(marker.kwargs)
    if "fixtures" in changes:
        changes["fixtures"] = _as_paths(changes["fixtures"], test_dir)
    if changes.get("clock") == "real":
        changes["clock"] = None
    if changes.get("progression") is not None:
        changes["progression"] = _progression_mode(changes["progression"],
                                                   "@pytest.mark.mock_api(progression=...)")
    return config.replace(**changes)


def _progression_mode(value: Any, where: str) -> str:
    if value not in PROGRESSION_MODES:
        raise pytest.UsageError(f"{where}: {value!r} is not one of "
                                f"{', '.join(PROGRESSION_MODES)}")
    return str(value)
