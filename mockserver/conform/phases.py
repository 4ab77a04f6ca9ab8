"""schemathesis' own phases (examples, coverage, fuzzing, stateful through the document's
links) with its built-in checks and ours, against the target, and their failures as violations.

The engine is schemathesis' (`schemathesis.engine.from_schema(schema).execute()`), driven by a
configuration built here:
- only selected operations; without --allow-writes only reads (GETs and the read-only searches);
- `workspace_id` fixed to the workspace under test, and, in the examples, coverage and fuzzing
  phases, path parameters fixed to ids discovery found (so generated requests reach real
  records rather than a wall of 404s). The stateful phase runs apart, without those pins: a
  configured value wins over a link's, so a pinned id sent every link's request to the
  discovered record and never to the one a create had just made (a server losing created
  records passed `ensure_resource_availability`);
- one worker, and every request through the gate's `PacedAdapter` (pace, budget, 429 waits).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any
from unittest import mock

import requests
import schemathesis
from schemathesis.engine import events, from_schema

from . import checks as gate_checks
from .client import BudgetExhausted, PacedAdapter, WriteWithheld, mount
from .registry import declare, routine
from .violations import Exchange, SchemathesisViolation, Severity, Violation, severity_for
from .wire import invalid_part

if TYPE_CHECKING:
    from ..openapi.spec import Operation
    from .gate import Gate

__all__ = ["READ_ONLY_CHECKS", "WRITE_CHECKS", "run_phases"]

# unsupported_method sends other methods to each path: writes, so only with --allow-writes.
WRITE_CHECKS = ("unsupported_method",)
# Built-in checks that only look at responses, or send reads of their own.
READ_ONLY_CHECKS = (
    "not_a_server_error",
    "status_code_conformance",
    "content_type_conformance",
    "response_schema_conformance",
    "response_headers_conformance",
    "negative_data_rejection",
    "missing_required_header",
    "ignored_auth",
    "use_after_free",
    # schemathesis' ensure_resource_availability, less the 404 a workspace_id override that
    # does not hold the created record is documented to answer (checks.py).
    "conform_resource_availability",
    "conform_error_shape",
    # negative_data_rejection for the coverage phase, on the request as sent (checks.py).
    "conform_coverage_rejection",
)
declare("negative_data_rejection", family="schemathesis", option=None, proofs=[
    ("a request invalid on the wire is refused with a documented 4xx", "invalid limit accepted")])
declare("ensure_resource_availability", family="schemathesis", option=None, proofs=[
    ("a record a create answered with is found by the requests its links lead to (stateful "
     "phase)", "create keeps nothing")])
declare("response_schema_conformance", family="schemathesis", option=None, proofs=[
    ("responses match the document's schemas", "response misses a required property")])
for _name in ("status_code_conformance", "content_type_conformance",
              "response_headers_conformance", "missing_required_header", "ignored_auth",
              "use_after_free", "unsupported_method"):
    declare(_name, family="schemathesis", option=None, writes=_name in WRITE_CHECKS,
            doc="schemathesis' built-in check of that name")

# Gate checks reported under the name of the schemathesis check they stand in for.
REPORTED_AS = {"conform_resource_availability": "ensure_resource_availability",
               "conform_coverage_rejection": "negative_data_rejection"}


def rejection_statuses(gate: Gate, op: Operation) -> list[str]:
    """The statuses that refuse a request of `op`: every 4xx it documents but 429 (a rate
    limit says nothing about the request). 401/403/404 are among them: a refusal for any
    documented reason is a refusal."""
    return [str(status) for status in sorted(gate.doc.documented_statuses(op))
            if 400 <= status < 500 and status != 429]


UNIT_PHASES = ("examples", "coverage", "fuzzing")


def build_config(gate: Gate, *, stateful: bool = False) -> schemathesis.Config:
    """The configuration of one engine run: the unit phases asked for (examples, coverage,
    fuzzing), path ids pinned to discovered records; or, with `stateful`, the stateful phase
    alone, path ids left to the links (and to generation where a step follows none)."""
    config = gate.config
    assert gate.discovery is not None
    enabled = set(READ_ONLY_CHECKS) | (set(WRITE_CHECKS) if config.allow_writes else set())
    all_checks = set(READ_ONLY_CHECKS) | set(WRITE_CHECKS) | {
        "positive_data_acceptance", "object_level_authorization", "allow_header_conformance",
        "ensure_resource_availability"}
    selected = {op.operation_id for op in gate.operations(
        writes=None if config.allow_writes else False)}
    operations: list[dict[str, Any]] = []
    for op in gate.doc.operations:
        if op.operation_id not in selected:
            # Config-level, not `schema.include()`: schemathesis lets per-operation config
            # entries override a schema filter, so exclusion must live in the same place.
            operations.append({"include-operation-id": op.operation_id, "enabled": False})
            continue
        found = gate.discovery.params.get(op.operation_id, {})
        # The stateful phase addresses records through the links: a pinned id would win over
        # the link's value (schemathesis applies the configuration last), so a create's
        # follow-up would read the discovered record instead of the created one.
        path = {} if stateful else {f"path.{k}": v for k, v in found.get("path", {}).items()}
        if op.workspace_source == "path":
            path["path.id"] = gate.workspace
        entry: dict[str, Any] = {
            "include-operation-id": op.operation_id,
            # Rejection is any client-error status the operation documents (a 413 for an
            # oversized invalid body refuses it as surely as a 400 does).
            "checks": {"negative_data_rejection": {
                "expected-statuses": rejection_statuses(gate, op)}},
        }
        if path and op.method != "DELETE":
            # A DELETE keeps generated ids: fixing one would delete a record the rest of the
            # run reads (the stateful phase deletes what it created through the links).
            entry["parameters"] = path
        operations.append(entry)
    data: dict[str, Any] = {
        # too_slow is the one health check that depends on the machine's speed: a loaded
        # machine (xdist, a shared CI runner) failed an operation's generation that a quiet
        # one ran, so the same seed sent different requests.
        "suppress-health-check": ["too_slow"],
        "base-url": config.base_url,
        "headers": {"Authorization": f"Bearer {config.token}"},
        "workers": 1,
        "request-timeout": config.request_timeout,
        "parameters": {"query.workspace_id": gate.workspace,
                       # A create names its workspace in the body (createAgent, createSkill
                       # ...): in the stateful phase it is the workspace under test, so that
                       # creates succeed there and their links lead to the created records
                       # (generated, it was refused 403, or took a workspace seen in a
                       # response, writing outside the workspace under test). The unit phases
                       # keep generating it: their negative cases mutate it.
                       **({"body.workspace_id": gate.workspace} if stateful else {})},
        "phases": {name: {"enabled": name in config.phases
                          and (name == "stateful") == stateful}
                   for name in (*UNIT_PHASES, "stateful")},
        # No example database: a run depends on its seed alone. Hypothesis' default keeps
        # failing examples in ./.hypothesis and replays them first in later runs (and in
        # other processes sharing the directory, such as xdist workers), so the same seed
        # found different things depending on what ran before.
        "generation": {"max-examples": config.max_examples,
                       "database": config.hypothesis_database or "none"},
        "checks": {name: {"enabled": name in enabled} for name in sorted(all_checks)},
        "operations": operations,
    }
    if config.seed is not None:
        data["seed"] = config.seed
    return schemathesis.Config.from_dict(data)


def load_schema(gate: Gate, *, stateful: bool = False) -> Any:
    return schemathesis.openapi.from_path(gate.doc.path,
                                          config=build_config(gate, stateful=stateful))


@contextlib.contextmanager
def _paced_sessions(gate: Gate, on_exhausted: Any) -> Iterator[None]:
    """Every session schemathesis sends through gets the gate's adapter. It builds the engine's
    sessions in `engine.context.make_session`, and a fresh `SameHostRedirectsSession` for the
    requests it sends without credentials (`ignored_auth`'s probes, its auth inference) and
    for any call without a session; it offers no hook for the transport adapter, so both are
    wrapped for the length of the run (the narrowest way in). Before the second, those
    requests (about 180 in a full run) went unpaced, uncounted and unwatched for 5xx."""
    import schemathesis.engine.context as engine_context
    import schemathesis.transport.requests as transport

    original = engine_context.make_session

    guard = None if gate.config.allow_writes else gate.doc.read_request_guard()

    def adapter() -> PacedAdapter:
        made = PacedAdapter(gate.pacer, allow=guard)
        adapters.append(made)
        return made

    def make_session(*args: Any, **kwargs: Any) -> requests.Session:
        return mount(original(*args, **kwargs), adapter())

    class PacedSession(transport.SameHostRedirectsSession):
        def __init__(self) -> None:
            super().__init__()
            mount(self, adapter())

    adapters: list[PacedAdapter] = []
    previous = gate.pacer.on_exhausted
    gate.pacer.on_exhausted = on_exhausted
    try:
        with mock.patch.object(engine_context, "make_session", make_session), \
                mock.patch.object(transport, "SameHostRedirectsSession", PacedSession):
            yield
    finally:
        gate.pacer.on_exhausted = previous
        withheld = sum(adapter.withheld for adapter in adapters)
        if withheld:
            gate.note(f"read-only: {withheld} schemathesis request(s) that could write were not "
                      "sent (undeclared methods of the coverage phase; --allow-writes sends them)",
                      whose="run")


@routine("schemathesis", "phases")
def run_phases(gate: Gate) -> None:
    """The unit phases asked for in one engine run (ids pinned), then the stateful phase in
    another (ids from the links); a failure both runs find is reported once."""
    seen: set[tuple[str, str, str]] = set()
    runs = [stateful for stateful in (False, True)
            if any((name == "stateful") == stateful for name in gate.config.phases)]
    for stateful in runs:
        if gate.pacer.stop_reason:
            return
        _run_engine(gate, seen, stateful=stateful)


def _run_engine(gate: Gate, seen: set[tuple[str, str, str]], *, stateful: bool) -> None:
    gate.progress("schemathesis " + ("stateful phase (ids from the links)" if stateful else
                                     "unit phases (ids pinned to discovered records)"))
    schema = load_schema(gate, stateful=stateful)
    key = id(schema.raw_schema)
    gate_checks.GATE_SCHEMAS[key] = gate.doc
    stream = from_schema(schema).execute()

    def stop() -> None:
        stream.stop()  # the pacer holds the reason (budget, time, signal)

    try:
        with _paced_sessions(gate, stop):
            for event in stream:
                _on_event(gate, event, seen)
    finally:
        gate_checks.GATE_SCHEMAS.pop(key, None)


def _on_event(gate: Gate, event: Any, seen: set[tuple[str, str, str]]) -> None:
    if isinstance(event, (events.PhaseStarted, events.PhaseFinished)) \
            and not event.phase.is_enabled:
        return  # a phase this engine run leaves to the other (or one not asked for)
    if isinstance(event, events.PhaseStarted):
        gate.phase_started = time.monotonic()
        gate.progress(f"schemathesis phase {event.phase.name.value}")
    elif isinstance(event, events.PhaseFinished):
        took = time.monotonic() - gate.phase_started
        gate.progress(f"schemathesis phase {event.phase.name.value} done in {took:.1f}s")
    elif isinstance(event, events.ScenarioFinished):
        recorder = event.recorder
        if event.label:
            status = event.status.value
            if status == "error" and gate.pacer.withheld > gate.withheld_seen:
                # The only error a read-only run makes on purpose: a request that could
                # write, not sent (the coverage phase tries undeclared methods).
                status = "writes withheld (read-only run)"
            gate.withheld_seen = gate.pacer.withheld
            gate.progress(f"  {event.phase.value:<9} {event.label}: {status}")
        gate.count("schemathesis", len(recorder.cases))
        _observe(gate, recorder)
        for case_id, check_nodes in recorder.checks.items():
            for node in check_nodes:
                info = node.failure_info
                if info is None:
                    continue
                if node.name == "negative_data_rejection" and _in_coverage(recorder, case_id):
                    continue  # judged by conform_coverage_rejection on the request as sent
                if node.name == "not_a_server_error":
                    continue  # the gate's watch reports every 5xx once per operation
                found: Violation | None = _as_violation(
                    gate, recorder, case_id, REPORTED_AS.get(node.name, node.name), info.failure)
                if node.name == "negative_data_rejection" and found is not None:
                    found = recheck_rejection(gate, found, recorder, case_id)
                if found is None:
                    continue
                violation = found
                identity = (violation.operation or "", violation.check,
                            str(getattr(info.failure, "_unique_key", info.failure.title)))
                if identity in seen:
                    continue
                seen.add(identity)
                gate.add(violation)
    elif isinstance(event, events.NonFatalError):
        if isinstance(event.value, BudgetExhausted | WriteWithheld):
            return
        gate.note(f"schemathesis error on {event.label}: {event.info.title}: "
                  f"{event.info.message.splitlines()[0] if event.info.message else ''}")
    elif isinstance(event, events.FatalError):
        gate.note(f"schemathesis stopped: {event.exception}")


def _in_coverage(recorder: Any, case_id: str) -> bool:
    from schemathesis.generation.meta import CoveragePhaseData

    node = recorder.cases.get(case_id)
    meta = node.value.meta if node is not None else None
    return meta is not None and isinstance(meta.phase.data, CoveragePhaseData)


def _as_violation(gate: Gate, recorder: Any, case_id: str, check: str, failure: Any) -> Violation:
    if isinstance(failure, gate_checks.ErrorShapeViolation):
        return failure
    exception = getattr(failure, "exception", None)
    if isinstance(exception, Violation):
        return exception
    node = recorder.cases.get(case_id)
    case = node.value if node is not None else None
    op: Operation | None = None
    if case is not None:
        op = gate.doc.by_id.get(case.operation.definition.raw.get("operationId", ""))
    interaction = recorder.interactions.get(case_id)
    exchange = None
    status = None
    if interaction is not None:
        request = interaction.request
        headers = {k: (v[0] if isinstance(v, list) else v) for k, v in request.headers.items()}
        response = interaction.response
        status = response.status_code if response is not None else None
        exchange = Exchange(method=request.method, url=request.uri, headers=headers,
                            body=request.body or None, status=status,
                            response_text=_text(response))
    provenance = op.provenance if op is not None else None
    if op is not None:
        instance_path = getattr(failure, "instance_path", None)
        if instance_path is not None:
            provenance = gate.doc.response_provenance(op, status, list(instance_path))
    message = f"{failure.title}: {(failure.message or '').strip().splitlines()[0] if failure.message else ''}"
    return SchemathesisViolation(
        message.rstrip(": "), check=check,
        operation=op.operation_id if op is not None else None,
        severity=severity_for(provenance) if op is not None else Severity.ERROR,
        exchange=exchange, details={"failure": type(failure).__name__,
                                    "full_message": failure.message or ""},
    )


def _observe(gate: Gate, recorder: Any) -> None:
    """Status coverage from every response of the scenario (requests with a method the
    operation does not have, which the coverage phase sends, are not the operation's)."""
    for case_id, interaction in recorder.interactions.items():
        node = recorder.cases.get(case_id)
        response = interaction.response
        if node is None or response is None:
            continue
        operation = node.value.operation
        if interaction.request.method.upper() != operation.method.upper():
            continue
        gate.observe(operation.definition.raw.get("operationId", ""), response.status_code)


def recheck_rejection(gate: Gate, violation: Violation, recorder: Any,
                      case_id: str) -> Violation | None:
    """An "invalid request accepted" stands only if the request that went over the wire is
    invalid: None when it validates against the document (the mutation vanished in
    serialisation or shrinking), else the violation naming the invalid part and its rule."""
    interaction = recorder.interactions.get(case_id)
    op = gate.doc.by_id.get(violation.operation or "")
    if interaction is None or op is None:
        return violation
    request = interaction.request
    headers = {k: (v[0] if isinstance(v, list) else v) for k, v in request.headers.items()}
    invalid = invalid_part(gate.doc, op, request.method, request.uri, headers, request.body)
    if invalid is None:
        gate.count("rejection-rechecked")
        gate.progress(f"  dropped [negative_data_rejection] {op.operation_id}: the request sent "
                      "is valid against the document")
        return None
    status = violation.exchange.status if violation.exchange is not None else None
    violation.message = (f"{violation.message.split(':')[0]}: the request sent breaks the "
                         f"document at {invalid}, yet was answered {status} (a refusal is one "
                         f"of {', '.join(rejection_statuses(gate, op))})")
    violation.args = (violation.message,)
    violation.details["invalid_part"] = invalid.part
    violation.details["rule"] = invalid.rule
    return violation


def _text(response: Any) -> str:
    if response is None:
        return ""
    try:
        return str(response.text)
    except (UnicodeDecodeError, AttributeError):
        return ""
