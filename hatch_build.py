"""Build hook: the wheel carries each document of spec/ also parsed, as JSON.

Parsing spec/openapi.yaml takes most of the mock's start-up; the wheel ships the parsed form
(`<name>.json` beside `<name>.yaml`, with the YAML's SHA-256), so an installed mock reads it in
a few milliseconds and never writes a cache anywhere. A checkout parses the YAML in memory.
"""

from __future__ import annotations

import hashlib
import importlib.util
import tempfile
from pathlib import Path
from typing import Any

import orjson
from hatchling.builders.hooks.plugin.interface import BuildHookInterface


def _load_yaml(root: Path) -> Any:
    # mockserver/openapi/yamlload.py alone (PyYAML, no timestamps), without importing the package.
    spec = importlib.util.spec_from_file_location("_mock_yamlload",
                                                  root / "mockserver" / "openapi" / "yamlload.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.load_yaml


class ParsedDocuments(BuildHookInterface):  # type: ignore[misc]
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if self.target_name != "wheel" or version == "editable":
            return
        root = Path(self.root)
        load_yaml = _load_yaml(root)
        self._out = Path(tempfile.mkdtemp(prefix="mock-parsed-"))
        for source in sorted((root / "spec").glob("*.yaml")):
            raw = source.read_bytes()
            parsed = {"sha256": hashlib.sha256(raw).hexdigest(), "document": load_yaml(raw)}
            target = self._out / f"{source.stem}.json"
            target.write_bytes(orjson.dumps(parsed))
            build_data["force_include"][str(target)] = f"mockserver/_data/spec/{target.name}"
