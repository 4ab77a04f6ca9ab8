"""Custom code tools: user-written Python or JavaScript functions an agent calls.

Writes check the code statically (documented: it defines `main` and contains a return
statement). A run executes it where the mock is told to (`serve --run-tool-code`, the pytest
plugin by default: toolexec.py, off the event loop through `context.Deferred`); otherwise it
answers deterministically from the code's shape, saying in `logs` that nothing ran: the first
top-level statement of main's body that is a `return` or a `raise`/`throw` decides between
success and a failure of the tool's own code (still 200, with success false, as documented).
"""

from __future__ import annotations

import ast
import hashlib
import re
from pathlib import Path
from typing import Any

import orjson

from ..context import Context, Deferred, ToolSettings
from ..errors import BadRequest
from ..store import Record
from ..toolexec import RunResult, installed_python_packages, run_tool, runtime_description
from . import operation
from ._common import name_taken

__all__: list[str] = []

# -- static checks ----------------------------------------------------------------------------

_JS_MAIN = re.compile(
    r"\b(?:async\s+)?function\s+main\s*\("
    r"|\b(?:const|let|var)\s+main\s*=\s*(?:async\s*)?(?:\([^)]*\)|[A-Za-z_$][\w$]*)\s*=>"
)
_RETURN = re.compile(r"\breturn\b")
_ENTRYPOINTS = {"python": "def main(**params)", "javascript": "async function main(params)"}


def _without_comment_lines(code: str, marker: str) -> str:
    return "\n".join("" if line.lstrip().startswith(marker) else line
                     for line in code.splitlines())


def _python_main(code: str) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    """The module-level `main` of Python code, read by the standard library's parser."""
    tree = ast.parse(code)
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == "main":
            return node
    return None


def _returns(function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Whether main's own body (not a nested function's) holds a return statement."""
    stack: list[ast.AST] = list(function.body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Return):
            return True
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda
                          | ast.ClassDef):
            stack.extend(ast.iter_child_nodes(node))
    return False


def _missing_entrypoint(language: str) -> BadRequest:
    forms = ("`def main(` or `async def main(`" if language == "python" else
             "`function main(`, `async function main(` or `const main = (...) =>`")
    return BadRequest(f"body field 'code': {language} code must define the entrypoint "
                      f"{_ENTRYPOINTS[language]}; no {forms} found")


def _missing_return(language: str) -> BadRequest:
    return BadRequest(f"body field 'code': {language} code must contain a return statement "
                      "(main returns an object with a string key `message`)")


def check_code(language: str, code: str) -> None:
    """400 naming `code` unless it defines main and contains a return statement (Python is
    read with `ast`, so strings and comments never count; JavaScript by a lexical check)."""
    if language == "python":
        try:
            main = _python_main(code)
        except SyntaxError as exc:  # inferred: code that cannot run is refused
            raise BadRequest(f"body field 'code': python code does not parse: {exc.msg} "
                             f"(line {exc.lineno})") from None
        if main is None:
            raise _missing_entrypoint(language)
        if not _returns(main):
            raise _missing_return(language)
        return
    text = _without_comment_lines(code, "//")
    if not _JS_MAIN.search(text):
        raise _missing_entrypoint(language)
    if not _RETURN.search(text):
        raise _missing_return(language)


# -- deterministic runs ------------------------------------------------------------------------


def _python_main_statements(code: str) -> list[tuple[int, str]]:
    """(line number, source) of each top-level statement of main's body."""
    try:
        main = _python_main(code)
    except SyntaxError:
        return []
    if main is None:
        return []
    return [(stmt.lineno, (ast.get_source_segment(code, stmt) or "").strip())
            for stmt in main.body]


