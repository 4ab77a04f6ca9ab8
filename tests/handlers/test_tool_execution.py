"""Custom tools run for real (issue 42; engine/toolexec.py, DECISIONS T1-T15): the answer the
code computes, the contract checked, exceptions, logs, limits, no network, the server still
answering while a tool runs, execution off by default on `serve` and what it says then."""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import threading
import time
from collections.abc import Iterator
from datetime import date
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from starlette.testclient import TestClient

from mockserver.engine import toolexec
from mockserver.engine.app import Config, MockApp
from mockserver.engine.handlers.custom_tools import NOT_EXECUTED
from mockserver.engine.toolexec import Limits, network_isolation, run_tool
from mockserver.standalone.server import create_app

from ._family_seed import HARBOR, auth

# Generous for the runs that should end (a loaded machine starts Node slowly); the `while True`
# test has a mock of its own with TIMEOUT.
LIMITS = Limits(timeout_s=30, output_bytes=4096)
TIMEOUT = 2.0
BUN = os.environ.get("MOCK_API_BUN") or shutil.which("bun")
NODE = shutil.which("node")


def running_mock(limits: Limits = LIMITS, **config: Any) -> MockApp:
    return MockApp(Config(self_check=True, frozen_clock="2026-11-01T12:00:00.000Z",
                          cursor_secret=b"tests", run_tool_code=True, tool_limits=limits,
                          **config))


@pytest.fixture(scope="module")
def mock() -> MockApp:
    return running_mock()


@pytest.fixture
def client(mock: MockApp) -> Iterator[TestClient]:
    mock.reset()
    with TestClient(create_app(mock=mock), headers=auth()) as test_client:
        yield test_client


def create(client: TestClient, code: str, language: str = "python",
           parameters: dict[str, Any] | None = None, name: str = "t-run") -> str:
    response = client.post("/v1/custom-tools", json={
        "workspace_id": HARBOR, "name": name, "description": "test", "language": language,
        "code": code, "parameters": parameters or {}})
    assert response.status_code == 201, response.text
    return str(response.json()["data"]["id"])


def run(client: TestClient, tool_id: str, **params: Any) -> dict[str, Any]:
    response = client.post(f"/v1/custom-tools/{tool_id}/run", json={"parameters": params})
    assert response.status_code == 200, response.text
    data: dict[str, Any] = response.json()["data"]
    return data


def py(body: str) -> str:
    return "def main(**params):\n" + "".join(f"    {line}\n" for line in body.splitlines())


# -- the answer the code computes ----------------------------------------------------------------


def test_tide_times_returns_the_message_its_code_computes(client: TestClient) -> None:
    result = run(client, "kg_harbor_tides", date="2026-11-04")
    day = date(2026, 11, 4)  # a Wednesday: the fixture's table gives 07:58 and 20:20
    assert result["success"] is True and result["error"] is None, result
    assert result["message"] == (f"Low tide on {day:%A %B %d}: 07:58 and 20:20. Tide pools are "
                                 "best 1 hour either side.")
    assert result["result"] == {"message": result["message"]}  # no rawData returned
    assert isinstance(result["run_time_ms"], int) and result["run_time_ms"] >= 0


def test_parameters_are_passed_as_declared_and_raw_data_comes_back(client: TestClient) -> None:
    tool = create(client, py("return {'message': f\"{params['n'] * 2}\", 'rawData': params}"),
                  parameters={"n": {"type": "number", "required": True, "description": "n"},
                              "tags": {"type": "array", "required": False, "description": "t"}})
    result = run(client, tool, n=21, tags=["a", {"b": None}])
    assert result["message"] == "42"
    assert result["result"] == {"message": "42", "rawData": {"n": 21, "tags": ["a", {"b": None}]}}


def test_async_python_main_runs(client: TestClient) -> None:
    code = ("import asyncio\n\nasync def main(**params):\n    await asyncio.sleep(0)\n"
            "    return {'message': 'awaited'}\n")
    assert run(client, create(client, code))["message"] == "awaited"


# -- the contract, exceptions, logs ------------------------------------------------------------


