"""Every paginated list of the document, walked through the HTTP pipeline for every page size
from 1 to N + 1, in both directions where the list has an `order`, with and without each of its
filters: exactly ceil(N / limit) pages, no empty trailing page, `has_more` false and
`next_cursor` null exactly on the page holding the last item, and the pages joined are the
list read whole.

Planted defect this was written against (issue 30's mutation sample): in
`pagination.walk`'s seed-bucket path, `stop < len(records)` changed to `<=` makes an
exactly full last page answer `has_more: true` with a cursor to an empty page; the walks of
`listWorkspaceUsers` (3 users, limit 3) and of every ascending list then fail here; in the
layered path (`taken[limit - 1] if len(taken) > limit` changed to `>=`) the "written" walks
fail the same way.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import pytest
from conftest import FROZEN_AT, auth
from starlette.testclient import TestClient

from mockserver.engine.app import Config, MockApp
from mockserver.openapi.spec import Operation
from mockserver.standalone.server import create_app

MAX_WALKED = 40  # a list's largest candidate with at most this many items is walked


@pytest.fixture(scope="module", params=["seed", "written"])
def walker(request: pytest.FixtureRequest) -> Iterator[tuple[MockApp, TestClient]]:
    """The default fixtures as loaded (pages cut from the seed's flat lists) and after one
    record of every table was rewritten as it was (pages merged from the changed layer)."""
    mock = MockApp(Config(self_check=True, frozen_clock=FROZEN_AT, cursor_secret=b"tests"))
    mock.state.set_rate_limits(enabled=False)
    if request.param == "written":
        store = mock.store
        for table, key in store.key_fields.items():
            first = next(iter(store.all(table)), None)
            if first is not None:
                store.update(table, first[key], {key: first[key]})
    with TestClient(create_app(mock=mock), headers=auth()) as client:
        yield mock, client


def _paginated(mock: MockApp) -> list[Operation]:
    return [op for op in mock.spec.operations if op.method == "GET" and op.paginated]


def _limit_bound(op: Operation) -> int:
    limit = next(p for p in op.parameters if p.name == "limit")
    return int(limit.schema.get("maximum", 100))


def _workspaces(client: TestClient) -> list[str]:
    answer = client.get("/v1/workspaces")
    assert answer.status_code == 200, answer.text
    return [ws["id"] for ws in answer.json()["data"]]


def _path_candidates(client: TestClient, mock: MockApp, op: Operation,
                     workspaces: list[str]) -> list[dict[str, str]]:
    """Values for the path parameters of `op` drawn from the dataset."""
    names = [p.name for p in op.parameters if p.location == "path"]
    if not names:
        return [{}]
    if op.path.startswith("/v1/workspaces/{id}/"):
        return [{"id": ws} for ws in workspaces]
    # The addressed resource (`x-mock-resource`).
    table = op.resource_table
    assert table is not None, f"{op.operation_id}: no resource table to draw `id` from"
    outer = [r[mock.store.key_fields[table]] for r in mock.store.find(table, lambda r: True)]
    if len(names) == 1:
        return [{names[0]: value} for value in outer]
    # A second parameter: the items of the list at the path's prefix before it.
    inner_name = names[1]
    parent = op.path[: op.path.index("/{" + inner_name + "}")]
    found = []
    for outer_id in outer:
        url = parent.replace("{" + names[0] + "}", outer_id)
        if client.get(url).status_code != 200:
            continue  # another workspace's resource
        for page in _walk(client, url, {}, 100):
            found += [{names[0]: outer_id, inner_name: item.get(inner_name, item.get("id"))}
                      for item in page["data"]]
    return found


def _url(op: Operation, path: dict[str, str]) -> str:
    url = op.path
    for name, value in path.items():
        url = url.replace("{" + name + "}", value)
    return url


def _walk(client: TestClient, url: str, query: dict[str, Any], limit: int) -> list[dict]:
    """Every page of one walk (the answers' bodies), following `next_cursor`."""
    pages: list[dict] = []
    params = {**query, "limit": limit}
    while True:
        answer = client.get(url, params=params)
        assert answer.status_code == 200, f"{url} {params}: {answer.status_code} {answer.text}"
        body = answer.json()
        pages.append(body)
        if body["next_cursor"] is None:
            return pages
        assert len(pages) <= 1000, f"{url} {query}: the walk does not end"
        params = {**query, "limit": limit, "cursor": body["next_cursor"]}


def _ids(items: list[dict]) -> list[Any]:
    return [item.get("id", repr(sorted(item.items()))) for item in items]


def _field(item: dict, dotted: str) -> Any:
    value: Any = item
    for part in dotted.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


def _queries(op: Operation, base: dict[str, Any], sample: list[dict]) -> list[dict[str, Any]]:
    """The unfiltered query, and one per filter with a value the sample holds, each in every
    direction the list has."""
    queries = [dict(base)]
    for flt in op.filters:
        value = next((_field(item, flt.field) for item in sample
                      if _field(item, flt.field) is not None), None)
        if value is None or isinstance(value, (dict, list)):
            continue
        queries.append({**base, flt.param: str(value).lower() if isinstance(value, bool)
                        else value})
    order = next((p for p in op.parameters if p.name == "order"), None)
    if order is None:
        return queries
    return [{**query, "order": direction} for query in queries
            for direction in order.schema.get("enum", ())]


def _largest_candidate(client: TestClient, op: Operation, mock: MockApp,
                       workspaces: list[str]) -> tuple[str, dict[str, Any], list[dict]] | None:
    """The path and workspace whose whole list is largest (at most MAX_WALKED items)."""
    best: tuple[str, dict[str, Any], list[dict]] | None = None
    needs_workspace = any(p.name == "workspace_id" and p.location == "query" and p.required
                          for p in op.parameters)
    for path in _path_candidates(client, mock, op, workspaces):
        for ws in workspaces if needs_workspace else [None]:
            base = {"workspace_id": ws} if ws else {}
            base.update(_required_extras(op))
            url = _url(op, path)
            answer = client.get(url, params={**base, "limit": 1})
            if answer.status_code != 200:
                continue
            whole = [i for page in _walk(client, url, base, _limit_bound(op))
                     for i in page["data"]]
            if len(whole) <= MAX_WALKED and (best is None or len(whole) > len(best[2])):
                best = (url, base, whole)
    return best


def _required_extras(op: Operation) -> dict[str, Any]:
    """Values for required query parameters other than the workspace (a search's `query`)."""
    extras = {}
    for p in op.parameters:
        if p.location == "query" and p.required and p.name != "workspace_id":
            assert p.name == "query", f"{op.operation_id}: no value for required {p.name}"
            extras[p.name] = "a"
    return extras


def test_every_paginated_list_pages_exactly(walker: tuple[MockApp, TestClient]) -> None:
    mock, client = walker
    workspaces = _workspaces(client)
    walked: dict[str, int] = {}
    for op in _paginated(mock):
        found = _largest_candidate(client, op, mock, workspaces)
        assert found is not None, f"{op.operation_id}: no path the token can read"
        url, base, whole = found
        walked[op.operation_id] = len(whole)
        for query in _queries(op, base, whole):
            reference = [i for page in _walk(client, url, query, _limit_bound(op))
                         for i in page["data"]]
            for limit in range(1, len(reference) + 2):
                _check_walk(client, url, query, limit, reference)
    thin = sorted(name for name, n in walked.items() if n < 2)
    assert len(thin) < len(walked) / 2, f"too few lists with two items or more: {thin}"
    assert walked.get("listWorkspaceUsers", 0) >= 3


def _check_walk(client: TestClient, url: str, query: dict[str, Any], limit: int,
                reference: list[dict]) -> None:
    pages = _walk(client, url, query, limit)
    where = f"{url} {query} limit={limit}"
    expected_pages = max(1, math.ceil(len(reference) / limit))
    assert len(pages) == expected_pages, f"{where}: {len(pages)} pages for {len(reference)}"
    for number, page in enumerate(pages, 1):
        last = number == len(pages)
        assert page["has_more"] is (not last), f"{where}: has_more on page {number}"
        assert (page["next_cursor"] is None) is last, f"{where}: next_cursor on page {number}"
        if not last:
            assert len(page["data"]) == limit, f"{where}: page {number} not full"
        elif reference:
            assert page["data"], f"{where}: an empty last page"
    joined = [i for page in pages for i in page["data"]]
    assert _ids(joined) == _ids(reference), f"{where}: pages differ from the whole list"
