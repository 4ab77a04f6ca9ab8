"""Custom code tools: static checks, name uniqueness (400), version bumps, deterministic runs."""

from __future__ import annotations

from typing import Any

import pytest
from starlette.testclient import TestClient

from mockserver.engine.app import MockApp

from ._family_seed import ALPINE, DESERT, HARBOR, OTHER, READ, auth

PY_OK = "def main(**params):\n    city = params.get('city')\n    return {'message': city}\n"
JS_OK = "async function main(params) {\n  return { message: params.city };\n}\n"
PARAMS = {
    "city": {"type": "string", "required": True, "description": "City"},
    "units": {"type": "string", "required": False, "description": "Units",
              "enum_values": ["metric", "imperial"]},
}


def create(client: TestClient, **over: Any) -> dict[str, Any]:
    body = {"workspace_id": HARBOR, "name": "t-weather", "description": "Weather lookup",
            "language": "python", "code": PY_OK, "parameters": PARAMS, **over}
    response = client.post("/v1/custom-tools", json=body)
    assert response.status_code == 201, response.text
    return response.json()["data"]


def test_create_starts_at_version_one(client: TestClient) -> None:
    tool = create(client)
    assert tool["version"] == 1 and tool["validated"] is True
    assert tool["enable_globally"] is False and tool["parameters"] == PARAMS
    assert client.get(f"/v1/custom-tools/{tool['id']}", headers=auth(READ)).json()["data"] == tool
    assert client.get(f"/v1/custom-tools/{tool['id']}", headers=auth(OTHER)).status_code == 403


def test_description_is_optional_on_create(client: TestClient) -> None:
    """Reference (custom-tools/create): only a maximum length is shown for `description`, after
    the required fields; omitted, it is "" (the document's default, DECISIONS E23)."""
    response = client.post("/v1/custom-tools", json={
        "workspace_id": HARBOR, "name": "t-bare", "language": "python", "code": PY_OK})
    assert response.status_code == 201, response.text
    tool = response.json()["data"]
    assert tool["description"] == ""
    assert client.get(f"/v1/custom-tools/{tool['id']}").json()["data"] == tool
    too_long = client.post("/v1/custom-tools", json={
        "workspace_id": HARBOR, "name": "t-long", "language": "python", "code": PY_OK,
        "description": "x" * 1025})
    assert too_long.status_code == 400 and "description" in too_long.json()["error"]


@pytest.mark.parametrize(("language", "code", "missing"), [
    ("python", "def helper(**params):\n    return {'message': 'x'}\n", "main"),
    ("python", "def main(**params):\n    print('no result')\n", "return"),
    ("python", "# def main(**params):\n# return 1\nx = 1\n", "main"),
    # Read by `ast`: main and return inside strings or a nested function do not count.
    ("python", 'DOC = """\ndef main(**params):\n    return 1\n"""\n', "main"),
    ("python", "def main(**params):\n    '''return {}'''\n    pass\n", "return"),
    ("python", "def main(**params):\n    def inner():\n        return 1\n    inner()\n",
     "return"),
    ("python", "def main(**params)\n    return {}\n", "parse"),
    ("javascript", "function helper(params) { return { message: 'x' }; }", "main"),
    ("javascript", "async function main(params) { console.log(params); }", "return"),
    ("javascript", JS_OK.replace("async function main(params)", "def main(**params)"), "main"),
])
def test_code_is_checked_statically(client: TestClient, language: str, code: str,
                                    missing: str) -> None:
    response = client.post("/v1/custom-tools", json={
        "workspace_id": HARBOR, "name": "t-bad", "description": "d", "language": language,
        "code": code})
    assert response.status_code == 400
    message = response.json()["error"]
    assert "'code'" in message and missing in message


@pytest.mark.parametrize("code", [
    JS_OK,
    "function main(params) {\n  return { message: 'x' };\n}",
    "const main = async (params) => {\n  return { message: 'x' };\n};",
])
def test_javascript_entrypoint_forms(client: TestClient, code: str) -> None:
    assert create(client, language="javascript", code=code)["language"] == "javascript"