@pytest.mark.parametrize(("body", "says"), [
    ("return 42", "it returned int: 42"),
    ("return {'message': 7}", "`message` is int, not a string"),
    ("return {'rawData': 1}", "has no `message`"),
    ("return {'message': 'x', 'rawData': {1, 2}}", "must encode as JSON"),
    ("return None", "it returned null"),
])
def test_a_return_outside_the_contract_fails_naming_it(client: TestClient, body: str,
                                                       says: str) -> None:
    result = run(client, create(client, py(body)))
    assert result["success"] is False and result["result"] is None and result["message"] is None
    assert "main must return an object with a string `message`" in result["error"]
    assert says in result["error"], result["error"]


def test_a_raise_depending_on_a_parameter_is_a_failed_run_with_the_exception(
        client: TestClient) -> None:
    tool = create(client, py("if params.get('fail'):\n    raise KeyError('no such city')\n"
                             "return {'message': 'fine'}"),
                  parameters={"fail": {"type": "boolean", "required": False, "description": "f"}})
    assert run(client, tool, fail=False)["success"] is True  # the same code, not failing
    result = run(client, tool, fail=True)
    assert result["success"] is False and result["error"] == "KeyError: 'no such city'"
    assert 'File "main.py", line 3, in main' in result["logs"]


def test_what_the_code_prints_is_in_logs_and_bounded(client: TestClient) -> None:
    tool = create(client, py("print('looking up', params)\nimport sys\n"
                             "print('warned', file=sys.stderr)\nreturn {'message': 'ok'}"))
    result = run(client, tool)
    assert result["logs"] == "looking up {}\nwarned\n"
    flood = run(client, create(client, py("print('x' * 100000)\nreturn {'message': 'ok'}"),
                               name="t-flood"))
    assert flood["success"] is True
    assert flood["logs"].startswith("x" * LIMITS.output_bytes)
    assert len(flood["logs"]) < LIMITS.output_bytes + 200
    assert f"more bytes of output not kept: the mock keeps {LIMITS.output_bytes}" in flood["logs"]


def test_imports_standard_library_yes_unlisted_or_missing_packages_named(
        client: TestClient) -> None:
    ok = run(client, create(client, "import json, zoneinfo\n" + py("return {'message': "
                                                                     "json.dumps([1])}")))
    assert ok["message"] == "[1]"
    unlisted = run(client, create(client, "import starlette\n" + py("return {'message': ''}"),
                                  name="t-unlisted"))
    assert unlisted["success"] is False
    assert "No module named 'starlette'" in unlisted["error"]
    assert "GET /v1/custom-tools/runtimes" in unlisted["error"]
    missing = [d for d, m in toolexec.PYTHON_PACKAGES.items()
               if d not in toolexec.installed_python_packages()]
    if missing:
        module = toolexec.PYTHON_PACKAGES[missing[0]]
        absent = run(client, create(client, f"import {module}\n" + py("return {'message': ''}"),
                                    name="t-absent"))
        assert f"package {missing[0]!r} (import {module}) is not available in the mock" in \
            absent["error"]


def test_memory_over_the_limit_fails_the_run(client: TestClient) -> None:
    result = run(client, create(client, py("block = bytearray(4 * 1024 ** 3)\n"
                                           "return {'message': 'allocated'}")))
    assert result["success"] is False and result["error"].startswith("MemoryError")


def test_no_server_secret_reaches_the_code(client: TestClient, monkeypatch) -> None:
    monkeypatch.setenv("MOCK_API_CONTROL_TOKEN", "s3cret")
    result = run(client, create(client, "import os\n" + py(
        "return {'message': ','.join(sorted(os.environ))}")))
    assert "MOCK_API_CONTROL_TOKEN" not in result["message"] and "PATH" in result["message"]


# -- no network ----------------------------------------------------------------------------------


