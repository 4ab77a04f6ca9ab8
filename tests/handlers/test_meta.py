"""Meta: the API index and the supported models."""

from __future__ import annotations

from starlette.testclient import TestClient

from mockserver.engine.app import MockApp

from ._family_seed import READ, auth, model


def test_index_lists_every_path_of_the_document(client: TestClient, mock: MockApp) -> None:
    response = client.get("/v1")
    assert response.status_code == 200
    body = response.json()
    assert body["version"] == "v1"
    assert body["resources"] == sorted(mock.spec.document["paths"])
    assert "/v1/kb/search" in body["resources"]


def test_index_needs_a_token(client: TestClient) -> None:
    assert client.get("/v1", headers={"Authorization": ""}).status_code == 401


def test_models_are_sorted_by_model_string(client: TestClient, mock: MockApp) -> None:
    model(mock, "zeta:z-1")
    model(mock, "aaa:first-1")
    response = client.get("/v1/models", headers=auth(READ))
    assert response.status_code == 200
    strings = [m["model_string"] for m in response.json()["data"]]
    assert strings == sorted(strings)
    assert strings[0] == "aaa:first-1" and "zeta:z-1" in strings
    assert len(strings) == mock.store.count("models")
    assert set(response.json()) == {"data"}  # a data-only list
