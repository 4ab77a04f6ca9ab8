"""The wheel users install carries the document, the default fixtures and the static pages,
and the mock it contains starts from them without a checkout beside it."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_the_wheel_carries_its_data_and_runs_without_a_checkout(tmp_path: Path) -> None:
    subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir",
         str(tmp_path / "dist"), str(ROOT)],
        check=True, capture_output=True,
    )
    wheel = next((tmp_path / "dist").glob("workspace_api_mock-*.whl"))
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        entry_points = next(archive.read(n).decode() for n in names
                            if n.endswith(".dist-info/entry_points.txt"))
        archive.extractall(tmp_path / "site")
    assert "mockserver/_data/spec/openapi.yaml" in names
    assert "mockserver/_data/spec/control-openapi.yaml" in names
    for fixture in (ROOT / "fixtures").glob("*.yaml"):
        assert f"mockserver/_data/fixtures/{fixture.name}" in names
    assert any(n.startswith("mockserver/static/swagger-ui/") for n in names)
    assert "workspace-api-mock = mockserver.cli:main" in entry_points
    assert "workspace_api_mock = mockserver.pytest_plugin" in entry_points
    # The extracted wheel, imported from elsewhere, finds its own data and answers a request.
    script = (
        "from starlette.testclient import TestClient\n"
        "from mockserver.app import create_app\n"
        "from mockserver.spec import data_dir\n"
        "assert '_data' in str(data_dir('spec')), data_dir('spec')\n"
        "client = TestClient(create_app(), headers={'Authorization': 'Bearer mock-read-token'})\n"
        "print(client.get('/v1/conversations', params={'workspace_id': 'ws_harborview'}).status_code)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, check=True,
                          capture_output=True, text=True,
                          env={"PYTHONPATH": str(tmp_path / "site"), "PATH": "/usr/bin:/bin",
                               "HOME": str(tmp_path)})
    assert done.stdout.strip() == "200"
