"""The OpenAPI document, loaded once and compiled into `Operation`s the rest of the mock uses.

Everything the engine knows about an operation comes from here: its path template, parameters,
body schema, documented responses, whether it needs a write token (security role `write`),
which store table its `{id}` addresses (`x-mock-resource`), which table a list pages and over
what (`x-mock-list`), which state change it makes (`x-mock-transition`), and where its
workspace comes from.
"""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from .yamlload import load_yaml

__all__ = ["Filter", "Listing", "Operation", "Order", "Parameter", "Spec", "Transition", "data_dir",
           "load_spec"]

HTTP_METHODS = ("get", "put", "post", "delete", "patch", "head", "options", "trace")


def data_dir(name: str) -> Path:
    """`spec/` or `fixtures/`: inside the installed wheel, or beside the package in a checkout."""
    packaged = Path(__file__).parent.parent / "_data" / name
    if packaged.is_dir():
        return packaged
    return Path(__file__).parent.parent.parent / name


@dataclass(frozen=True)
class Parameter:
    name: str
    location: str  # path | query | header
    required: bool
    schema: dict[str, Any]
    provenance: str | None

    @property
    def default(self) -> Any:
        return self.schema.get("default")


@dataclass(frozen=True)
class Order:
    """A list's `x-order`: the record fields it is sorted over (`by`, or per `sort_by` value
    `by_sort`, where None means a field the items do not carry) and its default direction."""

    by: tuple[str, ...]
    by_sort: dict[str, tuple[str, ...] | None]
    direction: str  # asc | desc
    provenance: str | None

    @classmethod
    def parse(cls, raw: Any) -> Order | None:
        if not isinstance(raw, dict):
            return None
        by_sort = {str(value): _fields(by) if by is not None else None
                   for value, by in (raw.get("by-sort") or {}).items()}
        return cls(_fields(raw.get("by")), by_sort, str(raw.get("direction", "asc")),
                   raw.get("x-provenance"))

    def fields(self, sort_by: str | None = None) -> tuple[str, ...] | None:
        """The sort fields for a `sort_by` value (the fixed `by` when there is no `by-sort`)."""
        if self.by_sort:
            return self.by_sort.get(str(sort_by)) if sort_by is not None else None
        return self.by


@dataclass(frozen=True)
class Filter:
    """A query parameter's `x-filter`: the record field it constrains (dotted for a nested
    field) and the values a virtual value stands for (ticket `status=open`: new, pending)."""

    param: str
    field: str
    values: dict[str, tuple[Any, ...]]
    provenance: str | None

    def allowed(self, wanted: Any) -> tuple[Any, ...]:
        """The field values a request's value selects."""
        return self.values.get(wanted, (wanted,)) if isinstance(wanted, str) else (wanted,)


@dataclass(frozen=True)
class Listing:
    """A list's `x-mock-list`: the store table it pages, the record field that selects its
    records (`partition`), and whose value that field holds (`of`: the request's workspace,
    or the resource the path addresses, `x-mock-resource`). How it is sorted and filtered is
    the operation's `x-order` and `x-filter`; a handler of the list adds behaviour only."""

    table: str
    partition: str = "workspace_id"
    of: str = "workspace"  # workspace | resource

    KEYS = ("table", "partition", "of")

    @classmethod
    def parse(cls, raw: Any) -> Listing | None:
        if raw is None:
            return None
        if not isinstance(raw, dict) or not isinstance(raw.get("table"), str) \
                or set(raw) - set(cls.KEYS) or raw.get("of", "workspace") not in (
                    "workspace", "resource"):
            raise ValueError(f"x-mock-list {raw!r}: a mapping of table, partition and "
                             "of (workspace | resource)")
        return cls(**{key: str(value) for key, value in raw.items()})


