"""Loading the seeded dataset: one YAML (or JSON) file per table, plus tokens.

A directory holds `<table>.yaml` files, each a list of records, and `tokens.yaml`. Several
directories overlay in order: a later record with the same key replaces an earlier one. Every
record is checked against the document (closed schemas, as the self-check does) and every
cross-reference must resolve, before anything is served: a bad file stops start-up with a
message naming the file, the record and the field, and nothing is half-loaded.

Loading large datasets
----------------------

`fixtures.py` reads each file whole (orjson for JSON), makes equal strings one object across
all files (`_share_strings`: a generated dataset repeats most of its strings, so this takes
about a third off its memory) and keeps the cycle collector off while the dataset is built
(it would otherwise rescan the growing heap many times over). A dataset of 10,000 records or
more is then frozen out of the collector (`gc.freeze()`), so no later full collection walks it. It keeps no per-record origin:
an error message finds the record's file and position again by reading the table's files.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import os
import stat
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import orjson
import yaml

from ..engine.selfcheck import SelfCheck
from ..engine.store import Store
from ..openapi.schemas import first_error
from ..openapi.spec import Spec, data_dir
from ..openapi.yamlload import load_yaml
from .tables import INTERNAL_FIELDS, TABLES

__all__ = ["Dataset", "FixtureError", "RecordCheck", "default_fixtures_dir", "insert_checked",
           "load_dataset", "record_check"]

class FixtureError(Exception):
    """A fixture file that cannot be loaded; the message names file, record and field."""


@dataclass
class Dataset:
    tables: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    tokens: list[dict[str, Any]] = field(default_factory=list)
    # The files each table was read from, in overlay order. Where a record sits in them is
    # found again only for an error message (a table of positions would cost ~150 bytes
    # per record for nothing on every good start).
    sources: dict[str, list[Path]] = field(default_factory=dict)

    def describe(self, table: str, key: str) -> str:
        """`file: record #i (id='...')` for the file that last defined the record."""
        key_field = TABLES[table].key
        for path in reversed(self.sources.get(table, [])):
            content = _read(path)
            for index, record in enumerate(content if isinstance(content, list) else []):
                if isinstance(record, dict) and record.get(key_field) == key:
                    return f"{path}: {_describe(index, record, key_field)}"
        return f"{table}: {key_field}={key!r}"


def default_fixtures_dir() -> Path:
    return data_dir("fixtures")


# The most a fixture file may hold (a generated dataset of 100k contacts is about 60 MiB).
MAX_FIXTURE_FILE_BYTES = 1024 * 1024 * 1024


def read_regular(path: Path, limit: int = MAX_FIXTURE_FILE_BYTES) -> bytes:
    """The bytes of a regular file: a FIFO, device or socket is refused without blocking on
    it (opened non-blocking, checked on the open descriptor: no swap between check and read),
    and so is a file over `limit` bytes (DECISIONS H18)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise FixtureError(f"{path}: cannot be read: {exc.strerror}") from None
    with os.fdopen(fd, "rb") as fh:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise FixtureError(f"{path}: not a regular file (a fixture file is read only "
                               "when it is one: no FIFO, device or socket)")
        if info.st_size > limit:
            raise FixtureError(f"{path}: {info.st_size} bytes, over the {limit} a fixture "
                               "file may hold")
        os.set_blocking(fd, True)
        data = fh.read(limit + 1)
    if len(data) > limit:
        raise FixtureError(f"{path}: over the {limit} bytes a fixture file may hold")
    return data


def _read(path: Path) -> Any:
    try:
        raw = read_regular(path)
        if path.suffix == ".json":
            return orjson.loads(raw)
        return load_yaml(raw)
    except (yaml.YAMLError, orjson.JSONDecodeError) as exc:
        raise FixtureError(f"{path}: not valid {path.suffix[1:].upper()}: {exc}") from None


def _share_strings(content: Any, memo: dict[str, str]) -> None:
    """Make equal strings one object, in place. A dataset repeats most of its strings
    (workspace ids, channels, statuses, names, ids across tables, templated text): sharing
    them takes a large dataset's memory down by about a third. The memo spans every file."""
    share = memo.setdefault
    stack = [content]
    while stack:
        node = stack.pop()
        if type(node) is dict:
            for name, value in node.items():
                kind = type(value)
                if kind is str:
                    node[name] = share(value, value)
                elif kind is dict or kind is list:
                    stack.append(value)
        elif type(node) is list:
            for i, value in enumerate(node):
                kind = type(value)
                if kind is str:
                    node[i] = share(value, value)
                elif kind is dict or kind is list:
                    stack.append(value)


# From this many records on, a loaded dataset is frozen out of the cycle collector.
FREEZE_RECORDS = 10_000  # a full collection over 50,000 records costs ~70 ms: every few tests


