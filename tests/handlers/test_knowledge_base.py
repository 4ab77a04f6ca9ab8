"""Knowledge base: the node tree (create, move, delete), patch rules, structured search and the
deterministic semantic search."""

from __future__ import annotations

from typing import Any

import pytest
from starlette.testclient import TestClient

from mockserver.engine.app import MockApp
from mockserver.engine.progression import set_modes

from ._family_seed import ALPINE, DESERT, HARBOR, READ, WRITE, auth, token_user_id

WS = {"workspace_id": HARBOR}


@pytest.fixture(autouse=True)
def indexed_at_once(mock: MockApp) -> None:
    """Files index at once here (progression's `immediate` mode); how indexing progresses on
    the clock is tests/engine/test_progression.py's."""
    mock.state.write(lambda store: set_modes(store, {"kb_nodes": {"mode": "immediate"}}))


def node(client: TestClient, title: str, ws: str = HARBOR, **body: Any) -> dict[str, Any]:
    response = client.post("/v1/kb/nodes", params={"workspace_id": ws},
                           json={"title": title, **body})
    assert response.status_code == 201, response.text
    return response.json()["data"]


def folder(client: TestClient, title: str, **body: Any) -> dict[str, Any]:
    return node(client, title, is_directory=True, **body)


def get(client: TestClient, node_id: str) -> dict[str, Any]:
    response = client.get(f"/v1/kb/nodes/{node_id}")
    assert response.status_code == 200
    return response.json()["data"]


def patch(client: TestClient, node_id: str, **body: Any) -> Any:
    return client.patch(f"/v1/kb/nodes/{node_id}", params=WS, json=body)


# -- create -------------------------------------------------------------------------------------


def test_create_a_file_under_a_folder(client: TestClient, mock: MockApp) -> None:
    top = folder(client, "T Top")
    sub = folder(client, "T Sub", parent_id=top["id"])
    text = "x" * 2500
    file = node(client, "T File", parent_id=sub["id"], body=text, tags=["t"])
    assert top["depth"] == 0 and top["ancestors"] == [] and top["parent_id"] is None
    assert top["embed_status"] == "skipped" and top["chunk_count"] == 0 and top["body"] == ""
    assert sub["ancestors"] == [top["id"]] and sub["depth"] == 1
    assert file["ancestors"] == [top["id"], sub["id"]] and file["depth"] == 2
    assert file["embed_status"] == "indexed" and file["chunk_count"] == 3
    assert file["version"] == 1 and file["chunk_body"] is True and file["source"] == "manual"
    assert file["source_type"] is None and file["source_id"] is None
    assert file["created_by"] == token_user_id(mock, WRITE)
    assert file["enabled"] is True and file["entity_ids"] == [] and file["metadata"] == {}
    assert get(client, file["id"]) == file


def test_a_folder_ignores_a_body_and_empty_files_have_one_chunk(client: TestClient) -> None:
    assert folder(client, "T Dir", body="ignored")["body"] == ""
    assert node(client, "T Empty")["chunk_count"] == 1


def test_create_refuses_a_bad_parent(client: TestClient) -> None:
    file = node(client, "T File")
    under_file = client.post("/v1/kb/nodes", params=WS,
                             json={"title": "x", "parent_id": file["id"]})
    assert under_file.status_code == 400 and "parent_id" in under_file.json()["error"]
    unknown = client.post("/v1/kb/nodes", params=WS,
                          json={"title": "x", "parent_id": "0" * 24})
    assert unknown.status_code == 400 and "parent_id" in unknown.json()["error"]
    alpine = client.post("/v1/kb/nodes", params={"workspace_id": ALPINE},
                         json={"title": "A", "is_directory": True}).json()["data"]
    cross = client.post("/v1/kb/nodes", params=WS, json={"title": "x", "parent_id": alpine["id"]})
    assert cross.status_code == 400 and alpine["id"] in cross.json()["error"]


def test_create_refuses_entity_ids_on_a_folder_and_read_tokens(client: TestClient) -> None:
    response = client.post("/v1/kb/nodes", params=WS, json={
        "title": "x", "is_directory": True, "entity_ids": ["lst_1"]})
    assert response.status_code == 400 and "entity_ids" in response.json()["error"]
    assert client.post("/v1/kb/nodes", params=WS, json={"title": "x"},
                       headers=auth(READ)).status_code == 403
    assert client.post("/v1/kb/nodes", params={"workspace_id": DESERT},
                       json={"title": "x"}).status_code == 403


