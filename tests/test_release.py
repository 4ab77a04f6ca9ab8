"""The release path: the sdist and the wheel build from the checkout (`python -m build`) and
pass `twine check --strict` (the metadata an index will show, README.md rendered as the long
description), and the release workflow publishes them on a version tag with trusted
publishing (no stored token)."""

from __future__ import annotations

import subprocess
import sys
import tarfile
import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent


def test_build_and_twine_check(tmp_path: Path) -> None:
    built = subprocess.run([sys.executable, "-m", "build", "--no-isolation", "--outdir",
                            str(tmp_path), str(ROOT)], capture_output=True, text=True)
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    sdist = tmp_path / f"workspace_api_mock-{version}.tar.gz"
    wheel = tmp_path / f"workspace_api_mock-{version}-py3-none-any.whl"
    assert sdist.is_file() and wheel.is_file(), sorted(p.name for p in tmp_path.iterdir())
    checked = subprocess.run([sys.executable, "-m", "twine", "check", "--strict",
                              str(sdist), str(wheel)], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert checked.stdout.count("PASSED") == 2, checked.stdout
    with tarfile.open(sdist) as archive:  # nothing built or local in the sdist
        names = archive.getnames()
    top = {part for n in names for part in n.split("/")[1:2]}
    assert not top & {"site", ".venv", "node_modules", "dist"}, sorted(top)


def test_the_release_workflow_publishes_a_tag_with_trusted_publishing() -> None:
    workflow = yaml.safe_load((ROOT / ".github" / "workflows" / "release.yml").read_text())
    triggers = workflow[True] if True in workflow else workflow["on"]  # YAML 1.1: on is True
    assert triggers == {"push": {"tags": ["v*"]}}
    build, publish = workflow["jobs"]["build"], workflow["jobs"]["publish"]
    script = "\n".join(step.get("run", "") for step in build["steps"])
    assert "python -m build" in script and "twine check --strict dist/*" in script
    assert publish["needs"] == "build"
    assert publish["permissions"] == {"id-token": "write"}
    assert workflow["permissions"] == {"contents": "read"}
    uses = [step.get("uses", "") for step in publish["steps"]]
    assert uses[-1].startswith("pypa/gh-action-pypi-publish@")
    assert not any("password" in step.get("with", {}) for step in publish["steps"])