@pytest.fixture
def listening() -> Iterator[int]:
    """A port on loopback that accepts connections (the tool code must not reach it)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield int(sock.getsockname()[1])


def test_a_network_connection_from_python_fails(client: TestClient, listening: int) -> None:
    tool = create(client, "import socket\n" + py(
        f"socket.create_connection(('127.0.0.1', {listening}), timeout=1)\n"
        "return {'message': 'connected'}"))
    result = run(client, tool)
    assert result["success"] is False, result
    assert "network access is disabled" in result["error"]


@pytest.mark.skipif(not network_isolation(), reason="no network namespace on this system")
def test_the_namespace_stops_what_the_in_process_block_misses(listening: int) -> None:
    """`_socket` bypasses the patched `socket` module; the empty network namespace does not."""
    code = "import _socket\n" + py(f"s = _socket.socket()\ns.connect(('127.0.0.1', {listening}))"
                                   "\nreturn {'message': 'connected'}")
    result = run_tool({"language": "python", "code": code}, {}, LIMITS)
    assert result.success is False and "Network is unreachable" in (result.error or ""), result


# -- JavaScript ----------------------------------------------------------------------------------

JS = ("async function main(params) {\n  console.log('quoting', params.nights);\n"
      "  const total = params.nights * 215 + 95;\n"
      "  return { message: `Total $${total}`, rawData: { total } };\n}\n")
JS_PARAMS = {"nights": {"type": "number", "required": True, "description": "nights"}}
RUNTIMES = [pytest.param("node", marks=pytest.mark.skipif(not NODE, reason="node not installed")),
            pytest.param("bun", marks=pytest.mark.skipif(not BUN, reason="bun not installed"))]


@pytest.fixture(params=RUNTIMES)
def js_runtime(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Bun where installed (MOCK_API_BUN or PATH; .ci/run installs it from npm), and Node with
    Bun out of sight."""
    if request.param == "node":
        monkeypatch.setenv("MOCK_API_BUN", "")
        monkeypatch.setattr(toolexec.shutil, "which",
                            lambda name, which=shutil.which: None if name == "bun" else which(name))
    else:
        monkeypatch.setenv("MOCK_API_BUN", str(BUN))
    return str(request.param)


def test_a_javascript_tool_returns_its_computed_message(client: TestClient,
                                                        js_runtime: str) -> None:
    result = run(client, create(client, JS, "javascript", JS_PARAMS), nights=3)
    assert result["success"] is True, result
    assert result["message"] == "Total $740"
    assert result["result"] == {"message": "Total $740", "rawData": {"total": 740}}
    assert result["logs"].startswith("quoting 3")
    runtimes = client.get("/v1/custom-tools/runtimes").json()["data"]
    assert next(r for r in runtimes if r["language"] == "javascript")["runtime"].lower() \
        .startswith(js_runtime)


@pytest.mark.parametrize(("code", "says"), [
    ("async function main(params) { return 42; }", "it returned number: 42"),
    ("async function main(params) { return { message: 1 }; }", "`message` is number"),
    ("async function main(params) {\n  if (params) throw new TypeError('no quote');\n"
     "  return { message: '' };\n}", "TypeError: no quote"),
    ("async function main(params) { await fetch('http://127.0.0.1:9/'); return {message: ''}; }",
     "network access is disabled"),
    ("import _ from 'lodash';\nasync function main(params) { return { message: '' }; }",
     "package 'lodash' is not available in the mock"),
])
def test_javascript_failures_are_named(client: TestClient, js_runtime: str, code: str,
                                       says: str) -> None:
    result = run(client, create(client, code, "javascript"))
    assert result["success"] is False and says in result["error"], result