def test_async_python_main_is_accepted(client: TestClient) -> None:
    create(client, code="async def main(**params):\n    return {'message': 'ok'}\n")


def test_names_are_unique_in_a_workspace(client: TestClient) -> None:
    first = create(client)
    again = client.post("/v1/custom-tools", json={
        "workspace_id": HARBOR, "name": first["name"], "description": "d",
        "language": "python", "code": PY_OK})
    assert again.status_code == 400 and "name" in again.json()["error"]
    assert create(client, workspace_id=ALPINE)["name"] == first["name"]
    second = create(client, name="t-second")
    rename = client.patch(f"/v1/custom-tools/{second['id']}", json={"name": first["name"]})
    assert rename.status_code == 400 and "name" in rename.json()["error"]
    assert client.get(f"/v1/custom-tools/{second['id']}").json()["data"]["name"] == "t-second"
    own = client.patch(f"/v1/custom-tools/{first['id']}", json={"name": first["name"]})
    assert own.status_code == 200


def test_a_code_change_bumps_the_version_by_one(client: TestClient) -> None:
    tool = create(client)
    changed = client.patch(f"/v1/custom-tools/{tool['id']}", json={
        "code": PY_OK.replace("'city')", "'city', 'Oslo')")}).json()["data"]
    assert changed["version"] == 2
    assert changed["updated_at"] > tool["updated_at"]
    same = client.patch(f"/v1/custom-tools/{tool['id']}",
                        json={"code": changed["code"]}).json()["data"]
    assert same["version"] == 2  # the same text is no change
    other = client.patch(f"/v1/custom-tools/{tool['id']}", json={
        "description": "New", "enable_globally": True, "name": "t-renamed"}).json()["data"]
    assert other["version"] == 2
    assert other["description"] == "New" and other["enable_globally"] is True
    assert other["code"] == changed["code"] and other["parameters"] == PARAMS
    again = client.patch(f"/v1/custom-tools/{tool['id']}", json={"code": PY_OK}).json()["data"]
    assert again["version"] == 3
    assert client.get(f"/v1/custom-tools/{tool['id']}").json()["data"] == again


def test_patch_rechecks_code_and_language(client: TestClient) -> None:
    tool = create(client)
    bad = client.patch(f"/v1/custom-tools/{tool['id']}",
                       json={"code": "def main(**p):\n    pass\n"})
    assert bad.status_code == 400 and "'code'" in bad.json()["error"]
    switch = client.patch(f"/v1/custom-tools/{tool['id']}", json={"language": "javascript"})
    assert switch.status_code == 400
    assert "'code'" in switch.json()["error"] and "javascript" in switch.json()["error"]
    assert client.get(f"/v1/custom-tools/{tool['id']}").json()["data"] == tool
    both = client.patch(f"/v1/custom-tools/{tool['id']}",
                        json={"language": "javascript", "code": JS_OK}).json()["data"]
    assert both["language"] == "javascript" and both["version"] == 2


def test_list_is_newest_first_and_scoped(client: TestClient) -> None:
    older = create(client, name="t-older")
    newer = create(client, name="t-newer")
    elsewhere = create(client, name="t-alpine", workspace_id=ALPINE)
    page = client.get("/v1/custom-tools", params={"workspace_id": HARBOR, "limit": 100}).json()
    ids = [t["id"] for t in page["data"]]
    assert ids.index(newer["id"]) < ids.index(older["id"]) and elsewhere["id"] not in ids
    assert client.get("/v1/custom-tools", params={"workspace_id": DESERT}).status_code == 403