@dataclass(frozen=True)
class Transition:
    """An operation's `x-mock-transition`: it moves the addressed record's `field` from one of
    `sources` to `target`, and is refused (400) from any other value. The mock's handler and
    the gate's state rule both read it (one state machine, stated once)."""

    field: str
    sources: tuple[str, ...]
    target: str
    provenance: str | None

    @classmethod
    def parse(cls, raw: Any) -> Transition | None:
        if raw is None:
            return None
        if not (isinstance(raw, dict) and isinstance(raw.get("from"), list)
                and isinstance(raw.get("to"), str)):
            raise ValueError(f"x-mock-transition {raw!r}: a mapping of field, from (a list) "
                             "and to")
        return cls(str(raw.get("field", "status")), tuple(map(str, raw["from"])),
                   raw["to"], raw.get("x-provenance"))

    def allows(self, value: Any) -> bool:
        return value in self.sources


def _fields(by: Any) -> tuple[str, ...]:
    if by is None:
        return ()
    return (by,) if isinstance(by, str) else tuple(by)


@dataclass
class Operation:
    operation_id: str
    method: str  # upper case
    path: str
    tag: str
    provenance: str
    raw: dict[str, Any]
    parameters: list[Parameter]
    body_schema: dict[str, Any] | None
    body_required: bool
    responses: dict[int, dict[str, Any]]  # status -> resolved response object
    requires_write: bool
    resource_table: str | None
    resource_param: str | None
    workspace_source: str | None  # path | resource | query | body | None
    success_status: int = 200
    extras: dict[str, Any] = field(default_factory=dict)
    # The component schema the success response's `data` holds (or lists): what a record is
    # projected onto when a handler sends it. None when `data` is not a named schema.
    data_schema: str | None = None
    # The document's facts about a list (`x-order`, `x-filter`): how the mock sorts and
    # filters it, and what the gate's laws check it against.
    order: Order | None = None
    filters: tuple[Filter, ...] = ()
    # The table a list pages and over what (`x-mock-list`); None for every other operation.
    listing: Listing | None = None
    # The state change it makes on the addressed record (`x-mock-transition`).
    transition: Transition | None = None

    def response_schema(self, status: int) -> dict[str, Any] | None:
        response = self.responses.get(status)
        if response is None:
            return None
        return response.get("content", {}).get("application/json", {}).get("schema")

    def __post_init__(self) -> None:
        # A read whose answer the pipeline may keep (cache.py): no writes, no body.
        self.cacheable = (self.method == "GET" and not self.requires_write
                          and self.body_schema is None)

    @property
    def paginated(self) -> bool:
        return any(p.name == "cursor" for p in self.parameters)