# -- list ---------------------------------------------------------------------------------------


def test_list_orders_by_depth_then_title_and_hides_bodies(client: TestClient) -> None:
    top = folder(client, "T Top")
    node(client, "T b child", parent_id=top["id"], body="secret body")
    node(client, "T a child", parent_id=top["id"], body="secret body")
    everything: list[dict[str, Any]] = []
    cursor = None
    while True:
        params: dict[str, Any] = {**WS, "limit": 7}
        if cursor:
            params["cursor"] = cursor
        page = client.get("/v1/kb/nodes", params=params).json()
        everything += page["data"]
        if not page["has_more"]:
            break
        cursor = page["next_cursor"]
    keys = [(n["depth"], n["title"]) for n in everything]
    assert keys == sorted(keys)
    assert all(n["body"] == "" for n in everything)
    children = client.get("/v1/kb/nodes", params={**WS, "parent_id": top["id"],
                                                  "include_body": "true"}).json()["data"]
    assert [n["title"] for n in children] == ["T a child", "T b child"]
    assert {n["body"] for n in children} == {"secret body"}


# -- patch --------------------------------------------------------------------------------------


def test_entity_ids_must_be_sent_alone(client: TestClient) -> None:
    file = node(client, "T File", body="text")
    response = patch(client, file["id"], entity_ids=["lst_1"], title="New title")
    assert response.status_code == 400 and "entity_ids" in response.json()["error"]
    assert get(client, file["id"]) == file  # nothing changed
    alone = patch(client, file["id"], entity_ids=["lst_1", "lst_2"])
    assert alone.status_code == 200
    data = alone.json()["data"]
    assert data["entity_ids"] == ["lst_1", "lst_2"] and data["title"] == "T File"
    assert data["version"] == 1 and data["updated_at"] > file["updated_at"]
    assert patch(client, file["id"], entity_ids=[]).json()["data"]["entity_ids"] == []


def test_entity_ids_are_refused_on_a_folder(client: TestClient) -> None:
    top = folder(client, "T Top")
    response = patch(client, top["id"], entity_ids=["lst_1"])
    assert response.status_code == 400 and "entity_ids" in response.json()["error"]
    assert get(client, top["id"])["entity_ids"] == []


def test_a_body_change_reindexes(client: TestClient) -> None:
    file = node(client, "T File", body="short")
    same = patch(client, file["id"], body="short").json()["data"]
    assert same["version"] == 1
    changed = patch(client, file["id"], body="y" * 1001).json()["data"]
    assert changed["version"] == 2 and changed["chunk_count"] == 2
    assert changed["embed_status"] == "indexed" and changed["body"] == "y" * 1001
    titled = patch(client, file["id"], title="Renamed", tags=["a"], metadata={"k": 1}).json()
    assert titled["data"]["version"] == 2 and titled["data"]["tags"] == ["a"]
    cleared = patch(client, file["id"], tags=[], metadata={}).json()["data"]
    assert cleared["tags"] == [] and cleared["metadata"] == {} and cleared["title"] == "Renamed"


def test_patch_refuses_an_empty_title_and_a_folder_body(client: TestClient) -> None:
    top = folder(client, "T Top")
    response = patch(client, top["id"], title="")
    assert response.status_code == 400 and "title" in response.json()["error"]
    response = patch(client, top["id"], body="text")
    assert response.status_code == 400 and "body" in response.json()["error"]


def test_patch_needs_the_workspace_query(client: TestClient) -> None:
    file = node(client, "T File")
    response = client.patch(f"/v1/kb/nodes/{file['id']}", json={"title": "x"})
    assert response.status_code == 400 and "workspace_id" in response.json()["error"]
    wrong = client.patch(f"/v1/kb/nodes/{file['id']}", params={"workspace_id": ALPINE},
                         json={"title": "x"})
    assert wrong.status_code == 404


