"""The documentation site's samples and generated reference: every Python sample under
docs/snippets/ passes under pytest (with the package's plugin, as a user's project runs it),
the YAML samples parse, and the control API's reference page renders every operation of
spec/control-openapi.yaml. (`mkdocs build --strict`, in scripts/test, checks links, snippets
and the docstring reference; tests/test_readme.py runs the shell samples.)"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
SNIPPETS = ROOT / "docs" / "snippets"


def test_every_python_sample_passes() -> None:
    samples = sorted(SNIPPETS.glob("test_*.py"))
    assert samples, "no Python sample under docs/snippets"
    wanted = sum(len(re.findall(r"^def test_", p.read_text(), re.M)) for p in samples)
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:xdist",
                           "-p", "no:cacheprovider", *map(str, samples)],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    passed = re.search(r"(\d+) passed", done.stdout)
    assert passed and int(passed.group(1)) >= wanted, done.stdout[-2000:]


@pytest.mark.parametrize("sample", sorted(SNIPPETS.glob("*.yaml")), ids=lambda p: p.name)
def test_yaml_samples_parse(sample: Path) -> None:
    assert isinstance(yaml.safe_load(sample.read_text()), dict)


def _hook() -> object:
    spec = importlib.util.spec_from_file_location("control_api_hook",
                                                  ROOT / "docs" / "hooks" / "control_api.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_control_reference_renders_every_operation() -> None:
    document = yaml.safe_load((ROOT / "spec" / "control-openapi.yaml").read_text())
    page: str = _hook().render(document)  # type: ignore[attr-defined]
    for path, item in document["paths"].items():
        for method, operation in item.items():
            if method not in ("get", "put", "post", "patch", "delete"):
                continue
            assert f"## `{method.upper()} {path}`" in page, (method, path)
            assert f"(`{operation['operationId']}`)" in page, operation["operationId"]
            for status in operation["responses"]:
                assert re.search(rf"^\| {status} \|", page, re.M), (method, path, status)


def test_the_site_builds_strict_and_offline(tmp_path: Path) -> None:
    """`mkdocs build --strict` (as scripts/test runs it) passes, and no page loads a script, a
    stylesheet or a font from elsewhere (`theme.font: false`, no CDN)."""
    site = tmp_path / "site"
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet",
                           "--site-dir", str(site)], cwd=ROOT, capture_output=True, text=True,
                          timeout=300, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    pages = list(site.rglob("*.html"))
    assert (site / "reference" / "control-api" / "index.html").is_file()
    assert "mockserver.testing.api.MockApi.add" in (
        site / "reference" / "fixture" / "index.html").read_text()
    remote = re.compile(r'<(?:script|link|img)[^>]*(?:src|href)="(?:https?:)?//[^"]*"')
    for page in pages:
        found = remote.findall(page.read_text(encoding="utf-8"))
        assert not found, f"{page.relative_to(site)} loads {found[:3]}"