def test_run_needs_every_required_parameter(client: TestClient) -> None:
    tool = create(client)
    response = client.post(f"/v1/custom-tools/{tool['id']}/run", json={"parameters": {}})
    assert response.status_code == 400
    assert "parameters" in response.json()["error"] and "city" in response.json()["error"]
    wrong = client.post(f"/v1/custom-tools/{tool['id']}/run",
                        json={"parameters": {"city": 3}})
    assert wrong.status_code == 400 and "city" in wrong.json()["error"]
    outside = client.post(f"/v1/custom-tools/{tool['id']}/run",
                          json={"parameters": {"city": "Oslo", "units": "kelvin"}})
    assert outside.status_code == 400 and "units" in outside.json()["error"]


def test_run_succeeds_deterministically(client: TestClient) -> None:
    tool = create(client)
    args = {"units": "metric", "city": "Oslo"}
    response = client.post(f"/v1/custom-tools/{tool['id']}/run", json={"parameters": args})
    assert response.status_code == 200
    result = response.json()["data"]
    assert result["success"] is True and result["error"] is None
    assert result["message"] == "t-weather ran with city, units"
    assert result["result"] == {"message": result["message"], "rawData": args}
    again = client.post(f"/v1/custom-tools/{tool['id']}/run", json={"parameters": args}).json()
    assert again["data"] == result
    other = client.post(f"/v1/custom-tools/{tool['id']}/run",
                        json={"parameters": {"city": "Bergen"}}).json()["data"]
    assert other["result"]["rawData"] == {"city": "Bergen"}


def test_run_reports_a_raise_in_main_as_a_failed_run(client: TestClient) -> None:
    code = ("def main(**params):\n    if params.get('x'):\n        return {'message': 'x'}\n"
            "    raise ValueError('weather service down')\n")
    tool = create(client, code=code)
    response = client.post(f"/v1/custom-tools/{tool['id']}/run",
                           json={"parameters": {"city": "Oslo"}})
    assert response.status_code == 200
    result = response.json()["data"]
    assert result["success"] is False and result["result"] is None
    assert result["error"] == "ValueError: weather service down"
    assert "Traceback" in result["logs"] and "line 4" in result["logs"]


def test_run_reads_python_with_ast(client: TestClient) -> None:
    # A `raise` inside a triple-quoted string is text, not a statement: the run succeeds.
    code = ('def main(**params):\n    """Example:\n    raise ValueError("not really")\n    """\n'
            "    return {'message': 'ok'}\n")
    tool = create(client, code=code)
    result = client.post(f"/v1/custom-tools/{tool['id']}/run",
                         json={"parameters": {"city": "Oslo"}}).json()["data"]
    assert result["success"] is True, result


def test_run_reports_a_javascript_throw(client: TestClient) -> None:
    code = ("async function main(params) {\n  if (params.x) { throw new Error('nested'); }\n"
            "  throw new Error('quota exceeded');\n  return { message: 'never' };\n}\n")
    tool = create(client, language="javascript", code=code, parameters={})
    result = client.post(f"/v1/custom-tools/{tool['id']}/run", json={}).json()["data"]
    assert result["success"] is False and result["error"] == "Error: quota exceeded"


def test_run_with_a_workspace_override_in_the_body(client: TestClient) -> None:
    tool = create(client)
    body = {"parameters": {"city": "Oslo"}}
    wrong = client.post(f"/v1/custom-tools/{tool['id']}/run",
                        json={**body, "workspace_id": ALPINE})
    assert wrong.status_code == 404
    right = client.post(f"/v1/custom-tools/{tool['id']}/run",
                        json={**body, "workspace_id": HARBOR})
    assert right.status_code == 200
    assert client.post(f"/v1/custom-tools/{tool['id']}/run", json=body,
                       headers=auth(READ)).status_code == 403


def test_runtimes(client: TestClient) -> None:
    runtimes = client.get("/v1/custom-tools/runtimes").json()["data"]
    by_language = {r["language"]: r for r in runtimes}
    assert by_language.keys() == {"python", "javascript"}
    assert by_language["python"]["entrypoint_signature"] == "def main(**params)"
    assert by_language["javascript"]["entrypoint_signature"] == "async function main(params)"
    assert "message" in by_language["python"]["return_shape"]


