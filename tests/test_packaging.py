"""The wheel users install: it carries the document (also parsed), the default fixtures and the
static pages; installed without extras into a fresh virtual environment it serves the mock and
has none of the gate's dependencies; with the `conform` extra, the gate's command line runs.

pip installs from the package index (or its local cache); nothing is written under HOME."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import venv
import zipfile
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(out),
         str(ROOT)],
        check=True, capture_output=True,
    )
    return next(out.glob("workspace_api_mock-*.whl"))


def test_the_wheel_carries_its_data_and_runs_without_a_checkout(wheel: Path,
                                                                 tmp_path: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        entry_points = next(archive.read(n).decode() for n in names
                            if n.endswith(".dist-info/entry_points.txt"))
        metadata = next(archive.read(n).decode() for n in names
                        if n.endswith(".dist-info/METADATA"))
        archive.extractall(tmp_path / "site")
    assert "mockserver/_data/spec/openapi.yaml" in names
    assert "mockserver/_data/spec/openapi.json" in names  # parsed at build time
    assert "mockserver/_data/spec/control-openapi.yaml" in names
    for fixture in (ROOT / "fixtures").glob("*.yaml"):
        assert f"mockserver/_data/fixtures/{fixture.name}" in names
    assert any(n.startswith("mockserver/standalone/static/swagger-ui/") for n in names)
    lua = ROOT / "mockserver" / "engine" / "replication" / "lua"
    assert sorted(lua.glob("*.lua")), "no Lua scripts found beside replication/"
    for source in lua.glob("*.lua"):  # replication's scripts, read as package data
        assert f"mockserver/engine/replication/lua/{source.name}" in names
    assert "workspace-api-mock = mockserver.cli:main" in entry_points
    assert "workspace_api_mock = mockserver.pytest_plugin" in entry_points
    requires = [line for line in metadata.splitlines() if line.startswith("Requires-Dist:")]
    for gate_only in ("schemathesis", "hypothesis", "pytest"):
        assert all(gate_only not in line or "; extra ==" in line
                   for line in requires), requires
    # The extracted wheel, imported from elsewhere, finds its own data, reads the parsed
    # document (no YAML parsing) and answers a request, writing nothing under HOME.
    home = tmp_path / "home"
    home.mkdir()
    script = (
        "from unittest import mock\n"
        "from starlette.testclient import TestClient\n"
        "from mockserver.openapi import spec\n"
        "from mockserver.standalone.server import create_app\n"
        "assert '_data' in str(spec.data_dir('spec')), spec.data_dir('spec')\n"
        "from mockserver.engine.replication import log\n"  # its Lua, read from the wheel
        "assert 'XRANGE' in log._SYNC and 'site' in log.__file__, log.__file__\n"
        "with mock.patch.object(spec, 'load_yaml', side_effect=AssertionError('parsed YAML')):\n"
        "    app = create_app()\n"
        "client = TestClient(app, headers={'Authorization': 'Bearer mock-read-token'})\n"
        "print(client.get('/v1/conversations', params={'workspace_id': 'ws_harborview'}).status_code)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, check=True,
                          capture_output=True, text=True,
                          env={"PYTHONPATH": str(tmp_path / "site"), "PATH": "/usr/bin:/bin",
                               "HOME": str(home)})
    assert done.stdout.strip() == "200"
    assert list(home.iterdir()) == [], "something was written under HOME"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _pip_install(python: Path, *requirements: str) -> None:
    # This environment's pip installs into the fresh one (`pip --python`): no ensurepip.
    done = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install",
                           "--quiet", "--disable-pip-version-check", *requirements],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]


def test_installed_without_extras_it_serves_and_lacks_the_gate_then_the_extra_adds_it(
        wheel: Path, tmp_path: Path) -> None:
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=False)
    python = env_dir / "bin" / "python"
    _pip_install(python, str(wheel))
    env = {"PATH": f"{env_dir / 'bin'}:/usr/bin:/bin", "HOME": str(tmp_path / "home")}

    def installed(module: str) -> bool:
        return subprocess.run([str(python), "-c", f"import {module}"], env=env,
                              capture_output=True).returncode == 0

    assert not installed("schemathesis") and not installed("hypothesis")
    # It serves: the console script, a real process on a loopback port.
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    server = subprocess.Popen([str(env_dir / "bin" / "workspace-api-mock"), "serve", "--port",
                               str(port)], env=env, cwd=tmp_path,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                answer = httpx.get(f"{base}/v1/tickets", params={"workspace_id": "ws_alpine"},
                                   headers={"Authorization": "Bearer mock-read-token"}, timeout=2)
                break
            except httpx.TransportError:
                assert server.poll() is None, server.communicate()
                assert time.monotonic() < deadline, "the installed mock did not start"
                time.sleep(0.1)
        assert answer.status_code == 200 and answer.json()["data"]
        # The gate says what is missing and how to get it.
        gate = subprocess.run([str(python), "-m", "mockserver", "conform", "--base-url", base],
                              env=env, capture_output=True, text=True)
        assert gate.returncode == 2
        assert "pip install 'workspace-api-mock[conform]'" in gate.stderr
        assert "schemathesis" in gate.stderr
        # With the extra, the gate runs (one operation, two examples; a run cut short by
        # --max-requests is INCOMPLETE, exit 3) against the installed mock and passes.
        _pip_install(python, f"workspace-api-mock[conform] @ {wheel.as_uri()}")
        assert installed("schemathesis") and installed("hypothesis")
        report = tmp_path / "report.json"
        gate = subprocess.run([str(python), "-m", "mockserver", "conform", "--base-url", base,
                               "--token", "mock-write-token", "--rate", "0", "--max-examples",
                               "2", "--include", "listWorkspaces", "--quiet", "--report",
                               f"json:{report}"], env=env, capture_output=True, text=True)
        assert gate.returncode == 0, gate.stdout + gate.stderr
        assert json.loads(report.read_text())["requests"] > 0
    finally:
        server.send_signal(signal.SIGTERM)
        server.communicate(timeout=20)
    home = tmp_path / "home"
    assert not home.exists() or not any(home.iterdir()), "something was written under HOME"


def test_a_checkout_parses_the_document_in_memory(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    # No parsed copy beside a checkout's YAML and no cache under HOME: the YAML is parsed.
    from mockserver.openapi import spec

    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    document = spec.read_document(ROOT / "spec" / "openapi.yaml")
    assert document["openapi"].startswith("3.1")
    assert list(tmp_path.iterdir()) == []
    # A stale parsed copy (another YAML's hash) is not used.
    copy = tmp_path / "doc"
    copy.mkdir()
    (copy / "openapi.yaml").write_text("openapi: 3.1.0\ninfo: {title: t, version: '1'}\n")
    (copy / "openapi.json").write_text('{"sha256": "0", "document": {"openapi": "stale"}}')
    assert spec.read_document(copy / "openapi.yaml")["openapi"] == "3.1.0"
    assert sorted(os.listdir(copy)) == ["openapi.json", "openapi.yaml"]