@contextlib.contextmanager
def _no_cycle_collection(dataset: Dataset) -> Iterator[None]:
    """The cycle collector off while a dataset is built: it would otherwise walk the growing
    heap again and again (more than half the load time of a large dataset). Records are
    plain JSON values, freed by reference counting; the collector is restored after.

    A large dataset is then frozen (`gc.freeze()`, CPython's tool for long-lived heaps): the
    first full collection after loading would walk millions of records for nothing (about
    0.7 s at 500,000 records, a pause in the first requests), and so would every later one.
    Frozen objects are still freed by reference counting; only cycles among them would never
    be collected, and records hold none."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
        if sum(len(rows) for rows in dataset.tables.values()) >= FREEZE_RECORDS:
            gc.freeze()
    finally:
        if was_enabled:
            gc.enable()


def _describe(index: int, record: Any, key_field: str) -> str:
    if isinstance(record, dict) and key_field in record:
        return f"record #{index} ({key_field}={record[key_field]!r})"
    return f"record #{index}"


def _load_dir(directory: Path, dataset: Dataset, memo: dict[str, str]) -> None:
    if not directory.is_dir():
        raise FixtureError(f"{directory}: not a directory")
    files = sorted(p for p in directory.iterdir() if p.suffix in (".yaml", ".yml", ".json"))
    if not files:
        # Loaded, it would serve no tokens: every request 401, far from the mistake.
        raise FixtureError(f"{directory}: holds no fixture files (*.yaml, *.yml, *.json)")
    for path in files:
        name = path.stem
        content = _read(path)
        if name == "tokens":
            if not isinstance(content, list):
                raise FixtureError(f"{path}: expected a list of tokens")
            for i, token in enumerate(content):
                missing = {"token", "user_id", "access", "workspace_ids"} - set(token or {})
                if missing:
                    raise FixtureError(f"{path}: token #{i}: missing {sorted(missing)}")
                if token["access"] not in ("read", "write"):
                    raise FixtureError(f"{path}: token #{i}: field 'access': must be read or write")
            known = {t["token"] for t in content}
            dataset.tokens = [t for t in dataset.tokens if t["token"] not in known] + content
            continue
        table = TABLES.get(name)
        if table is None:
            raise FixtureError(f"{path}: no table named {name!r} (known: {', '.join(sorted(TABLES))})")
        if content is None:
            content = []
        if not isinstance(content, list):
            raise FixtureError(f"{path}: expected a list of records")
        _share_strings(content, memo)
        rows = dataset.tables.setdefault(name, {})
        for i, record in enumerate(content):
            if not isinstance(record, dict) or table.key not in record:
                raise FixtureError(
                    f"{path}: {_describe(i, record, table.key)}: field '{table.key}' is required"
                )
            rows[record[table.key]] = record
        dataset.sources.setdefault(name, []).append(path)


class RecordCheck:
    """The one validation of a record of a table, as the fixture loader applies it: the
    table's closed schema(s) (internal `_` fields allowed, `derived` fields not required) and
    every cross-reference. The loader, `mock_api.add` and the tests' record factories
    (`insert_checked`) all use it, so none of them accepts what another would refuse.

    `schema_problem` / `dangling` check one record; `first_schema_problem` /
    `first_dangling` run the same checks over a whole table (the loader: half a million
    records, so the per-table work is done once and the loop stays tight)."""

    def __init__(self, spec: Spec) -> None:
        self._selfcheck = SelfCheck(spec)
        self._validators: dict[str, _Compiled] = {}

    def _compiled(self, table: str) -> _Compiled:
        found = self._validators.get(table)
        if found is None:
            table_def = TABLES[table]
            validators = []
            single = len(table_def.schemas) == 1
            for name in table_def.schemas:
                schema = dict(self._selfcheck.components["schemas"][name])
                if table_def.derived:
                    schema["required"] = [r for r in schema.get("required", [])
                                          if r not in table_def.derived]
                if single:
                    # Internal fields (`_x`) are never sent; anything else must be documented.
                    # Allowing them in the schema checks records in place, without a copy;
                    # those the engine reads have their shape (INTERNAL_FIELDS).
                    schema["patternProperties"] = {"^_": {}}
                    schema["properties"] = {**schema.get("properties", {}), **INTERNAL_FIELDS}
                fields = None if single else frozenset(schema.get("properties", {}))
                validators.append((self._selfcheck.validator_for_schema(schema), name, fields))
            # Several schemas: each record is projected onto each, so a field in none of them
            # would pass unnoticed: the fields they know between them.
            known = (frozenset().union(*(fields or () for _, _, fields in validators))
                     if len(validators) > 1 else None)
            if not single:  # the internal fields, checked on the whole record
                validators.append((self._selfcheck.validator_for_schema(
                    {"type": "object", "properties": INTERNAL_FIELDS,
                     "additionalProperties": True}), "internal fields", None))
            found = self._validators[table] = _Compiled(tuple(validators), known)
        return found

    def schema_problem(self, table: str, record: Any) -> str | None:
        """What is wrong with the record's fields (`field 'x': message (schema S)`), or None."""
        return self._problem(table, self._compiled(table), record)

    @staticmethod
    def _problem(table: str, compiled: _Compiled, record: Any) -> str | None:
        if not isinstance(record, dict):
            return "record: not an object"
        if compiled.known is not None:
            stray = sorted(k for k in record.keys() - compiled.known if not k.startswith("_"))
            if stray:
                return (f"field '{stray[0]}': in none of the schemas "
                        f"{', '.join(TABLES[table].schemas)}")
        for validator, name, fields in compiled.validators:
            projected = record if fields is None else {k: v for k, v in record.items()
                                                       if k in fields}
            problem = first_error(validator, projected)
            if problem is not None:
                where, message = problem
                at = f"field '{where}'" if where else "record"
                return f"{at}: {message} (schema {name})"
        return None

    def first_schema_problem(self, table: str,
                             rows: Mapping[str, Any]) -> tuple[str, str] | None:
        """(key, problem) of the first record of `rows` that `schema_problem` refuses."""
        compiled = self._compiled(table)
        if len(compiled.validators) == 1 and compiled.validators[0][2] is None:
            # One schema, records checked in place: a valid table costs one is_valid each.
            is_valid = compiled.validators[0][0].is_valid
            for key, record in rows.items():
                if not is_valid(record):
                    return key, self._problem(table, compiled, record) or "invalid"
            return None
        for key, record in rows.items():
            problem = self._problem(table, compiled, record)
            if problem is not None:
                return key, problem
        return None

    @staticmethod
    def dangling(table: str, record: dict[str, Any],
                 exists: Callable[[str, Any], bool]) -> str | None:
        """The first reference of the record that names no record (`exists(table, key)`)."""
        for ref_field, target in TABLES[table].refs.items():
            value = record.get(ref_field)
            if value is not None and not exists(target, value):
                return f"field '{ref_field}': {value!r} is not a key of {target}"
        return None

    @staticmethod
    def first_dangling(table: str, rows: Mapping[str, dict[str, Any]],
                       tables: Mapping[str, Mapping[str, Any]]) -> tuple[str, str] | None:
        """(key, problem) of the first record of `rows` with a reference `dangling` refuses,
        the targets looked up in `tables`: one pass per reference field."""
        bad: set[str] = set()
        for ref_field, target in TABLES[table].refs.items():
            target_rows = tables.get(target, {})
            for key, record in rows.items():
                value = record.get(ref_field)
                if value is not None and (not isinstance(value, Hashable)
                                          or value not in target_rows):
                    bad.add(key)  # the first of this field; another may come earlier
                    break
        if not bad:
            return None
        key = next(k for k in rows if k in bad)  # the first such record, as `dangling`
        problem = RecordCheck.dangling(  # names its first bad field
            table, rows[key],
            lambda target, k: isinstance(k, Hashable) and k in tables.get(target, {}))
        assert problem is not None
        return key, problem


