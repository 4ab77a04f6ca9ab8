"""pytest options for the conformance suite (`-p mockserver.conform.plugin`).

Optional: the suite reads the same settings from the environment (CONFORM_BASE_URL,
CONFORM_TOKEN, CONFORM_READ_TOKEN, CONFORM_FOREIGN_TOKEN, CONFORM_WORKSPACE, CONFORM_ARGS).
"""

from __future__ import annotations

import pytest

OPTIONS = {
    "base_url": "--conform-base-url",
    "token": "--conform-token",
    "read_token": "--conform-read-token",
    "foreign_token": "--conform-foreign-token",
    "workspace": "--conform-workspace",
    "args": "--conform-args",
}


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("conform", "conformance gate (mockserver.conform.suite)")
    for dest, flag in OPTIONS.items():
        group.addoption(flag, dest=f"conform_{dest}", default=None,
                        help=f"overrides CONFORM_{dest.upper()}"
                        + (" (extra `conform` CLI arguments, e.g. '--allow-writes --strict')"
                           if dest == "args" else ""))
