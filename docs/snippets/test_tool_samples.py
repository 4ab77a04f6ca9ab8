"""The other samples of the custom-tools page (docs/tool-authors.md), run through the mock with
tool execution on (the plugin's default): the JavaScript tool, the Python tool's `logs` and
`rawData`, and a few rows of the page's table of failures."""

from pathlib import Path

import pytest

HERE = Path(__file__).parent


def _run(mock_api, language, code, parameters, declared):
    client = mock_api.client()
    made = client.post("/v1/custom-tools", json={
        "workspace_id": mock_api.workspaces.primary, "name": f"sample-{language}",
        "description": "A sample of the docs", "language": language, "code": code,
        "parameters": declared,
    })
    assert made.status_code == 201, made.text
    answer = client.post(f"/v1/custom-tools/{made.json()['data']['id']}/run",
                         json={"parameters": parameters})
    assert answer.status_code == 200, answer.text
    return answer.json()["data"]


def test_the_javascript_tool_returns_its_computed_message(mock_api):
    run = _run(mock_api, "javascript", (HERE / "quote_tool.js").read_text(), {"nights": 3},
               {"nights": {"type": "number", "required": True, "description": "Nights"}})
    assert run["success"], run["error"]
    assert run["message"] == "Total $645"
    assert "quoting 3" in run["logs"]


def test_the_python_tool_prints_to_logs_and_returns_raw_data(mock_api):
    run = _run(mock_api, "python", (HERE / "tide_check.py").read_text(), {"date": "2026-11-02"},
               {"date": {"type": "string", "required": True, "description": "ISO date"}})
    assert run["success"], run["error"]
    assert "looking up 2026-11-02" in run["logs"]
    assert run["result"]["rawData"] == {"day": "2026-11-02"}


@pytest.mark.parametrize(("body", "error"), [
    ("return 42", "it returned int: 42"),
    ('return {"message": 7}', "`message` is int, not a string"),
    ('raise KeyError("no city")', "KeyError: 'no city'"),
])
def test_a_broken_contract_is_a_200_with_success_false(mock_api, body, error):
    code = f"def main(**params):\n    if not params:\n        {body}\n    return {{'message': 'ok'}}\n"
    run = _run(mock_api, "python", code, {}, {})
    assert run["success"] is False
    assert error in run["error"]