def test_moving_a_folder_recomputes_its_subtree(client: TestClient) -> None:
    a = folder(client, "T A")
    b = folder(client, "T B", parent_id=a["id"])
    c = folder(client, "T C", parent_id=b["id"])
    file = node(client, "T File", parent_id=c["id"], body="text")
    target = folder(client, "T Target")
    moved = patch(client, b["id"], parent_id=target["id"])
    assert moved.status_code == 200
    assert moved.json()["data"]["ancestors"] == [target["id"]]
    assert moved.json()["data"]["depth"] == 1 and moved.json()["data"]["parent_id"] == target["id"]
    assert get(client, c["id"])["ancestors"] == [target["id"], b["id"]]
    assert get(client, file["id"])["ancestors"] == [target["id"], b["id"], c["id"]]
    assert get(client, file["id"])["depth"] == 3
    to_root = patch(client, b["id"], parent_id=None).json()["data"]
    assert to_root["parent_id"] is None and to_root["depth"] == 0 and to_root["ancestors"] == []
    assert get(client, c["id"])["depth"] == 1 and get(client, c["id"])["ancestors"] == [b["id"]]
    after = get(client, file["id"])
    assert after["depth"] == 2 and after["ancestors"] == [b["id"], c["id"]]
    assert get(client, a["id"])["depth"] == 0  # the old parent is untouched


def test_moves_that_would_make_a_cycle_are_refused(client: TestClient) -> None:
    a = folder(client, "T A")
    b = folder(client, "T B", parent_id=a["id"])
    c = folder(client, "T C", parent_id=b["id"])
    file = node(client, "T File", parent_id=a["id"])
    for target in (a["id"], c["id"]):
        response = patch(client, a["id"] if target == a["id"] else b["id"], parent_id=target)
        assert response.status_code == 400 and "parent_id" in response.json()["error"]
    under_file = patch(client, b["id"], parent_id=file["id"])
    assert under_file.status_code == 400 and "parent_id" in under_file.json()["error"]
    assert get(client, b["id"])["ancestors"] == [a["id"]]
    assert get(client, c["id"])["ancestors"] == [a["id"], b["id"]]


# -- delete -------------------------------------------------------------------------------------


def test_deleting_a_folder_removes_its_subtree(client: TestClient) -> None:
    a = folder(client, "T A")
    b = folder(client, "T B", parent_id=a["id"])
    f1 = node(client, "T F1", parent_id=a["id"])
    f2 = node(client, "T F2", parent_id=b["id"])
    keep = node(client, "T Keep")
    response = client.delete(f"/v1/kb/nodes/{a['id']}")
    assert response.status_code == 200 and response.json() == {"deleted_count": 4}
    for gone in (a, b, f1, f2):
        assert client.get(f"/v1/kb/nodes/{gone['id']}").status_code == 404
    assert get(client, keep["id"])["title"] == "T Keep"
    assert client.delete(f"/v1/kb/nodes/{keep['id']}").json() == {"deleted_count": 1}
    assert client.delete(f"/v1/kb/nodes/{keep['id']}").status_code == 404


# -- structured search --------------------------------------------------------------------------


def test_structured_search_filters_and_pages(client: TestClient) -> None:
    top = folder(client, "T Zorblat folder")
    for i in range(5):
        node(client, f"T Zorblat {i}", parent_id=top["id"], body=f"body {i}",
             enabled=i % 2 == 0)
    query = {"filters": {"title_contains": "zORBLAT", "is_directory": False, "enabled": True}}
    first = client.post("/v1/kb/nodes/search", params=WS,
                        json={**query, "pagination": {"page_size": 2}}).json()
    assert first["total_count"] == 3 and first["has_more"] is True
    assert [n["title"] for n in first["data"]] == ["T Zorblat 0", "T Zorblat 2"]
    assert all(n["body"] == "" for n in first["data"])
    second = client.post("/v1/kb/nodes/search", params=WS, json={
        **query, "include_body": False,
        "pagination": {"page_size": 2, "cursor": first["next_cursor"]}}).json()
    assert [n["title"] for n in second["data"]] == ["T Zorblat 4"]
    assert second["has_more"] is False and second["next_cursor"] is None
    other = client.post("/v1/kb/nodes/search", params=WS, json={
        "filters": {"title_contains": "other"}, "pagination": {"cursor": first["next_cursor"]}})
    assert other.status_code == 400 and "cursor" in other.json()["error"]
    bodies = client.post("/v1/kb/nodes/search", params=WS,
                         json={**query, "include_body": True}).json()["data"]
    assert [n["body"] for n in bodies] == ["body 0", "body 2", "body 4"]


def test_structured_search_by_parent_and_root(client: TestClient) -> None:
    top = folder(client, "T Parent")
    child = node(client, "T Child", parent_id=top["id"])
    children = client.post("/v1/kb/nodes/search", params=WS,
                           json={"filters": {"parent_id": top["id"]}}).json()
    assert [n["id"] for n in children["data"]] == [child["id"]] and children["total_count"] == 1
    roots = client.post("/v1/kb/nodes/search", params=WS, json={
        "filters": {"parent_id": None}, "pagination": {"page_size": 100}}).json()["data"]
    assert top["id"] in [n["id"] for n in roots] and all(n["parent_id"] is None for n in roots)
    manual = client.post("/v1/kb/nodes/search", params=WS, json={
        "filters": {"source": "no-such-source"}}).json()
    assert manual["data"] == [] and manual["total_count"] == 0