def _javascript_main_statements(code: str) -> list[tuple[int, str]]:
    """(line number, text) of each statement at the top level of main's block body."""
    found = _JS_MAIN.search(code)
    if not found:
        return []
    pos = found.end()
    if "=>" not in found.group(0):  # function form: skip the parameter list
        depth = 1
        while pos < len(code) and depth:
            depth += {"(": 1, ")": -1}.get(code[pos], 0)
            pos += 1
    while pos < len(code) and code[pos].isspace():
        pos += 1
    if pos >= len(code) or code[pos] != "{":
        return []  # an arrow function with an expression body has no statements
    statements: list[tuple[int, str]] = []
    depth, current, line_no = 0, "", code.count("\n", 0, pos) + 1
    start_line = line_no
    i = pos
    while i < len(code):
        ch = code[i]
        if ch in "\"'`":  # copy a string literal whole
            j = i + 1
            while j < len(code) and code[j] != ch:
                j += 2 if code[j] == "\\" else 1
            if depth == 1:
                current += code[i:j + 1]
            line_no += code.count("\n", i, j + 1)
            i = j + 1
            continue
        if code.startswith("//", i):
            j = code.find("\n", i)
            i = len(code) if j < 0 else j
            continue
        if code.startswith("/*", i):
            j = code.find("*/", i + 2)
            j = len(code) if j < 0 else j + 2
            line_no += code.count("\n", i, j)
            i = j
            continue
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                break
        elif depth == 1 and ch in ";\n":
            if current.strip():
                statements.append((start_line, current.strip()))
            current = ""
        elif depth == 1:
            if not current.strip():
                start_line = line_no
            current += ch
        if ch == "\n":
            line_no += 1
        i += 1
    if current.strip():
        statements.append((start_line, current.strip()))
    return statements


def _literal_text(args: str) -> str:
    args = args.strip()
    if len(args) > 1 and args[0] == args[-1] == "`":
        return args[1:-1]  # a JavaScript template literal, shown as written
    try:
        value = ast.literal_eval(args)
    except (ValueError, SyntaxError):
        return args.strip()
    return value if isinstance(value, str) else repr(value)


def _failure(language: str, code: str) -> tuple[str, str] | None:
    """(error, logs) when main's first deciding top-level statement raises, else None."""
    if language == "python":
        statements, marker = _python_main_statements(code), "raise"
    else:
        statements, marker = _javascript_main_statements(code), "throw"
    for line, text in statements:
        if re.match(r"return\b", text):
            return None
        if re.match(rf"{marker}\b", text):
            thrown = text[len(marker):].strip().rstrip(";")
            call = re.fullmatch(r"(?:new\s+)?([A-Za-z_$][\w.$]*)\s*(?:\((.*)\))?", thrown, re.S)
            if not thrown:
                error = "RuntimeError: No active exception to reraise"
            elif call:
                name, args = call.group(1), call.group(2)
                error = f"{name}: {_literal_text(args)}" if args else name
            else:
                error = f"Uncaught {_literal_text(thrown)}"
            if language == "python":
                logs = ("Traceback (most recent call last):\n"
                        f'  File "main.py", line {line}, in main\n    {text}\n{error}')
            else:
                logs = f"{error}\n    at main (main.js:{line})"
            return error, logs
    return None


_TYPES: dict[str, tuple[type, ...]] = {"string": (str,), "number": (int, float),
                                       "boolean": (bool,), "object": (dict,), "array": (list,)}


def _check_arguments(tool: Record, arguments: dict[str, Any]) -> None:
    for name, spec in tool.get("parameters", {}).items():
        value = arguments.get(name)
        if value is None:
            # Inferred: null counts as not given.
            if spec.get("required"):
                raise BadRequest(f"body field 'parameters': required parameter {name!r} of "
                                 f"tool {tool['name']!r} is missing")
            continue
        kind = spec.get("type", "string")
        ok = isinstance(value, _TYPES.get(kind, (object,)))
        if kind in ("number", "string", "object", "array") and isinstance(value, bool):
            ok = False
        # Inferred: arguments of the wrong declared type, or outside enum_values, are rejected
        # too (the reference: a non-2xx answers only rejected arguments or an unknown tool).
        if not ok:
            raise BadRequest(f"body field 'parameters/{name}': expected a {kind}, got "
                             f"{orjson.dumps(value).decode()[:60]}")
        if spec.get("enum_values") and value not in spec["enum_values"]:
            raise BadRequest(f"body field 'parameters/{name}': {value!r} is not one of "
                             f"{spec['enum_values']}")


# -- handlers ----------------------------------------------------------------------------------


def _check_name_free(ctx: Context, workspace_id: str, name: str, own_id: str | None) -> None:
    taken = name_taken(ctx, "custom_tools", workspace_id, name, own_id)
    if taken is not None:
        # Documented: names are unique in the workspace. The status is the description's 400
        # ("invalid request parameters or body"; it documents no 409), as for a skill's name
        # (DECISIONS B8).
        raise BadRequest(f"body field 'name': a custom tool named {name!r} already exists in "
                       f"workspace {workspace_id!r} ({taken['id']})")


