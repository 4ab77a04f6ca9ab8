"""Coverage of the API by a suite: what the requests the mock journaled exercised of the
document (decisions W8 to W10), as TraceCov reports it for a schema. `pytest
--mock-api-coverage[=PATH]` collects every test's journal; `GET /__mock__/coverage` reports
a session's.

Four dimensions, each `covered` of `total` items:

- operations: each operation of the document called at least once;
- parameters: each documented query parameter of an operation, and each top-level property
  of its JSON request body, sent at least once (path parameters are sent by every call);
- enum values: each value of an `enum` in a query parameter or request body sent, and in a
  success response's body received (from the state's own answers only);
- statuses: each documented status of an operation seen. A status seen only in answers a
  fault, stub or robustness plan gave is listed as such (`only_injected`): the client met it
  because the test planted it.

The headline `percent` is all covered items over all items. Entries are journal entries as
dicts (`JournalEntry.to_dict()`, or a test's `RecordedRequest.as_entry()`): `method`, `path`,
`query`, `body`, `status`, `response_body`, `operation_id`, `fault`, `variations`.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from ..openapi.spec import Operation, Spec

__all__ = ["coverage_markdown", "coverage_report"]

Path = tuple[str, ...]  # keys into a JSON value; "[]" for every item of an array


def _enum_paths(spec: Spec, schema: Any, prefix: Path = (), seen: frozenset[str] = frozenset(),
                out: dict[Path, list[Any]] | None = None) -> dict[Path, list[Any]]:
    """Where a schema holds `enum`s: {path: values} (refs followed once per branch)."""
    out = {} if out is None else out
    if not isinstance(schema, dict) or len(prefix) > 12:
        return out
    ref = schema.get("$ref")
    if isinstance(ref, str):
        if ref in seen:
            return out
        return _enum_paths(spec, spec.resolve(schema), prefix, seen | {ref}, out)
    if isinstance(schema.get("enum"), list):
        values = out.setdefault(prefix, [])
        values += [v for v in schema["enum"] if v not in values and v is not None]
    for key in ("allOf", "anyOf", "oneOf"):
        for sub in schema.get(key) or ():
            _enum_paths(spec, sub, prefix, seen, out)
    for name, sub in (schema.get("properties") or {}).items():
        _enum_paths(spec, sub, (*prefix, name), seen, out)
    if isinstance(schema.get("items"), dict):
        _enum_paths(spec, schema["items"], (*prefix, "[]"), seen, out)
    return out


def _values_at(value: Any, path: Path) -> Iterator[Any]:
    if not path:
        if isinstance(value, (str, int, float, bool)):
            yield value
        return
    head, rest = path[0], path[1:]
    if head == "[]":
        if isinstance(value, list):
            for item in value:
                yield from _values_at(item, rest)
    elif isinstance(value, dict) and head in value:
        yield from _values_at(value[head], rest)


def _query_values(raw: Any) -> list[str]:
    values = raw if isinstance(raw, list) else [raw]
    return [part for v in values for part in str(v).split(",")]


def _name(path: Path) -> str:
    return ".".join(path).replace(".[]", "[]")


def _count(covered: int, total: int) -> dict[str, Any]:
    return {"covered": covered, "total": total,
            "percent": round(100.0 * covered / total, 1) if total else 100.0}


class _OperationCoverage:
    def __init__(self, spec: Spec, op: Operation) -> None:
        self.op = op
        self.query = [p.name for p in op.parameters if p.location == "query"]
        body = spec.resolve(op.body_schema) if op.body_schema else {}
        self.body_fields = list((body or {}).get("properties") or {})
        self.sent_enums: dict[str, list[Any]] = {}
        for p in op.parameters:
            if p.location == "query":
                for path, values in _enum_paths(spec, p.schema).items():
                    if path in ((), ("[]",)):  # the value, or each item of a list
                        self.sent_enums[f"query.{p.name}"] = values
        self.body_enums = _enum_paths(spec, op.body_schema) if op.body_schema else {}
        for path, values in self.body_enums.items():
            self.sent_enums[_name(("body", *path))] = values
        self.received_enums: dict[Path, list[Any]] = {}
        for status in sorted(op.responses):
            if 200 <= status < 300:
                _enum_paths(spec, op.response_schema(status), (), frozenset(),
                            self.received_enums)
        self.calls = 0
        self.statuses: Counter[int] = Counter()
        self.injected: Counter[int] = Counter()
        self.sent_params: set[str] = set()
        self.sent_body: set[str] = set()
        self.sent: dict[str, set[Any]] = defaultdict(set)
        self.received: dict[str, set[Any]] = defaultdict(set)

    def add(self, entry: Mapping[str, Any]) -> None:
        self.calls += 1
        status = int(entry["status"])
        self.statuses[status] += 1
        planted = bool(entry.get("fault") or entry.get("variations"))
        if planted:
            self.injected[status] += 1
        query = entry.get("query") or {}
        for name in self.query:
            if name in query:
                self.sent_params.add(name)
                key = f"query.{name}"
                if key in self.sent_enums:
                    self.sent[key].update(_query_values(query[name]))
        body = entry.get("body")
        if isinstance(body, dict):
            self.sent_body.update(k for k in body if k in self.body_fields)
            for path in self.body_enums:
                self.sent[_name(("body", *path))].update(_values_at(body, path))
        if not planted and 200 <= status < 300:
            for path in self.received_enums:
                self.received[_name(path)].update(_values_at(entry.get("response_body"), path))

    def report(self) -> dict[str, Any]:
        op = self.op
        documented = sorted(op.responses)
        seen = sorted(self.statuses)
        own = {s for s in seen if self.statuses[s] > self.injected[s]}
        enums: dict[str, Any] = {}
        for key, values in self.sent_enums.items():
            enums[key] = {"documented": values,
                          "sent": [v for v in values if str(v) in {str(s) for s in self.sent[key]}]}
        for path, values in self.received_enums.items():
            key = _name(path)
            enums[f"response.{key}"] = {"documented": values,
                                        "received": [v for v in values if v in self.received[key]]}
        return {
            "operation_id": op.operation_id, "method": op.method, "path": op.path,
            "calls": self.calls,
            "statuses": {
                "documented": documented,
                "seen": {str(s): self.statuses[s] for s in seen},
                "injected": {str(s): self.injected[s] for s in seen if self.injected[s]},
                "never_seen": [s for s in documented if s not in self.statuses],
                "only_injected": [s for s in seen if s not in own and s in op.responses],
                "undocumented_seen": [s for s in seen if s not in op.responses],
            },
            "parameters": {"documented": self.query,
                           "sent": [p for p in self.query if p in self.sent_params]},
            "body_fields": {"documented": self.body_fields,
                            "sent": [f for f in self.body_fields if f in self.sent_body]},
            "enums": enums,
        }


def coverage_report(spec: Spec, entries: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """The coverage of the document's operations by these journal entries (module doc)."""
    ops = {op.operation_id: _OperationCoverage(spec, op) for op in spec.operations}
    unmatched: Counter[tuple[str, str, int]] = Counter()
    requests = 0
    for entry in entries:
        requests += 1
        found = ops.get(entry.get("operation_id") or "")
        if found is None:
            unmatched[(entry["method"], entry["path"], int(entry["status"]))] += 1
        else:
            found.add(entry)
    operations = [o.report() for o in ops.values()]
    called = sum(1 for o in operations if o["calls"])
    params = sum(len(o["parameters"]["documented"]) + len(o["body_fields"]["documented"])
                 for o in operations)
    params_sent = sum(len(o["parameters"]["sent"]) + len(o["body_fields"]["sent"])
                      for o in operations)
    enum_total = sum(len(e["documented"]) for o in operations for e in o["enums"].values())
    enum_covered = sum(len(e.get("sent", e.get("received", [])))
                       for o in operations for e in o["enums"].values())
    statuses = sum(len(o["statuses"]["documented"]) for o in operations)
    statuses_seen = sum(len(o["statuses"]["documented"]) - len(o["statuses"]["never_seen"])
                        for o in operations)
    totals = {"operations": _count(called, len(operations)),
              "parameters": _count(params_sent, params),
              "enum_values": _count(enum_covered, enum_total),
              "statuses": _count(statuses_seen, statuses)}
    covered = sum(t["covered"] for t in totals.values())
    total = sum(t["total"] for t in totals.values())
    info = spec.document.get("info", {})
    return {
        "document": {"title": info.get("title"), "version": info.get("version")},
        "requests": requests,
        "percent": _count(covered, total)["percent"],
        "totals": totals,
        "operations": operations,
        "unmatched": [{"method": m, "path": p, "status": s, "count": n}
                      for (m, p, s), n in sorted(unmatched.items())],
    }