# -- semantic search ----------------------------------------------------------------------------


def search(client: TestClient, query: str, **body: Any) -> list[dict[str, Any]]:
    response = client.post("/v1/kb/search", params=WS, json={"query": query, **body})
    assert response.status_code == 200, response.text
    assert set(response.json()) == {"data"}
    return response.json()["data"]


def test_semantic_search_ranks_chunks_and_gives_context(client: TestClient) -> None:
    top = folder(client, "T Guides")
    sub = folder(client, "T Quokkaville", parent_id=top["id"])
    file = node(client, "T Sauna rules", parent_id=sub["id"], body=(
        "The quokkasauna opens at 7 am.\n\nTowels are in the quokkasauna cupboard near "
        "the xylophone.\n\nUnrelated paragraph."))
    hits = search(client, "quokkasauna xylophone")
    assert [h["chunk_index"] for h in hits] == [1, 0]
    best = hits[0]
    assert best["node_id"] == file["id"] and best["relevance_score"] == 1.0
    assert hits[1]["relevance_score"] == 0.5
    assert best["context"] == "T Guides / T Quokkaville"
    assert best["node_title"] == "T Sauna rules" and "xylophone" in best["chunk_text"]
    assert all(0 <= h["relevance_score"] <= 1 for h in hits)
    assert len(search(client, "quokkasauna", max_results=1)) == 1


def test_disabled_nodes_never_appear(client: TestClient) -> None:
    top = folder(client, "T Folder")
    hidden_by_folder = node(client, "T In folder", parent_id=top["id"], body="vorpalwidget here")
    disabled = node(client, "T Disabled", body="vorpalwidget there", enabled=False)
    visible = node(client, "T Visible", body="vorpalwidget everywhere")
    assert {h["node_id"] for h in search(client, "vorpalwidget")} == {
        hidden_by_folder["id"], visible["id"]}
    patch(client, top["id"], enabled=False)
    found = {h["node_id"] for h in search(client, "vorpalwidget")}
    assert found == {visible["id"]}
    patch(client, visible["id"], enabled=False)
    assert search(client, "vorpalwidget") == []
    patch(client, disabled["id"], enabled=True)
    assert {h["node_id"] for h in search(client, "vorpalwidget")} == {disabled["id"]}


def test_entity_scope_filters_but_keeps_workspace_wide_nodes(client: TestClient) -> None:
    wide = node(client, "T Wide", body="snarkleberry jam")
    scoped = node(client, "T Scoped", body="snarkleberry pie", entity_ids=["lst_a"])
    elsewhere = node(client, "T Elsewhere", body="snarkleberry tart", entity_ids=["lst_b"])
    every = {h["node_id"] for h in search(client, "snarkleberry")}
    assert every == {wide["id"], scoped["id"], elsewhere["id"]}
    only_a = {h["node_id"] for h in search(client, "snarkleberry", entity_ids=["lst_a"])}
    assert only_a == {wide["id"], scoped["id"]}


def test_semantic_search_is_workspace_scoped(client: TestClient) -> None:
    node(client, "T Alpine", ws=ALPINE, body="glimmerfrost")
    assert search(client, "glimmerfrost") == []


def test_no_disabled_node_of_the_dataset_is_ever_found(client: TestClient, mock: MockApp) -> None:
    nodes = {n["id"]: n for n in mock.store.all("kb_nodes") if n["workspace_id"] == HARBOR}
    hidden = {key for key, n in nodes.items()
              if not n["enabled"] or any(not nodes[a]["enabled"]
                                         for a in n["ancestors"] if a in nodes)}
    for key in hidden:
        hits = search(client, f"{nodes[key]['title']} {nodes[key]['body'][:200]}",
                      max_results=50)
        assert key not in {h["node_id"] for h in hits}


def test_hyphenated_words_match_their_joined_form(client: TestClient) -> None:
    file = node(client, "T Net", body="The Fizz-Buzzle network is upstairs.")
    assert [h["node_id"] for h in search(client, "fizzbuzzle")] == [file["id"]]
    assert [h["node_id"] for h in search(client, "buzzle")] == [file["id"]]