SAMPLES: dict[str, Any] = {"string": "x", "number": 1, "boolean": True, "object": {}, "array": []}


def test_every_tool_of_the_dataset_runs(client: TestClient, mock: MockApp) -> None:
    for tool in list(mock.store.all("custom_tools")):
        if tool["workspace_id"] not in (HARBOR, ALPINE):
            continue
        args = {name: (spec.get("enum_values") or [SAMPLES[spec["type"]]])[0]
                for name, spec in tool["parameters"].items()}
        response = client.post(f"/v1/custom-tools/{tool['id']}/run", json={"parameters": args})
        assert response.status_code == 200, response.text
        assert isinstance(response.json()["data"]["success"], bool)


# -- vendor parity: delete (reference: custom-tools/delete, spec/DECISIONS.md E26) ----------


def _agent_tool(client: TestClient, agent_id: str, name: str) -> dict[str, Any] | None:
    tools = client.get(f"/v1/agents/{agent_id}/tools", params={"source": "custom"}).json()
    return next((t for t in tools["data"] if t["name"] == name), None)


def test_a_deleted_tool_is_gone_everywhere_with_its_access_records(client: TestClient,
                                                                     mock: MockApp) -> None:
    tool = create(client)
    agent = client.post("/v1/agents", json={"workspace_id": HARBOR, "name": "Desk"}).json()["data"]
    switched = client.patch(f"/v1/agents/{agent['id']}/tools",
                            json={"tool_name": tool["name"], "source": "custom", "enabled": True})
    assert switched.status_code == 200
    assert _agent_tool(client, agent["id"], tool["name"])["enabled"] is True  # type: ignore[index]
    # Another agent holds a switch by the tool's name, as fixtures may.
    by_name = client.post("/v1/agents", json={"workspace_id": HARBOR, "name": "Night"}).json()
    mock.store.update("agents", by_name["data"]["id"], {"_tool_states": {tool["name"]: True}})

    response = client.delete(f"/v1/custom-tools/{tool['id']}")
    assert response.status_code == 200, response.text
    assert response.json() == {"data": {"id": tool["id"], "deleted": True}}
    assert client.get(f"/v1/custom-tools/{tool['id']}").status_code == 404
    listed = client.get("/v1/custom-tools", params={"workspace_id": HARBOR, "limit": 100}).json()
    assert tool["id"] not in [t["id"] for t in listed["data"]]
    assert _agent_tool(client, agent["id"], tool["name"]) is None
    gone = client.patch(f"/v1/agents/{agent['id']}/tools",
                        json={"tool_name": tool["name"], "source": "custom", "enabled": False})
    assert gone.status_code == 400 and "tool_name" in gone.json()["error"]
    assert client.post(f"/v1/custom-tools/{tool['id']}/run",
                       json={"parameters": {"city": "Oslo"}}).status_code == 404
    assert client.patch(f"/v1/custom-tools/{tool['id']}",
                        json={"description": "x"}).status_code == 404
    assert client.delete(f"/v1/custom-tools/{tool['id']}").status_code == 404
    # Its access records went with it: no agent keeps a switch of it, and a new tool of the
    # same name starts from its default on every agent.
    for holder in (agent["id"], by_name["data"]["id"]):
        assert mock.store.get("agents", holder)["_tool_states"] == {}  # type: ignore[index]
    again = create(client)
    assert again["id"] != tool["id"]
    for holder in (agent["id"], by_name["data"]["id"]):
        assert _agent_tool(client, holder, tool["name"])["enabled"] is False  # type: ignore[index]


def test_delete_needs_write_access_and_the_tools_workspace(client: TestClient) -> None:
    tool = create(client)
    url = f"/v1/custom-tools/{tool['id']}"
    assert client.delete(url, headers=auth(READ)).status_code == 403
    assert client.delete(url, headers=auth(OTHER)).status_code == 403
    assert client.delete(url, params={"workspace_id": ALPINE}).status_code == 404
    assert client.get(url).json()["data"] == tool  # nothing was deleted
