"""The conformance gate: fuzz any implementation of the API against the document.

`python -m mockserver conform --base-url URL --token TOKEN ...` (see `cli.py`), or from Python
`mockserver.conform.run(GateConfig(...))`, or from pytest (`mockserver.conform.suite`).
Built on schemathesis' phases and checks plus checks of our own for what schemas cannot say:
error shapes, pagination, the authentication matrix, state rules and rate limits.
"""

from __future__ import annotations

from . import catalogue  # noqa: F401  (every check and routine registered, wherever imported)
from .gate import GateConfig
from .report import RunResult
from .runner import ConfigurationError, run
from .violations import Severity, Violation

__all__ = ["ConfigurationError", "GateConfig", "RunResult", "Severity", "Violation", "run"]
