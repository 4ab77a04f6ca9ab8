"""Rate-limit probe (only with --rate-limit-probe): does the target say 429 properly?

Sends a cheap workspace-scoped read, unpaced and without waiting out 429s, until a 429 arrives,
at most the documented default (120/minute) plus a margin. The 429 must carry `Retry-After`
(documented) in whole seconds >= 1 (reference) and an `{error}` body. Runs last: it spends the
workspace's window, and the other checks would then only wait.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .checks import error_shape_violation
from .client import ConformClient
from .registry import declare, fail, routine
from .violations import Exchange, Severity

if TYPE_CHECKING:
    from .gate import Gate

__all__ = ["DOCUMENTED_LIMIT", "probe_rate_limit"]

DOCUMENTED_LIMIT = 120  # requests per minute per workspace, by default (documented)
MARGIN = 40
declare("ratelimit_retry_after", family="rate-limit", option="ratelimit", proofs=[
    ("a 429 carries `Retry-After`", "429 without Retry-After")])
declare("ratelimit_429", family="rate-limit", option="ratelimit", proofs=[
    ("a burst past the documented 120/minute meets a 429 (a warning: a workspace may have a "
     "higher limit; fails under `--strict`)", "rate limit never enforced")])

PROBES = ("listWorkspaceRoles", "listSkills", "listAgents")


@routine("ratelimit", "burst")
def probe_rate_limit(gate: Gate) -> None:
    assert gate.discovery is not None
    op = next((gate.doc.op(o) for o in PROBES if gate.discovery.ready(gate.doc.op(o))), None)
    if op is None:
        gate.note("rate-limit probe skipped: no cheap read is reachable")
        return
    params = gate.discovery.ready(op) or {}
    query = dict(params.get("query", {}))
    if op.paginated:
        query["limit"] = 1
    gate.progress(f"ratelimit   {op.operation_id} (up to {DOCUMENTED_LIMIT + MARGIN} requests)")
    # Its own client: unpaced and passing 429s through, but counted in the same budget.
    client = ConformClient(gate.config.base_url, gate.pacer, paced=False, retry_429=False,
                           timeout=gate.config.request_timeout)
    path = op.path
    for name, value in params.get("path", {}).items():
        path = path.replace("{" + name + "}", str(value))
    try:
        for sent in range(1, DOCUMENTED_LIMIT + MARGIN + 1):
            exchange = client.request(op.method, path, token=gate.config.token, params=query)
            gate.count("ratelimit")
            if exchange.status == 429:
                _check_429(gate, op.operation_id, exchange)
                gate.progress(f"  429 after {sent} requests")
                return
        fail(gate, "ratelimit_429", op,
             f"no 429 after {DOCUMENTED_LIMIT + MARGIN} requests in a burst (the documented "
             f"default is {DOCUMENTED_LIMIT}/minute; a workspace may have a higher limit)",
             exchange, severity=Severity.WARNING)
    finally:
        client.close()


def _check_429(gate: Gate, operation_id: str, exchange: Exchange) -> None:
    headers = {k.lower(): v for k, v in exchange.response_headers.items()}
    retry_after = headers.get("retry-after")
    if retry_after is None:
        fail(gate, "ratelimit_retry_after", operation_id, "a 429 without a Retry-After header",
             exchange, severity=Severity.ERROR)
    elif not retry_after.strip().isdigit() or int(retry_after) < 1:
        fail(gate, "ratelimit_retry_after", operation_id,
             f"Retry-After {retry_after!r} is not whole seconds >= 1", exchange,
             severity=Severity.WARNING)
    violation = error_shape_violation(gate.doc, gate.doc.op(operation_id), exchange)
    if violation is not None:
        gate.add(violation)