def test_without_bun_or_node_a_javascript_run_names_what_is_missing(
        client: TestClient, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MOCK_API_BUN", "")
    monkeypatch.setattr(toolexec.shutil, "which", lambda name: None)
    result = run(client, create(client, JS, "javascript", JS_PARAMS), nights=1)
    assert result["success"] is False
    assert "need Bun" in result["error"] and "Node" in result["error"]
    runtimes = client.get("/v1/custom-tools/runtimes").json()["data"]
    js = next(r for r in runtimes if r["language"] == "javascript")
    assert js["runtime"].startswith("none installed in this mock")


# -- the timeout, and the server answering meanwhile ----------------------------------------------


def _served(app: Any) -> tuple[str, uvicorn.Server, threading.Thread, socket.socket]:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False,
                                           lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert time.monotonic() < deadline and thread.is_alive(), "uvicorn did not start"
        time.sleep(0.01)
    return f"http://127.0.0.1:{sock.getsockname()[1]}", server, thread, sock


def test_while_true_times_out_while_the_server_keeps_answering() -> None:
    mock = running_mock(Limits(timeout_s=TIMEOUT))
    url, server, thread, sock = _served(create_app(mock=mock))
    try:
        headers = auth()
        with httpx.Client(base_url=url, headers=headers, timeout=30) as http:
            made = http.post("/v1/custom-tools", json={
                "workspace_id": HARBOR, "name": "t-loop", "description": "loops",
                "language": "python", "code": py("while True:\n    pass\nreturn {'message': ''}"),
                "parameters": {}})
            tool = made.json()["data"]["id"]

        async def scenario() -> tuple[dict[str, Any], float, float, bool]:
            async with httpx.AsyncClient(base_url=url, headers=headers, timeout=30) as http:
                started = time.perf_counter()
                looping = asyncio.ensure_future(http.post(f"/v1/custom-tools/{tool}/run",
                                                          json={"parameters": {}}))
                await asyncio.sleep(0.3)  # wall clock: the run has started (its child is up)
                before = time.perf_counter()
                other = await http.get("/v1/workspaces")
                answered_ms = (time.perf_counter() - before) * 1000
                assert other.status_code == 200
                still_running = not looping.done()
                response = await looping
                return response.json()["data"], answered_ms, \
                    time.perf_counter() - started, still_running

        result, answered_ms, total_s, still_running = asyncio.run(scenario())
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()
    assert still_running  # the other request was answered during the run
    assert answered_ms < 100, f"another request took {answered_ms:.0f} ms during a run"
    assert result["success"] is False
    assert result["error"] == f"timed out after {TIMEOUT:g} s (the mock's limit for a run)"
    assert TIMEOUT <= total_s < TIMEOUT + 3, total_s  # generous: killed at the deadline
    assert result["run_time_ms"] >= TIMEOUT * 1000


def test_the_run_is_journaled_with_its_logs_and_time(client: TestClient, mock: MockApp) -> None:
    tool = create(client, py("print('journaled line')\nreturn {'message': 'ok'}"))
    result = run(client, tool)
    entries = client.get("/__mock__/requests", params={"path": f"/v1/custom-tools/{tool}/run"})
    assert entries.status_code == 200, entries.text
    entry = entries.json()["data"][0]
    assert entry["tool_run"] == {"success": True, "error": None, "logs": "journaled line\n",
                                 "run_time_ms": result["run_time_ms"]}


# -- off: serve's default, and the plugin's switch ----------------------------------------------


def test_off_the_answer_is_deterministic_and_says_nothing_ran(tmp_path: Path) -> None:
    mock = MockApp(Config(self_check=True))  # serve's default: off
    with TestClient(create_app(mock=mock), headers=auth()) as off:
        tool = create(off, py("return 42"))
        result = run(off, tool)
        assert result["success"] is True and result["message"] == "t-run ran with no parameters"
        assert result["logs"] == NOT_EXECUTED
        failing = run(off, create(off, py("raise ValueError('x')\nreturn {'message': ''}"),
                                  name="t-raise"))
        assert failing["success"] is False and failing["logs"].startswith(NOT_EXECUTED)
        runtimes = off.get("/v1/custom-tools/runtimes").json()["data"]
        assert all("code not executed here" in r["runtime"] for r in runtimes)


def test_a_state_may_turn_execution_off_on_a_running_server(client: TestClient,
                                                            mock: MockApp) -> None:
    tool = create(client, py("return {'message': 'ran'}"))
    mock.state.run_tool_code = False
    try:
        assert run(client, tool)["logs"] == NOT_EXECUTED
    finally:
        mock.state.run_tool_code = None
    assert run(client, tool)["message"] == "ran"


# -- serve --tool-code-dir: edit, save, run --------------------------------------------------------


def test_the_code_directory_is_read_again_on_every_run(tmp_path: Path) -> None:
    mock = running_mock(tool_code_dir=tmp_path)
    with TestClient(create_app(mock=mock), headers=auth()) as http:
        (tmp_path / "tide-times.py").write_text(py("return {'message': 'first'}"))
        assert run(http, "kg_harbor_tides")["message"] == "first"
        (tmp_path / "tide-times.py").write_text(py("return {'message': 'second'}"))
        assert run(http, "kg_harbor_tides")["message"] == "second"
        (tmp_path / "tide-times.py").unlink()
        (tmp_path / "tide-times.js").write_text(
            "async function main(params) { return { message: `js ${params.date}` }; }\n")
        if NODE or BUN:
            assert run(http, "kg_harbor_tides", date="d")["message"] == "js d"
        (tmp_path / "tide-times.js").write_text("async function main(params) { }\n")
        broken = run(http, "kg_harbor_tides")
        assert broken["success"] is False and "must contain a return statement" in \
            broken["error"] and "tide-times.js" in broken["error"]
        (tmp_path / "tide-times.js").unlink()
        assert run(http, "kg_harbor_tides", date="2026-11-02")["message"].startswith(
            "Low tide on Monday")  # no file: the stored code again


@pytest.mark.skipif(not NODE, reason="node not installed")
def test_node_is_held_to_the_memory_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    """About 200 MB of numbers: within Node's own default heap and 512 MiB, not within 64."""
    monkeypatch.setenv("MOCK_API_BUN", "")
    monkeypatch.setattr(toolexec.shutil, "which",
                        lambda name, which=shutil.which: None if name == "bun" else which(name))
    code = ("async function main(params) {\n  const kept = [];\n"
            "  for (let i = 0; i < 25; i++) kept.push(new Array(1e6).fill(i));\n"
            "  return { message: String(kept.length) };\n}\n")
    tool = {"language": "javascript", "code": code}
    assert run_tool(tool, {}, Limits(timeout_s=60, memory_mb=512)).message == "25"
    result = run_tool(tool, {}, Limits(timeout_s=60, memory_mb=64))
    assert result.success is False
    assert result.error == "the tool's code went over the mock's memory limit of 64 MiB"


def test_a_run_where_the_pipeline_cannot_offload_runs_in_place(client: TestClient,
                                                                 mock: MockApp) -> None:
    """Robustness mode's layer runs the core itself (no `Exchange.offload`): the deferred run
    is answered in place, the same answer (DECISIONS T14)."""
    from mockserver.robust.catalogue import catalogue_for
    from mockserver.robust.runtime import Variations

    tool = create(client, py("print('in place')\nreturn {'message': 'ran in place'}"))
    mock.state.set_variations(Variations(catalogue_for(mock.spec), [], None))
    try:
        result = run(client, tool)
    finally:
        mock.state.set_variations(None)
    assert result["message"] == "ran in place" and result["logs"] == "in place\n"


def test_the_returned_object_is_bounded() -> None:
    code = py("return {'message': 'x' * 300000}")
    result = run_tool({"language": "python", "code": code}, {},
                      Limits(timeout_s=30, result_bytes=100_000))
    assert result.success is False
    assert result.error == ("the returned object is over the mock's bound of 100000 bytes once "
                            "encoded as JSON")
    assert run_tool({"language": "python", "code": code}, {}, LIMITS).success is True


def test_runs_at_once_are_bounded_by_the_limit() -> None:
    """Two runs of a half-second sleep with one slot take a second at least (wall clock)."""
    limits = Limits(timeout_s=30, concurrent=1)
    tool = {"language": "python", "code": "import time\n" + py(
        "time.sleep(0.5)\nreturn {'message': 'slept'}")}
    results: list[Any] = []
    started = time.perf_counter()
    threads = [threading.Thread(target=lambda: results.append(run_tool(tool, {}, limits)))
               for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert [r.message for r in results] == ["slept", "slept"]
    assert time.perf_counter() - started >= 1.0
