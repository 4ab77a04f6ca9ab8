"""Workflows: versions, folders, executions (time bounds), event timelines, folder moves."""

from __future__ import annotations

from conftest import OTHER, READ, auth

from .conftest import ALPINE, HARBOR, Factory


def test_all_versions(client, make: Factory) -> None:
    make.clear("workflows")
    v1 = make.workflow(master_id="wm_x", version=1, is_latest=False,
                       updated_at="2026-10-01T00:00:00.000Z")
    v2 = make.workflow(master_id="wm_x", version=2, is_latest=True,
                       updated_at="2026-10-03T00:00:00.000Z")
    other = make.workflow(master_id="wm_y", updated_at="2026-10-02T00:00:00.000Z")
    make.workflow(ALPINE, master_id="wm_z")
    path = f"/v1/workspaces/{HARBOR}/workflows"
    latest = client.get(path).json()["data"]
    assert [w["workflow_id"] for w in latest] == [v2["workflow_id"], other["workflow_id"]]
    assert "_workspace_id" not in latest[0]
    every = client.get(path, params={"all_versions": "true"}).json()["data"]
    assert [w["workflow_id"] for w in every] == [
        v2["workflow_id"], other["workflow_id"], v1["workflow_id"]]
    falsy = client.get(path, params={"all_versions": "false"}).json()["data"]
    assert falsy == latest
    r = client.get(path, params={"all_versions": "yes"})
    assert r.status_code == 400 and "all_versions" in r.json()["error"]
    assert client.get(path, headers=auth(OTHER)).status_code == 403


def test_folders_count_latest_versions(client) -> None:
    folders = client.get(f"/v1/workspaces/{HARBOR}/workflow-folders").json()["data"]
    names = [f["name"] for f in folders]
    assert names == sorted(names) and all(f["workspace_id"] == HARBOR for f in folders)
    counts = {f["id"]: f["workflow_count"] for f in folders}
    every = client.get(f"/v1/workspaces/{HARBOR}/workflows",
                       params={"all_versions": "true", "limit": 100}).json()["data"]
    for folder_id, count in counts.items():
        assert count == sum(1 for w in every if w["folder_id"] == folder_id and w["is_latest"])


def test_executions_bounds_and_status(client, make: Factory) -> None:
    wf = make.workflow()
    other = make.workflow()
    e1 = make.execution(wf, started_at="2026-10-01T00:00:00.000Z", status="SUCCESS")
    e2 = make.execution(wf, started_at="2026-10-02T00:00:00.000Z", status="FAILED")
    e3 = make.execution(wf, started_at="2026-10-03T00:00:00.000Z", status="SUCCESS")
    make.execution(other, started_at="2026-10-02T00:00:00.000Z")
    path = f"/v1/workflows/{wf['workflow_id']}/executions"

    def got(**params: str) -> list[str]:
        r = client.get(path, params=params)
        assert r.status_code == 200, r.text
        return [x["execution_id"] for x in r.json()["data"]]

    assert got() == [e3["execution_id"], e2["execution_id"], e1["execution_id"]]
    assert got(started_after="2026-10-02T00:00:00.000Z") == [e3["execution_id"], e2["execution_id"]]
    assert got(started_before="2026-10-02T00:00:00.000Z") == [e1["execution_id"]]
    assert got(started_after="2026-10-02T00:00:00.000Z",
               started_before="2026-10-03T00:00:00.000Z") == [e2["execution_id"]]
    assert got(started_after="2026-10-02T00:00:00.001Z") == [e3["execution_id"]]
    assert got(status="SUCCESS") == [e3["execution_id"], e1["execution_id"]]
    r = client.get(path, params={"started_after": "2026-10-02"})
    assert r.status_code == 400 and "started_after" in r.json()["error"]
    assert client.get("/v1/workflows/wfnope/executions").status_code == 404


def test_execution_events(client, make: Factory) -> None:
    wf = make.workflow()
    other = make.workflow()
    ex = make.execution(wf)
    foreign = make.execution(other)
    ev3 = make.event(ex, 3)
    ev1 = make.event(ex, 1)
    ev2 = make.event(ex, 2)
    make.event(foreign, 1)
    path = f"/v1/workflows/{wf['workflow_id']}/executions/{ex['execution_id']}/events"
    r = client.get(path)
    assert [e["id"] for e in r.json()["data"]] == [ev1["id"], ev2["id"], ev3["id"]]
    page = client.get(path, params={"limit": 2}).json()
    assert page["has_more"] is True
    rest = client.get(path, params={"limit": 2, "cursor": page["next_cursor"]}).json()
    assert [e["id"] for e in rest["data"]] == [ev3["id"]]
    wrong = f"/v1/workflows/{wf['workflow_id']}/executions/{foreign['execution_id']}/events"
    assert client.get(wrong).status_code == 404
    assert client.get(f"/v1/workflows/{wf['workflow_id']}/executions/wxnope/events").status_code == 404


def test_move_to_folder(client, make: Factory) -> None:
    make.clear("workflows")
    v1 = make.workflow(master_id="wm_m", version=1, is_latest=False)
    v2 = make.workflow(master_id="wm_m", version=2, is_latest=True)
    bystander = make.workflow(master_id="wm_b")
    folder = make.folder(name="Aardvark")
    path = f"/v1/workflows/{v1['workflow_id']}/folder"
    r = client.patch(path, json={"folder_id": folder["id"]})
    assert r.status_code == 200, r.text
    assert r.json()["data"] == {"workflow_id": v1["workflow_id"], "master_id": "wm_m",
                                "folder_id": folder["id"]}
    every = client.get(f"/v1/workspaces/{HARBOR}/workflows",
                       params={"all_versions": "true"}).json()["data"]
    folders = {w["workflow_id"]: w["folder_id"] for w in every}
    assert folders[v1["workflow_id"]] == folders[v2["workflow_id"]] == folder["id"]
    assert folders[bystander["workflow_id"]] is None
    listed = client.get(f"/v1/workspaces/{HARBOR}/workflow-folders").json()["data"]
    assert next(f for f in listed if f["id"] == folder["id"])["workflow_count"] == 1

    r = client.patch(path, json={"folder_id": None})
    assert r.status_code == 200 and r.json()["data"]["folder_id"] is None
    every = client.get(f"/v1/workspaces/{HARBOR}/workflows",
                       params={"all_versions": "true"}).json()["data"]
    assert all(w["folder_id"] is None for w in every)

    r = client.patch(path, json={"folder_id": ""})
    assert r.status_code == 400 and "folder_id" in r.json()["error"]
    r = client.patch(path, json={})
    assert r.status_code == 400 and "folder_id" in r.json()["error"]
    alpine = make.folder(ALPINE)
    for bad in (alpine["id"], "wdnope"):
        r = client.patch(path, json={"folder_id": bad})
        assert r.status_code == 404 and "folder_id" in r.json()["error"]
    assert client.patch(path, json={"folder_id": None}, headers=auth(READ)).status_code == 403