class _Compiled(NamedTuple):
    validators: tuple[tuple[Any, str, frozenset[str] | None], ...]
    known: frozenset[str] | None  # several schemas: the fields any of them has


@functools.lru_cache(maxsize=4)
def record_check(spec: Spec) -> RecordCheck:
    """The record check of a document (compiled once per document)."""
    return RecordCheck(spec)


def insert_checked(store: Store, spec: Spec, table: str, record: dict[str, Any]) -> Any:
    """Insert a record into the store after the fixture loader's check (schema and
    references, against the store's current records); ValueError naming the field otherwise."""
    check = record_check(spec)
    problem = check.schema_problem(table, record) or check.dangling(
        table, record, lambda target, key: store.get(target, key) is not None)
    if problem is not None:
        raise ValueError(f"{table}: {problem}")
    return store.insert(table, record)


def _validate(dataset: Dataset, spec: Spec) -> None:
    check = record_check(spec)
    for name, rows in dataset.tables.items():
        found = check.first_schema_problem(name, rows)
        if found is not None:
            key, problem = found
            raise FixtureError(f"{dataset.describe(name, key)}: {problem}")


def _check_references(dataset: Dataset) -> None:
    for name, rows in dataset.tables.items():
        found = RecordCheck.first_dangling(name, rows, dataset.tables)
        if found is not None:
            key, problem = found
            raise FixtureError(f"{dataset.describe(name, key)}: {problem}")
    workspaces = dataset.tables.get("workspaces", {})
    users = dataset.tables.get("users", {})
    for token in dataset.tokens:
        if token["user_id"] not in users:
            raise FixtureError(f"tokens: token {token['token']!r}: field 'user_id': "
                               f"{token['user_id']!r} is not a key of users (a token belongs "
                               "to a workspace user)")
        for ws in token["workspace_ids"]:
            if ws not in workspaces:
                raise FixtureError(f"tokens: token {token['token']!r}: unknown workspace {ws!r}")


def load_dataset(
    directories: Sequence[Path] | Iterable[Path] | None = None,
    *,
    spec: Spec,
    validate: bool = True,
) -> Dataset:
    """Load and overlay fixture directories (the defaults when none are given)."""
    dataset = Dataset()
    memo: dict[str, str] = {}
    with _no_cycle_collection(dataset):
        for directory in directories or [default_fixtures_dir()]:
            _load_dir(Path(directory), dataset, memo)
        for name in TABLES:
            dataset.tables.setdefault(name, {})
        if validate:
            _validate(dataset, spec)
            _check_references(dataset)
    return dataset
