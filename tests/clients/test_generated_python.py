"""A Python client generated from the document (openapi-python-client) drives every operation.

Generated once per session with no warning; each operation of the document is called through
it against the mock (writes included), and each answer is parsed into the generated models,
which must give back what was sent (nothing dropped, nothing of the wrong type). An operation
with no case in cases.py fails here, named.
"""

from __future__ import annotations

import datetime as dt
import enum
import importlib
import json
import sys
import types
import typing
from pathlib import Path
from typing import Any

import pytest
from openapi_python_client.strings import snake_case

from mockserver.openapi.spec import load_spec

from .cases import CASES, Seeds
from .generators import built, python_client

OPERATIONS = [op.operation_id for op in load_spec().operations]


@pytest.fixture(scope="session")
def generated(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    return built(tmp_path_factory, "openapi-python-client", python_client)


@pytest.fixture(scope="session")
def package(generated: tuple[Path, str]) -> types.ModuleType:
    target, _ = generated
    if str(target) not in sys.path:
        sys.path.insert(0, str(target))
    return importlib.import_module("wsapi_client")


def test_generates_without_warnings(generated: tuple[Path, str]) -> None:
    _, output = generated
    assert "Warning" not in output and "Unable to" not in output, output


def _operation(package: types.ModuleType, operation_id: str) -> types.ModuleType:
    api = Path(package.__file__).parent / "api"
    name = snake_case(operation_id)
    [found] = [p for p in api.glob(f"*/{name}.py")]  # one module per operation, in its tag
    return importlib.import_module(f"wsapi_client.api.{found.parent.name}.{name}")


def _convert(value: Any, annotation: Any) -> Any:
    """A JSON value as the generated function takes it (models, enums, datetimes)."""
    options = typing.get_args(annotation) if isinstance(annotation, types.UnionType) or \
        typing.get_origin(annotation) is typing.Union else (annotation,)
    for option in options:
        if value is None or option is typing.Any:
            return value
        if isinstance(option, type) and issubclass(option, enum.Enum):
            return option(value)
        if option is dt.datetime and isinstance(value, str):
            return dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
        if hasattr(option, "from_dict") and isinstance(value, dict):
            return option.from_dict(value)
    return value


def _same(parsed: Any, sent: Any, where: str = "") -> None:
    """The model's `to_dict()` is what the mock sent: same keys, values, instants."""
    if isinstance(sent, dict):
        assert isinstance(parsed, dict) and set(parsed) == set(sent), (where, parsed, sent)
        for key in sent:
            _same(parsed[key], sent[key], f"{where}/{key}")
    elif isinstance(sent, list):
        assert isinstance(parsed, list) and len(parsed) == len(sent), where
        for i, (p, s) in enumerate(zip(parsed, sent, strict=True)):
            _same(p, s, f"{where}/{i}")
    elif isinstance(sent, str) and isinstance(parsed, str) and parsed != sent:
        # A datetime comes back from isoformat(): the same instant, written otherwise.
        instant = [dt.datetime.fromisoformat(v.replace("Z", "+00:00")) for v in (parsed, sent)]
        assert instant[0] == instant[1], (where, parsed, sent)
    else:
        assert parsed == sent and type(parsed) is type(sent), (where, parsed, sent)


@pytest.mark.parametrize("operation_id", OPERATIONS)
def test_every_operation_through_the_generated_client(
        operation_id: str, mock_api: Any, package: types.ModuleType) -> None:
    case = CASES.get(operation_id)
    if case is None:
        pytest.fail(f"{operation_id}: no case drives it; add one to tests/clients/cases.py",
                    pytrace=False)
    call = case(Seeds(mock_api.client()))
    function = _operation(package, operation_id).sync_detailed
    hints = typing.get_type_hints(function)
    kwargs = {name: _convert(value, hints[name])
              for name, value in {**call.path, **call.query}.items()}
    if call.body is not None:
        kwargs["body"] = body = _convert(call.body, hints["body"])
        if hasattr(body, "to_dict"):
            _same(body.to_dict(), call.body)  # the model sends what the case means, all of it
    client = package.AuthenticatedClient(base_url=mock_api.base_url, token="unused",
                                         raise_on_unexpected_status=True)
    client.set_httpx_client(mock_api.client())  # in-process, write token, the test's session
    response = function(client=client, **kwargs)
    assert 200 <= response.status_code < 300, response.content
    parsed = response.parsed
    assert parsed is not None and type(parsed).__name__ != "Error", response.content
    _same(parsed.to_dict(), json.loads(response.content))


def test_a_poll_sends_back_the_datetime_it_parsed(mock_api: Any, package: types.ModuleType) -> None:
    """The client's documented polling: `updated_at` parsed into a datetime goes back as
    `updated_since`, written by isoformat() (`+00:00`, no `Z`); the mock takes it (B17)."""
    list_conversations = _operation(package, "listConversations")
    client = package.AuthenticatedClient(base_url=mock_api.base_url, token="unused")
    client.set_httpx_client(mock_api.client())
    first = list_conversations.sync(client=client, workspace_id="ws_harborview")
    since = first.data[0].updated_at
    assert isinstance(since, dt.datetime)
    again = list_conversations.sync_detailed(client=client, workspace_id="ws_harborview",
                                             updated_since=since)
    assert again.status_code == 200, again.content
    assert "+00:00" in str(mock_api.requests()[-1].query)
    assert first.data[0].id in [c.id for c in again.parsed.data]


ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "getting-started" / "other-languages.md"  # "Typed clients"
EXAMPLE = ROOT / "docs" / "snippets" / "typed_client.py"  # the page includes it


def _typed_clients_section() -> str:
    return PAGE.read_text()


def test_readme_example_runs_against_the_mock(mock_api: Any, package: types.ModuleType) -> None:
    """The docs' Python example (docs/snippets/typed_client.py, included by the page), as
    written, on the generated client and the test's mock session (its only change: the base
    URL)."""
    assert f'--8<-- "{EXAMPLE.relative_to(ROOT)}"' in _typed_clients_section()
    example = EXAMPLE.read_text()
    assert "http://127.0.0.1:8080" in example
    scope: dict[str, Any] = {}
    try:
        exec(example.replace("http://127.0.0.1:8080", mock_api.base_url), scope)
    finally:
        if "client" in scope:
            scope["client"].get_httpx_client().close()  # its own connection to the server
    assert scope["page"].data and scope["newer"].data
    assert "+00:00" in str(mock_api.requests()[-1].query)


def test_readme_states_the_pinned_versions() -> None:
    """The versions the README names are the ones pyproject.toml and package.json pin."""
    section = _typed_clients_section()
    root = ROOT
    pyproject = (root / "pyproject.toml").read_text()
    package_json = json.loads((root / "package.json").read_text())["devDependencies"]
    for pin in ('"openapi-python-client>=0.29,<0.30"', '"openapi-generator-cli>=7.26,<7.27"'):
        assert pin in pyproject
        assert pin.strip('"').split(">=")[1].split(",")[0] in section
    for name in ("openapi-typescript", "typescript"):
        assert package_json[name] in section, name