@operation("createCustomTool")
def create_custom_tool(ctx: Context) -> dict[str, Any]:
    body: dict[str, Any] = ctx.body
    workspace_id = body["workspace_id"]
    check_code(body["language"], body["code"])
    _check_name_free(ctx, workspace_id, body["name"], None)
    now = ctx.now()
    tool = ctx.store.insert("custom_tools", {
        "id": ctx.new_id("custom_tools"),
        "workspace_id": workspace_id,
        "name": body["name"],
        "description": body["description"],
        "language": body["language"],
        "code": body["code"],
        "parameters": body["parameters"],
        "execution_message_description": body["execution_message_description"],
        "enable_globally": body["enable_globally"],
        "validated": True,  # the static check above passed
        "version": 1,
        "created_at": now,
        "updated_at": now,
    })
    return {"data": ctx.shape(tool)}


@operation("updateCustomTool")
def update_custom_tool(ctx: Context) -> dict[str, Any]:
    tool = ctx.resource
    assert tool is not None
    body: dict[str, Any] = ctx.body
    changes: dict[str, Any] = dict(body)  # the validated body: CustomToolPatch fields only
    if "code" in changes or "language" in changes:
        # A language change re-checks the (possibly unchanged) code against the new language.
        merged = {**tool, **changes}
        check_code(merged["language"], merged["code"])
        changes["validated"] = True
    if "name" in changes:
        _check_name_free(ctx, tool["workspace_id"], changes["name"], tool["id"])
    # Documented: a code change bumps the version, by exactly one (inferred); nothing else does,
    # and sending the same code again is no change. `parameters` replaces the whole map.
    if "code" in changes and changes["code"] != tool["code"]:
        changes["version"] = tool["version"] + 1
    changes["updated_at"] = ctx.now()
    tool = ctx.store.update("custom_tools", tool["id"], changes)
    return {"data": ctx.shape(tool)}


@operation("deleteCustomTool")
def delete_custom_tool(ctx: Context) -> dict[str, Any]:
    tool = ctx.resource
    assert tool is not None
    # Reference: the tool and its access-control records go. Here those are the per-agent
    # switches (`_tool_states`) of the workspace's agents, live and soft-deleted, kept by the
    # tool's id or its name (a name no built-in tool shares): a tool created later under the
    # same name starts from its own defaults. Inferred: a hard delete (later reads 404), as
    # the vendor names no soft delete (spec/DECISIONS.md E26).
    ctx.store.delete("custom_tools", tool["id"])
    keys = {tool["id"]}
    if not ctx.store.find("builtin_tools", lambda t: t["name"] == tool["name"]):
        keys.add(tool["name"])
    for table in ("agents", "deleted_agents"):
        holders = ctx.store.find(table, lambda a: a.get("workspace_id") == tool["workspace_id"]
                                 and not keys.isdisjoint(a.get("_tool_states") or {}))
        for agent in holders:
            states = {k: v for k, v in agent["_tool_states"].items() if k not in keys}
            ctx.store.update(table, agent["id"], {"_tool_states": states})
    return {"data": {"id": tool["id"], "deleted": True}}


NOT_EXECUTED = ("not executed: the mock runs custom tools' code only when asked (serve "
                "--run-tool-code; the pytest plugin's --mock-api-run-tool-code=on); this "
                "answer is derived from the code's shape")


def _deterministic(tool: Record, arguments: dict[str, Any]) -> dict[str, Any]:
    """The answer when code is not run (DECISIONS E7): from the code's shape, and saying so."""
    canonical = orjson.dumps(arguments, option=orjson.OPT_SORT_KEYS)
    digest = hashlib.blake2b(f"{tool['id']}:{tool['version']}:".encode() + canonical,
                             digest_size=4).digest()
    run_time_ms = 20 + int.from_bytes(digest, "big") % 1480  # deterministic, 20..1499 ms
    failure = _failure(tool["language"], tool["code"])
    if failure is not None:
        error, logs = failure
        return {"data": {"success": False, "message": None, "result": None, "error": error,
                         "logs": f"{NOT_EXECUTED}\n{logs}", "run_time_ms": run_time_ms}}
    names = ", ".join(sorted(arguments)) or "no parameters"
    message = f"{tool['name']} ran with {names}"
    return {"data": {"success": True, "message": message,
                     "result": {"message": message, "rawData": arguments},
                     "error": None, "logs": NOT_EXECUTED, "run_time_ms": run_time_ms}}


_EXTENSIONS = {".py": "python", ".js": "javascript"}