class Spec:
    """The loaded document and its compiled operations."""

    def __init__(self, document: dict[str, Any], source: Path | None = None) -> None:
        self.document = document
        self.source = source
        self.components: dict[str, Any] = document.get("components", {})
        self.operations: list[Operation] = [
            self._compile(path, method, op)
            for path, item in document.get("paths", {}).items()
            for method, op in item.items()
            if method in HTTP_METHODS
        ]
        self.by_id = {op.operation_id: op for op in self.operations}

    def resolve(self, obj: Any) -> Any:
        """Follow a local `$ref` (one level at a time, until none is left)."""
        while isinstance(obj, dict) and "$ref" in obj:
            target: Any = self.document
            for part in obj["$ref"].lstrip("#/").split("/"):
                target = target[part]
            obj = target
        return obj

    @functools.cached_property
    def resource_paths(self) -> list[str]:
        return sorted(self.document.get("paths", {}))

    def schema_fields(self, name: str) -> tuple[str, ...]:
        """Property names of a component schema, in document order."""
        return tuple(self.components["schemas"][name].get("properties", {}))

    def _data_schema(self, response: dict[str, Any] | None) -> str | None:
        schema = self.resolve((response or {}).get("content", {})
                              .get("application/json", {}).get("schema", {}))
        data = schema.get("properties", {}).get("data") if isinstance(schema, dict) else None
        if isinstance(data, dict) and "$ref" not in data and data.get("type") == "array":
            data = data.get("items")
        ref = data.get("$ref", "") if isinstance(data, dict) else ""
        prefix = "#/components/schemas/"
        return ref[len(prefix):] if ref.startswith(prefix) else None

    def _compile(self, path: str, method: str, raw: dict[str, Any]) -> Operation:
        parameters = []
        filters = []
        for param in raw.get("parameters", []):
            param = self.resolve(param)
            facts = param.get("x-filter")
            if isinstance(facts, dict):
                filters.append(Filter(
                    param["name"], str(facts.get("field", param["name"])),
                    {str(k): tuple(v) for k, v in (facts.get("values") or {}).items()},
                    facts.get("x-provenance")))
            parameters.append(
                Parameter(
                    name=param["name"],
                    location=param["in"],
                    required=bool(param.get("required", False)),
                    schema=self.resolve(param.get("schema", {})),
                    provenance=param.get("x-provenance"),
                )
            )
        body_schema = None
        body_required = False
        if "requestBody" in raw:
            body = self.resolve(raw["requestBody"])
            body_required = bool(body.get("required", False))
            body_schema = body["content"]["application/json"]["schema"]
        responses = {
            int(status): self.resolve(response)
            for status, response in raw.get("responses", {}).items()
        }
        success = min(s for s in responses if 200 <= s < 300)
        security = raw.get("security", self.document.get("security", []))
        requires_write = any("write" in roles for req in security for roles in req.values())
        resource_table = raw.get("x-mock-resource")
        path_names = [p.name for p in parameters if p.location == "path"]
        resource_param = None
        if resource_table:
            resource_param = "node_id" if "node_id" in path_names else "id"
        query_names = {p.name: p for p in parameters if p.location == "query"}
        body_props = self.resolve(body_schema or {}).get("properties", {})
        workspace_source: str | None
        if path.startswith("/v1/workspaces/{id}"):
            workspace_source = "path"
        elif resource_table:
            workspace_source = "resource"
        elif "workspace_id" in query_names:
            workspace_source = "query"
        elif "workspace_id" in body_props:
            workspace_source = "body"
        else:
            workspace_source = None
        return Operation(
            operation_id=raw["operationId"],
            method=method.upper(),
            path=path,
            tag=(raw.get("tags") or ["untagged"])[0],
            provenance=raw.get("x-provenance", "inferred"),
            raw=raw,
            parameters=parameters,
            body_schema=body_schema,
            body_required=body_required,
            responses=responses,
            requires_write=requires_write,
            resource_table=resource_table,
            resource_param=resource_param,
            workspace_source=workspace_source,
            success_status=success,
            data_schema=self._data_schema(responses[success]),
            order=Order.parse(raw.get("x-order")),
            filters=tuple(filters),
            listing=Listing.parse(raw.get("x-mock-list")),
            transition=Transition.parse(raw.get("x-mock-transition")),
        )


def read_document(source: Path) -> dict[str, Any]:
    """The document as JSON data, parsed in memory (nothing is written anywhere).

    The built wheel carries each document also parsed (`<name>.json` beside `<name>.yaml`,
    written by hatch_build.py with the YAML's SHA-256): read in milliseconds where parsing the
    YAML takes most of start-up. It is used only while its hash matches the YAML beside it.
    """
    raw = source.read_bytes()
    try:
        parsed = orjson.loads(source.with_suffix(".json").read_bytes())
    except (OSError, orjson.JSONDecodeError):
        parsed = None
    if (isinstance(parsed, dict) and isinstance(parsed.get("document"), dict)
            and parsed.get("sha256") == hashlib.sha256(raw).hexdigest()):
        return dict(parsed["document"])
    return dict(load_yaml(raw))


def load_spec(path: str | None = None) -> Spec:
    """Load and compile the document (cached per path: it never changes while running).
    `load_spec()`, `load_spec(None)` and the default's path name one document, parsed once."""
    source = Path(path) if path else data_dir("spec") / "openapi.yaml"
    return _load_spec(str(source.resolve()))


@functools.lru_cache(maxsize=4)
def _load_spec(source: str) -> Spec:
    return Spec(read_document(Path(source)), Path(source))
