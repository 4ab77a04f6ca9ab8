"""TypeScript from the document: openapi-typescript types check real answers, and the
openapi-generator clients (`typescript-fetch`, `python`) compile and import.

For openapi-typescript, every operation of the document is called on the mock (the cases of
cases.py, in one session, in the document's order) and its answer is written as a TypeScript
constant of the operation's success type, one file per operation; `tsc --strict` must accept
them all (an object literal may not carry a property the type lacks, nor miss one it
requires). openapi-generator runs once per session for each generator (Java is slow).
"""

from __future__ import annotations

import importlib
import json
import pkgutil
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from mockserver.openapi.spec import load_spec

from .cases import CASES, Seeds
from .generators import NODE_BIN, TSC_STRICT, built, openapi_generator, run, typescript_types

OPERATIONS = load_spec().operations


def _answers(mock_api: Any) -> dict[str, tuple[int, Any]]:
    """operationId -> (status, JSON) of one successful call of each operation with a case."""
    client = mock_api.client()
    seeds = Seeds(client)
    answers = {}
    for op in OPERATIONS:
        case = CASES.get(op.operation_id)
        if case is None:
            continue
        call = case(seeds)
        path = op.path.format(**call.path)
        response = client.request(op.method, path, params=call.query,
                                  json=call.body if call.body is not None else None)
        assert response.status_code == op.success_status, (op.operation_id, response.text)
        answers[op.operation_id] = (response.status_code, response.json())
    return answers


@pytest.mark.mock_api(rate_limit=0)  # every operation, on one workspace, in one minute
def test_openapi_typescript_types_accept_every_answer(
        mock_api: Any, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    missing = [op.operation_id for op in OPERATIONS if op.operation_id not in CASES]
    assert not missing, f"no case in tests/clients/cases.py drives {missing}"
    types_dir, _ = built(tmp_path_factory, "openapi-typescript", typescript_types)
    declarations = (types_dir / "api.d.ts").read_text()
    # A free-form object without `additionalProperties: true` becomes Record<string, never>:
    # no answer with a key in it would type-check (the fixtures' may all be empty).
    never = [line.strip() for line in declarations.splitlines()
             if "Record<string, never>" in line and not line.startswith("export type")]
    assert not never, never
    (tmp_path / "api.d.ts").write_text(declarations)
    files = []
    for operation_id, (status, body) in _answers(mock_api).items():
        source = tmp_path / f"{operation_id}.ts"
        source.write_text(
            'import type { operations } from "./api";\n'
            f'export const answer: operations["{operation_id}"]["responses"][{status}]'
            f'["content"]["application/json"] = {json.dumps(body, indent=1)};\n')
        files.append(source.name)
    assert len(files) == len(OPERATIONS)
    done = run_tsc(tmp_path, files)
    failing = sorted(set(re.findall(r"^(\w+)\.ts\(", done, re.MULTILINE)))
    assert not failing, f"tsc --strict refuses the answers of {failing}:\n{done[-6000:]}"


def run_tsc(directory: Path, files: list[str]) -> str:
    """tsc's report (it exits non-zero on a type error: the caller names the files)."""
    done = subprocess.run([str(NODE_BIN / "tsc"), *TSC_STRICT, *files], cwd=directory,
                          capture_output=True, text=True, timeout=600)
    return done.stdout + done.stderr


def test_openapi_generator_typescript_fetch_compiles(
        tmp_path_factory: pytest.TempPathFactory) -> None:
    target, output = built(tmp_path_factory, "openapi-generator-typescript-fetch",
                           openapi_generator("typescript-fetch"))
    assert "Exception" not in output, output[-4000:]
    models = list((target / "models").glob("*.ts"))
    assert len(models) > 100
    run([NODE_BIN / "tsc", *TSC_STRICT, "index.ts"], cwd=target)  # fails the test on an error


def test_openapi_generator_python_imports(tmp_path_factory: pytest.TempPathFactory) -> None:
    target, output = built(tmp_path_factory, "openapi-generator-python",
                           openapi_generator("python"))
    assert "Exception" not in output, output[-4000:]
    if str(target) not in sys.path:
        sys.path.insert(0, str(target))
    package = importlib.import_module("wsapi_og")
    imported = 0
    for sub in ("models", "api"):
        module = importlib.import_module(f"wsapi_og.{sub}")
        for found in pkgutil.iter_modules(module.__path__):
            importlib.import_module(f"wsapi_og.{sub}.{found.name}")
            imported += 1
    assert imported > 150 and package.ApiClient is not None
