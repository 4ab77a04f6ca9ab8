"""Fixtures: the mock (or a broken variant) served on a free port, and a gate runner."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any

import pytest

from mockserver.conform.cli import parse_config
from mockserver.conform.report import RunResult
from mockserver.conform.runner import run
from mockserver.engine.app import Config, MockApp
from mockserver.standalone.server import create_app

from .serve import serve

WRITE, READ, OTHER = "mock-write-token", "mock-read-token", "mock-other-token"
WORKSPACE = "ws_harborview"


@contextmanager
def served(*, rate_limit: int = 0, plant: Callable[[MockApp], None] | None = None,
           wrap: Callable[[Any], Any] | None = None,
           fixtures: list[Any] | None = None,
           **config: Any) -> Iterator[tuple[str, MockApp]]:
    """The mock (`config`: more of its `Config`, e.g. a frozen clock) on a free port."""
    mock = MockApp(Config(rate_limit=rate_limit, fixtures=list(fixtures or []), **config))
    if plant is not None:
        plant(mock)
    app: Any = create_app(mock=mock)
    if wrap is not None:
        app = wrap(app)
    with serve(app) as url:
        yield url, mock


def gate(url: str, *args: str, sleeps: list[float] | None = None) -> RunResult:
    """Run the gate like the CLI would, but fast: unpaced, no real sleeping, quiet."""
    config, _ = parse_config(["--base-url", url, "--token", WRITE, "--workspace", WORKSPACE,
                              "--rate", "0", "--seed", "1", "--quiet", *args])
    config.sleep = (sleeps.append if sleeps is not None else (lambda seconds: None))
    return run(config)


@pytest.fixture
def mock_url() -> Iterator[str]:
    with served() as (url, _):
        yield url


ServedFactory = Callable[..., AbstractContextManager[tuple[str, MockApp]]]


@pytest.fixture
def serve_mock() -> ServedFactory:
    return served
