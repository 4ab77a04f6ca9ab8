"""The conformance gate: fuzz any implementation of the API against the document.

`python -m mockserver conform --base-url URL --token TOKEN ...` (see `cli.py`), or from Python
`mockserver.conform.run(GateConfig(...))`, or from pytest (`mockserver.conform.suite`).
Built on schemathesis' phases and checks plus checks of our own for what schemas cannot say:
error shapes, pagination, the authentication matrix, state rules and rate limits.

The conformance gate (`mockserver/conform/`)
--------------------------------------------

The gate knows nothing of the mock: it speaks HTTP to any base URL. `runner.py` orders a run:
`discovery.py` finds real ids by following the document's links; `phases.py` drives
schemathesis through `client.py`, which paces requests, caps their number and waits out 429s:
one engine run for the examples, coverage and fuzzing phases, path ids pinned to discovered
records, and one for the stateful phase, whose ids come from the links (a create's follow-up
reaches the record created). Then come our own checks: `checks.py` (error shape),
`pagination.py`, the laws (promises derived from the document's `x-order`, `x-filter` and
defaults, on every operation they apply to: `laws.py` for reads, `law_hierarchy.py`, and with
writes `law_patches.py`, `law_creates.py`, `law_failed_writes.py`, over `law_walk.py`,
`bodies.py` and `records.py`), `auth_matrix.py`, `state_rules.py` and `ratelimit_probe.py`.

One registry holds them (`registry.py`, after schemathesis' `@check` registry): each module
declares its checks (`declare`: name, family, `--checks` option, needs writes, what it checks
and the planted defect that proves it) and registers its routines (`@routine(step, name)`),
and reports every failure through one helper (`fail`: the family's violation, severity from
provenance; an undeclared check name is refused) and skips through one exception (`Skip`).
`catalogue.py` imports every such module, so the registry is complete wherever the package is
imported; the runner runs each step's routines from it, `--checks` takes its choices from it,
and the README's catalogue is its rendering. Dependencies point one way: `registry.py` and
`violations.py` at the bottom, the check modules over them, `catalogue.py`/`cli.py` on top; an
import-linter contract (`acyclic_siblings` on `mockserver.conform`) fails any cycle among the
gate's modules. schemathesis' `negative_data_rejection` takes each
operation's documented 4xx as refusals, and its failures are re-checked on the request sent
(`wire.py`) before they are reported. Every status answered is recorded for the status
coverage of the report. Each failure is a
`Violation` (`violations.py`, an `AssertionError` carrying the request, a curl command and a
severity taken from the provenance in `document.py`). `report.py` prints the summary and
writes JUnit and JSON. `tests/conform/` runs the gate against the mock and against broken
variants of it (`tests/conform/broken.py`), one planted defect per check.

The document is also checked the way its users consume it: Redocly CLI lints it beside
Spectral (`scripts/test`), and `tests/clients/` generates clients from it
(openapi-python-client, openapi-typescript, openapi-generator `python` and `typescript-fetch`,
once per test session through a file lock shared by xdist workers, into pytest's temporary
directory) and drives every operation through them (`tests/clients/cases.py`: one case per
operation).

Every request of every family goes through one `PacedAdapter` and so past `Pacer.watch`: the
`Gate` counts requests per family (`gate.family`, set by the runner per step) and turns any
5xx or transport error into one `server_error` per operation. The pacer also holds the stop
(`--max-requests`, `--max-time`, SIGINT/SIGTERM through `Pacer.stop`): the next request raises
`RunStopped`, the runner records what did not run, and `report.py` gives the verdict (PASS 0,
FAIL 1, INCOMPLETE 3). `plan.py` prints the plan and its estimate before the first check;
`export.py` writes failures as standalone pytest files (`--export`).
"""

from __future__ import annotations

from . import catalogue  # noqa: F401  (every check and routine registered, wherever imported)
from .gate import GateConfig
from .report import RunResult
from .runner import ConfigurationError, run
from .violations import Severity, Violation

__all__ = ["ConfigurationError", "GateConfig", "RunResult", "Severity", "Violation", "run"]
