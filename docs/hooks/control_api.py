"""MkDocs hook: the control API reference, generated from `spec/control-openapi.yaml`.

The page `reference/control-api.md` exists only in the build: each operation of the control
document becomes a section (method, path, summary, description, parameters, request body and
responses, with the schemas' properties), so the reference cannot drift from the document the
server serves and validates against. Nothing is fetched; no plugin is needed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from mkdocs.structure.files import File, Files

DOCUMENT = Path(__file__).resolve().parents[2] / "spec" / "control-openapi.yaml"
PAGE = "reference/control-api.md"
METHODS = ("get", "put", "post", "patch", "delete")


def _resolve(document: dict[str, Any], node: Any) -> Any:
    while isinstance(node, dict) and "$ref" in node:
        target: Any = document
        for part in node["$ref"].removeprefix("#/").split("/"):
            target = target[part.replace("~1", "/").replace("~0", "~")]
        node = target
    return node


def _type(document: dict[str, Any], schema: Any) -> str:
    schema = _resolve(document, schema)
    if not isinstance(schema, dict):
        return ""
    if "enum" in schema:
        return " \\| ".join(f"`{json.dumps(v)}`" for v in schema["enum"])
    if "const" in schema:
        return f"`{json.dumps(schema['const'])}`"
    for key in ("oneOf", "anyOf"):
        if key in schema:
            return " or ".join(filter(None, (_type(document, s) for s in schema[key])))
    kind = schema.get("type", "object" if "properties" in schema else "")
    if isinstance(kind, list):
        kind = " or ".join(kind)
    if kind == "array":
        inner = _type(document, schema.get("items", {}))
        return f"array of {inner}" if inner else "array"
    return str(kind)


def _cell(text: Any) -> str:
    return " ".join(str(text or "").split()).replace("|", "\\|")


def _properties(document: dict[str, Any], schema: Any) -> list[str]:
    schema = _resolve(document, schema)
    if not isinstance(schema, dict):
        return []
    for key in ("allOf", "oneOf", "anyOf"):  # the first shape with properties
        for part in schema.get(key, []):
            found = _properties(document, part)
            if found:
                return found
    properties = schema.get("properties") or {}
    if not properties:
        return []
    required = set(schema.get("required", []))
    rows = ["| field | type | required | description |", "|---|---|---|---|"]
    for name, sub in properties.items():
        sub_resolved = _resolve(document, sub)
        description = sub_resolved.get("description", "") if isinstance(sub_resolved, dict) else ""
        rows.append(f"| `{name}` | {_cell(_type(document, sub))} | "
                    f"{'yes' if name in required else ''} | {_cell(description)} |")
    return rows


def render(document: dict[str, Any]) -> str:
    """The page's Markdown for a control document."""
    info = document.get("info", {})
    out = ["# Control API reference", "",
           f"Generated from `spec/control-openapi.yaml` ({info.get('title', '')}, version "
           f"{info.get('version', '')}) by `docs/hooks/control_api.py`. A running mock serves "
           "the same document at `/__mock__/openapi.json` and renders it at `/__mock__/docs`.",
           "", info.get("description", "").strip(), ""]
    for path, item in document.get("paths", {}).items():
        shared = item.get("parameters", [])
        for method in METHODS:
            operation = item.get(method)
            if operation is None:
                continue
            out += [f"## `{method.upper()} {path}`", ""]
            if operation.get("summary"):
                out += [f"**{operation['summary'].strip()}** (`{operation.get('operationId', '')}`)", ""]
            if operation.get("description"):
                out += [operation["description"].strip(), ""]
            parameters = [_resolve(document, p) for p in [*shared, *operation.get("parameters", [])]]
            if parameters:
                out += ["| parameter | in | type | required | description |",
                        "|---|---|---|---|---|"]
                out += [f"| `{p['name']}` | {p.get('in', '')} | "
                        f"{_cell(_type(document, p.get('schema', {})))} | "
                        f"{'yes' if p.get('required') else ''} | {_cell(p.get('description'))} |"
                        for p in parameters]
                out.append("")
            body = _resolve(document, operation.get("requestBody"))
            if isinstance(body, dict):
                for media, content in (body.get("content") or {}).items():
                    out += [f"Request body ({media}{', required' if body.get('required') else ''})"
                            f"{': ' + _cell(body['description']) if body.get('description') else ''}", ""]
                    rows = _properties(document, content.get("schema", {}))
                    out += [*rows, ""] if rows else []
            out += ["| status | answer |", "|---|---|"]
            for status, response in (operation.get("responses") or {}).items():
                response = _resolve(document, response)
                out.append(f"| {status} | {_cell(response.get('description'))} |")
            out.append("")
    return "\n".join(out) + "\n"


def on_files(files: Files, config: Any) -> Files:
    document = yaml.safe_load(DOCUMENT.read_text(encoding="utf-8"))
    files.append(File.generated(config, PAGE, content=render(document)))
    return files
