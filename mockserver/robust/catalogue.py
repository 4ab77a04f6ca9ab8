"""What the document allows an answer to vary: per table field, the content kinds that apply
and their values; per operation, the tables its answers carry, whether it pages, and its
documented error statuses.

Everything here is read from the document (spec/openapi.yaml) and the store's table
definitions (data/tables.py); nothing is invented. A value offered for a kind is made from
the field's own constraints (enum, bounds, maxLength, format), never checked here against
the schema: the self-check (engine/selfcheck.py) is what proves every varied answer valid.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Any

from ..data.tables import TABLES, TableDef
from ..openapi.spec import Operation, Spec

__all__ = ["ANSWER_KINDS", "CONTENT_KINDS", "KINDS", "PAGING_KINDS", "Catalogue",
           "FieldFacts", "OperationFacts", "catalogue_for"]

CONTENT_KINDS = ("null", "absent", "empty-array", "one-item", "max-items", "empty-string",
                 "max-length", "unicode", "enum", "number-bound", "time-edge", "extra-field")
PAGING_KINDS = ("page-of-one", "empty-last-page")
ANSWER_KINDS = ("status", "rate-limit", "flaky", "slow", "drop")
KINDS = CONTENT_KINDS + PAGING_KINDS + ANSWER_KINDS
# Kinds whose item carries the new value (checked against `FieldFacts.values` when given).
VALUED_KINDS = ("max-length", "unicode", "enum", "number-bound", "time-edge")
# Kinds that only a reference (an id pointing at another record) may take.
_REFERENCE_KINDS = ("null", "absent")

# Non-ASCII text a client meets in the wild: right-to-left scripts, combining marks, emoji
# (with a zero-width joiner and a flag), CJK.
UNICODE_SAMPLES = (
    "שלום עולם",
    "مرحبا بالعالم",
    "Zoe\u0308 A\u030angstro\u0308m",
    "\U0001f680 Launch \U0001f469\u200d\U0001f4bb \U0001f1ef\U0001f1f5",
    "東京の顧客サポート",
)
# The edges of the document's timestamp format (UTC, milliseconds): the epoch, the last
# millisecond of a leap day, the 32-bit overflow, the last instant the format can write.
TIME_EDGES = ("1970-01-01T00:00:00.000Z", "2024-02-29T23:59:59.999Z",
              "2038-01-19T03:14:08.000Z", "9999-12-31T23:59:59.999Z")
DATE_EDGES = ("1970-01-01", "2024-02-29", "2038-01-19", "9999-12-31")
# Names a later version of the API might add, and values of each JSON type.
EXTRA_FIELDS: tuple[tuple[str, Any], ...] = (("beta_flags", {"enabled": True}), ("region", "eu-west"),
                ("priority_score", 0.75), ("labels_v2", []), ("deprecated_at", None),
                ("revision", 3))
MAX_ITEMS_CAP = 100  # an array bound larger than this is not filled (kept cheap)


def _nullable(schema: dict[str, Any]) -> bool:
    kind = schema.get("type")
    if kind == "null" or (isinstance(kind, list) and "null" in kind):
        return True
    return any(isinstance(s, dict) and s.get("type") == "null"
               for key in ("anyOf", "oneOf") for s in schema.get(key, ()))


def _types(schema: dict[str, Any]) -> set[str]:
    kind = schema.get("type")
    if isinstance(kind, str):
        return {kind}
    if isinstance(kind, list):
        return set(kind) - {"null"}
    return set()


@dataclass(frozen=True)
class FieldFacts:
    """One field of a table's records, as every schema of the table that lists it says."""

    table: str
    name: str
    schemas: tuple[dict[str, Any], ...]  # the field's schema in each (references resolved)
    required: bool  # required by some schema of the table
    reference: bool  # an id pointing at another record: only null or absent

    def _all(self, test: Any) -> bool:
        return all(test(s) for s in self.schemas)

    def _bound(self, key: str, pick: Any) -> Any:
        found = [s[key] for s in self.schemas if key in s]
        return pick(found) if found else None

    @property
    def plain_string(self) -> bool:
        """A string with no pattern, format, enum or const: any text fits."""
        return self._all(lambda s: _types(s) == {"string"} and not (
            {"pattern", "format", "enum", "const"} & set(s)))

    def kinds(self) -> tuple[str, ...]:
        """The content kinds that apply to this field (extra-field is per record, not here)."""
        return self._kinds

    @functools.cached_property
    def _kinds(self) -> tuple[str, ...]:
        found = []
        if self._all(_nullable):
            found.append("null")
        if not self.required:
            found.append("absent")
        if self.reference:
            return tuple(k for k in found if k in _REFERENCE_KINDS)
        if self._all(lambda s: _types(s) == {"array"}):
            if (self._bound("minItems", max) or 0) == 0:
                found.append("empty-array")
            if (self._bound("minItems", max) or 0) <= 1 <= (self._bound("maxItems", min) or 2):
                found.append("one-item")
            if (self._bound("maxItems", min) or MAX_ITEMS_CAP + 1) <= MAX_ITEMS_CAP and not any(
                    s.get("uniqueItems") for s in self.schemas):
                found.append("max-items")
        found += [kind for kind in VALUED_KINDS if self.values(kind)]
        if self.plain_string and (self._bound("minLength", max) or 0) == 0:
            found.append("empty-string")
        return tuple(k for k in CONTENT_KINDS if k in found)

    @functools.cached_property
    def _values(self) -> dict[str, tuple[Any, ...]]:
        return {kind: self._make(kind) for kind in VALUED_KINDS}

    def values(self, kind: str) -> tuple[Any, ...]:
        """The values a valued kind may give this field (empty: the kind does not apply)."""
        if self.reference:
            return ()
        return self._values.get(kind, ())

    def _make(self, kind: str) -> tuple[Any, ...]:
        shortest = self._bound("minLength", max) or 0
        longest = self._bound("maxLength", min)
        if kind == "max-length":
            if not self.plain_string or longest is None or longest > 100_000:
                return ()
            return (("Robust text \u00e9 " * (longest // 15 + 1))[:longest],)
        if kind == "unicode":
            if not self.plain_string:
                return ()
            cut = [s[:longest] if longest is not None else s for s in UNICODE_SAMPLES]
            return tuple(dict.fromkeys(s for s in cut if len(s) >= max(shortest, 1)))
        if kind == "enum":
            members = [s["enum"] for s in self.schemas if isinstance(s.get("enum"), list)]
            if not members or len(members) < len(self.schemas):
                return ()
            common = [v for v in members[0] if all(v in m for m in members[1:])]
            return tuple(v for v in common if v is not None)
        if kind == "number-bound":
            return self._number_bounds()
        if kind == "time-edge":
            return self._time_edges()
        return ()

    def _number_bounds(self) -> tuple[Any, ...]:
        if not self._all(lambda s: _types(s) in ({"integer"}, {"number"})):
            return ()
        bounds: list[Any] = []
        low, high = self._bound("minimum", max), self._bound("maximum", min)
        integer = self._all(lambda s: _types(s) == {"integer"})
        if low is None and integer and self._bound("exclusiveMinimum", max) is not None:
            low = self._bound("exclusiveMinimum", max) + 1
        if high is None and integer and self._bound("exclusiveMaximum", min) is not None:
            high = self._bound("exclusiveMaximum", min) - 1
        for bound in (low, high):
            if bound is not None and bound not in bounds:
                bounds.append(int(bound) if integer else bound)
        return tuple(bounds)

    def _time_edges(self) -> tuple[Any, ...]:
        formats = {s.get("format") for s in self.schemas}
        if formats == {"date-time"}:
            edges = TIME_EDGES
        elif formats == {"date"}:
            edges = DATE_EDGES
        else:
            return ()
        patterns = [re.compile(s["pattern"]) for s in self.schemas if "pattern" in s]
        return tuple(e for e in edges if all(p.search(e) for p in patterns))


@dataclass(frozen=True)
class OperationFacts:
    """What an operation's answers may vary."""

    operation: Operation
    tables: tuple[str, ...]  # tables whose records its success answer carries
    paged: bool  # a `cursor` parameter and a page (`data`, `next_cursor`, `has_more`)
    error_statuses: tuple[int, ...]  # documented errors a client may meet (not 429)
    rate_limited: bool  # 429 documented

    @property
    def operation_id(self) -> str:
        return self.operation.operation_id


# Statuses an operation documents that no client meets from the real service: the mock's
# session memory cap (507 is "mock only" in the document).
_MOCK_ONLY = frozenset((507,))


class Catalogue:
    """The document's facts for variations, computed once per document."""

    def __init__(self, spec: Spec) -> None:
        self.spec = spec
        self.components: dict[str, Any] = spec.document.get("components", {}).get("schemas", {})
        self._fields: dict[str, dict[str, FieldFacts]] = {}
        self.applies: dict[tuple[str, str], bool] = {}  # (kind, operation): plan.applies
        # (kinds, operations) -> the (kind, OperationFacts) pairs a draw picks from
        self.pairs: dict[tuple[tuple[str, ...], tuple[str, ...]], list[Any]] = {}
        self.operations = {op.operation_id: self._operation(op) for op in spec.operations}

    def deref(self, schema: Any) -> dict[str, Any]:
        seen = 0
        while isinstance(schema, dict) and "$ref" in schema and seen < 32:
            schema = self.components.get(schema["$ref"].rsplit("/", 1)[-1], {})
            seen += 1
        return schema if isinstance(schema, dict) else {}

    def _names(self, schema: Any, found: set[str], depth: int = 0) -> None:
        """The component schemas reachable from `schema` (through refs and sub-schemas)."""
        if depth > 12:
            return
        if isinstance(schema, list):
            for item in schema:
                self._names(item, found, depth + 1)
        elif isinstance(schema, dict):
            ref = schema.get("$ref")
            if isinstance(ref, str):
                name = ref.rsplit("/", 1)[-1]
                if name not in found:
                    found.add(name)
                    self._names(self.components.get(name), found, depth + 1)
            for key, value in schema.items():
                if key not in ("$ref", "example", "examples", "enum", "const", "default"):
                    self._names(value, found, depth + 1)

    def _operation(self, op: Operation) -> OperationFacts:
        names: set[str] = set()
        self._names(op.response_schema(op.success_status), names)
        tables = tuple(t.name for t in TABLES.values()
                       if not t.key.startswith("_") and set(t.schemas) & names)
        success = self.deref(op.response_schema(op.success_status) or {})
        page = {"data", "next_cursor", "has_more"} <= set(success.get("properties", {}))
        errors = tuple(s for s in sorted(op.responses)
                       if s >= 400 and s != 429 and s not in _MOCK_ONLY)
        return OperationFacts(op, tables, op.paginated and page, errors, 429 in op.responses)

    def fields(self, table: str) -> dict[str, FieldFacts]:
        """The variable fields of a table's records (not its key, workspace, derived or
        internal fields)."""
        found = self._fields.get(table)
        if found is None:
            found = self._fields[table] = self._table_fields(TABLES[table])
        return found

    def _table_fields(self, table: TableDef) -> dict[str, FieldFacts]:
        schemas = [self.deref({"$ref": f"#/components/schemas/{name}"})
                   for name in table.schemas]
        names: dict[str, None] = {}
        for schema in schemas:
            names.update(dict.fromkeys(schema.get("properties", {})))
        fixed = {table.key, table.workspace_field or "", *table.derived}
        out = {}
        for name in names:
            if name in fixed or name.startswith("_"):
                continue
            listed = [s for s in schemas if name in s.get("properties", {})]
            reference = name in table.refs or name == "id" or name.endswith("_id")
            out[name] = FieldFacts(
                table.name, name,
                tuple(self.deref(s["properties"][name]) for s in listed),
                any(name in s.get("required", ()) for s in listed), reference)
        return out

    def documented(self, table: str) -> set[str]:
        """Every property any schema of the table lists (an extra field is none of them)."""
        names: set[str] = set()
        for name in TABLES[table].schemas:
            names.update(self.deref({"$ref": f"#/components/schemas/{name}"})
                         .get("properties", {}))
        return names

    def own_fields(self, table: str, record: dict[str, Any]) -> set[str]:
        """Fields a record of a kinded table (kb files and folders) may not fill: the other
        kinds' own fields (varying them would make a record the API never holds)."""
        kinds = TABLES[table].kinds
        if kinds is None:
            return set()
        mine = kinds.names.get(record.get(kinds.field))
        return {f for kind, fields in kinds.own.items() if kind != mine for f in fields}


@functools.lru_cache(maxsize=4)
def _catalogue(spec_id: int, spec: Spec) -> Catalogue:
    return Catalogue(spec)


def catalogue_for(spec: Spec) -> Catalogue:
    """The catalogue of a loaded document (computed once per document)."""
    return _catalogue(id(spec), spec)