def code_file(code_dir: Path | None, name: str) -> tuple[str, Path] | None:
    """(language, path) of `<name>.py` or `<name>.js` in `serve --tool-code-dir` (the tool's
    name is kebab-case by the document's pattern, so it names no other directory)."""
    if code_dir is None:
        return None
    for extension, language in _EXTENSIONS.items():
        path = code_dir / f"{name}{extension}"
        if path.is_file():
            return language, path
    return None


def execute(tool: Record, arguments: dict[str, Any], settings: ToolSettings) -> RunResult:
    """One real run of `tool` (its code, or its file in the code directory, read now)."""
    found = code_file(settings.code_dir, tool["name"])
    if found is None:
        return run_tool(tool, arguments, settings.limits)
    language, path = found
    try:
        code = path.read_text(encoding="utf-8")
        check_code(language, code)
    except (OSError, UnicodeDecodeError) as exc:
        return RunResult(success=False, error=f"{path}: cannot be read: {exc}")
    except BadRequest as refused:  # the write-time check, applied to the file
        return RunResult(success=False, error=f"{path}: {refused.message.split(': ', 1)[-1]}")
    return run_tool({**tool, "language": language}, arguments, settings.limits, code=code)


@operation("runCustomTool")
def run_custom_tool(ctx: Context) -> Any:
    tool = ctx.resource
    assert tool is not None
    arguments: dict[str, Any] = (ctx.body or {}).get("parameters") or {}
    _check_arguments(tool, arguments)
    if not ctx.run_code:
        return _deterministic(tool, arguments)
    settings = ctx.services.tools
    return Deferred(lambda: {"data": execute(tool, arguments, settings).payload()})


# Inferred content (the reference lists the fields' topics, not their values): the documented
# contract (signatures, return shape) plus plausible module and package lists.
_RUNTIMES: list[dict[str, Any]] = [
    {
        "language": "python",
        "runtime": "Python 3.12",
        "entrypoint_signature": "def main(**params)",
        "return_shape": '{"message": str, "rawData": Any (optional)}',
        "starter_template": (
            "def main(**params):\n"
            "    name = params.get(\"name\", \"world\")\n"
            "    return {\"message\": f\"Hello, {name}!\", \"rawData\": {\"name\": name}}\n"
        ),
        "builtin_modules": ["base64", "collections", "datetime", "decimal", "hashlib", "itertools",
                            "json", "math", "random", "re", "statistics", "string", "time",
                            "urllib.parse", "uuid", "zoneinfo"],
        "auto_install_packages": ["beautifulsoup4", "httpx", "numpy", "pandas", "pydantic",
                                  "python-dateutil", "pytz", "requests"],
    },
    {
        "language": "javascript",
        "runtime": "Bun 1.x",
        "entrypoint_signature": "async function main(params)",
        "return_shape": "{ message: string, rawData?: any }",
        "starter_template": (
            "async function main(params) {\n"
            "  const name = params.name ?? \"world\";\n"
            "  return { message: `Hello, ${name}!`, rawData: { name } };\n"
            "}\n"
        ),
        "builtin_modules": ["Buffer", "URL", "URLSearchParams", "crypto", "fetch",
                            "node:crypto", "node:path", "node:url", "TextDecoder", "TextEncoder"],
        "auto_install_packages": ["axios", "cheerio", "date-fns", "dayjs", "lodash", "zod"],
    },
]


_SERVICE_RUNTIMES = {"python": "Python 3.12", "javascript": "Bun 1.x"}


def runtimes(run_code: bool) -> list[dict[str, Any]]:
    """This mock's runtimes as they are (DECISIONS T13): what runs each language here (or
    that nothing does), whether code runs at all, and the packages importable here; the
    signatures, return shapes, templates and built-in modules are the service's."""
    out = []
    for entry in _RUNTIMES:
        language = entry["language"]
        here = runtime_description(language)
        service = _SERVICE_RUNTIMES[language]
        if here is None:
            runtime = f"none installed in this mock: runs fail (the service runs {service})"
        elif here.startswith("Bun"):
            runtime = here
        else:
            runtime = f"{here} in this mock (the service runs {service})"
        if not run_code:
            runtime += "; code not executed here (execution off)"
        packages = installed_python_packages() if language == "python" else []
        out.append({**entry, "runtime": runtime, "auto_install_packages": packages})
    return out


@operation("listCustomToolRuntimes")
def list_custom_tool_runtimes(ctx: Context) -> dict[str, Any]:
    return {"data": runtimes(ctx.run_code)}