def _codes(codes: Iterable[Any]) -> str:
    return ", ".join(map(str, codes)) or "-"


def _flags(operation: Mapping[str, Any], status: int) -> str:
    st = operation["statuses"]
    flags = []
    if st["injected"].get(str(status)) == st["seen"][str(status)]:
        flags.append("injected")
    if status in st["undocumented_seen"]:
        flags.append("undocumented")
    return f" ({', '.join(flags)})" if flags else ""


def coverage_markdown(report: Mapping[str, Any]) -> str:
    """The report as Markdown, fit for a CI job summary: the totals, the operations called
    (statuses seen, never seen, only injected), those never called, unmatched requests."""
    doc = report["document"]
    lines = [f"# API coverage: {doc.get('title')} {doc.get('version')}", "",
             f"**{report['percent']}%** of the document exercised by {report['requests']} "
             "requests.", "", "| dimension | covered | total | % |", "|---|---:|---:|---:|"]
    for name, t in report["totals"].items():
        lines.append(f"| {name.replace('_', ' ')} | {t['covered']} | {t['total']} | "
                     f"{t['percent']} |")
    called = [o for o in report["operations"] if o["calls"]]
    lines += ["", f"## Operations called ({len(called)})", "",
              "| operation | request | calls | statuses seen | never seen | only injected | "
              "parameters sent |", "|---|---|---:|---|---|---|---|"]
    for o in called:
        st = o["statuses"]
        seen = ", ".join(f"{s} x{n}{_flags(o, int(s))}" for s, n in st["seen"].items())
        sent = o["parameters"]["sent"] + [f"body.{f}" for f in o["body_fields"]["sent"]]
        total = len(o["parameters"]["documented"]) + len(o["body_fields"]["documented"])
        lines.append(f"| `{o['operation_id']}` | `{o['method']} {o['path']}` | {o['calls']} | "
                     f"{seen} | {_codes(st['never_seen'])} | {_codes(st['only_injected'])} | "
                     f"{len(sent)}/{total}{': ' + ', '.join(sent) if sent else ''} |")
    never = [o for o in report["operations"] if not o["calls"]]
    lines += ["", f"## Operations never called ({len(never)})", ""]
    lines += [f"- `{o['operation_id']}` `{o['method']} {o['path']}`" for o in never] or ["none"]
    if report["unmatched"]:
        lines += ["", "## Requests no operation answers", ""]
        lines += [f"- `{u['method']} {u['path']}` -> {u['status']} x{u['count']}"
                  for u in report["unmatched"]]
    return "\n".join(lines) + "\n"
