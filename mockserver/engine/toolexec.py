"""Running a custom tool's code for real: a child process per run, its answer checked as the
service checks it (spec/DECISIONS.md T1-T15; docs/tool-authors.md).

    run_tool(tool, params, limits) -> RunResult

Python (`def main(**params)` or `async def main(**params)`) runs in a child of this very
interpreter (`sys.executable -I`); JavaScript (`async function main(params)`) in Bun where it
is installed (`MOCK_API_BUN` or `bun` on PATH), else Node, else the run fails naming what is
missing. The child is given the code and the parameters on stdin, prints to its stdout (the
run's `logs`, bounded) and writes what `main` returned, or the exception it raised, on a pipe
of its own; this module checks the returned value against the contract (an object with a
string `message` and an optional `rawData`).

Limits (`Limits`, the one place their values live; `LIMITS` the defaults):

- wall-clock timeout: the child is its own process group, killed (SIGKILL) at the deadline;
- memory: Python `RLIMIT_AS` set by the child before the code runs; Node
  `--max-old-space-size`; Bun: none (documented);
- output: the first `output_bytes` of what the code prints are kept, the rest counted;
  the returned object at most `result_bytes` once encoded as JSON;
- network: a new, empty network namespace (`unshare --net`, or `unshare -rn` without root)
  where the system lets this process make one (`network_isolation()`), and always an
  in-process block (Python: `socket` connect/sendto/getaddrinfo; JavaScript: `net`, `tls`,
  `http(s)`, `dns`, `fetch`, `WebSocket`), which code that tries hard can bypass;
- imports: Python's standard library always; the service's packages (`PYTHON_PACKAGES`)
  where installed in this interpreter, else "not available in the mock"; any other module
  refused. JavaScript: Node's and Bun's built-in modules; no package is installed
  (`--no-install` for Bun), so a package import fails "not available in the mock".

Nothing here touches a mock's state: the engine calls it off the event loop and outside the
store's lock (core.py: `Deferred`), and the progression of scripted agent runs calls
`run_tool` directly.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import re
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import Any

__all__ = ["JS_PACKAGES", "LIMITS", "PYTHON_PACKAGES", "Limits", "RunResult",
           "installed_python_packages", "javascript_runtime", "network_isolation", "run_tool",
           "runtime_description"]


@dataclass(frozen=True)
class Limits:
    """What one run may use (inferred values: the reference states none; DECISIONS T4-T8)."""

    timeout_s: float = 10.0  # wall clock, from the child's start to its answer
    memory_mb: int = 512  # Python: address space (RLIMIT_AS); Node: V8's old space
    output_bytes: int = 64 * 1024  # of what the code prints (stdout and stderr), kept in logs
    result_bytes: int = 1024 * 1024  # the returned object, encoded as JSON
    concurrent: int = 4  # runs at once in one server process; more wait for a slot


LIMITS = Limits()

# The service's auto-installed packages (GET /v1/custom-tools/runtimes, DECISIONS T9): the
# distribution name -> the name imported.
PYTHON_PACKAGES: dict[str, str] = {
    "beautifulsoup4": "bs4", "httpx": "httpx", "numpy": "numpy", "pandas": "pandas",
    "pydantic": "pydantic", "python-dateutil": "dateutil", "pytz": "pytz",
    "requests": "requests",
}
JS_PACKAGES: tuple[str, ...] = ("axios", "cheerio", "date-fns", "dayjs", "lodash", "zod")

CONTRACT = "main must return an object with a string `message` and an optional `rawData`"
_NETWORK_OFF = "network access is disabled for custom tool code in the mock"


@dataclass
class RunResult:
    """One run: the answer's fields (`payload()` is the document's CustomToolRunResult)."""

    success: bool
    message: str | None = None
    raw_data: Any = None
    has_raw_data: bool = False
    error: str | None = None
    logs: str | None = None
    run_time_ms: int = 0
    runtime: str = ""  # what ran it, e.g. "python 3.11.7", "node v20.20.2" (journal, tests)
    details: dict[str, Any] = field(default_factory=dict)

    def payload(self) -> dict[str, Any]:
        result: dict[str, Any] | None = None
        if self.success:
            result = {"message": self.message}
            if self.has_raw_data:
                result["rawData"] = self.raw_data
        return {"success": self.success, "message": self.message if self.success else None,
                "result": result, "error": self.error, "logs": self.logs,
                "run_time_ms": max(0, int(self.run_time_ms))}


# -- what this machine has ----------------------------------------------------------------------


@cache
def network_isolation() -> tuple[str, ...]:
    """The command prefix that runs a child in a new network namespace with no interface but
    a downed loopback (`unshare --net`, or `-rn` as an unprivileged user), or () where this
    system does not let this process make one (then only the in-process block applies)."""
    unshare = shutil.which("unshare")
    if unshare is None:
        return ()
    for flags in (("--net",), ("-rn",)):
        try:
            done = subprocess.run([unshare, *flags, "true"], capture_output=True, timeout=5,
                                  check=False)
        except (OSError, subprocess.SubprocessError):
            continue
        if done.returncode == 0:
            return (unshare, *flags, "--")
    return ()


def javascript_runtime() -> tuple[str, str] | None:
    """("bun" | "node", path) of the JavaScript runtime runs use: Bun (the service's) at
    `MOCK_API_BUN` or on PATH, else Node on PATH; None when neither is installed."""
    bun = os.environ.get("MOCK_API_BUN") or shutil.which("bun")
    if bun and os.access(bun, os.X_OK):
        return "bun", bun
    node = shutil.which("node")
    if node:
        return "node", node
    return None


@cache
def _version(path: str) -> str:
    try:
        done = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=10,
                              check=False)
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return done.stdout.strip() or "unknown"


def runtime_description(language: str) -> str | None:
    """What runs `language` here, e.g. "Python 3.11.7" or "Node v20.20.2"; None: nothing."""
    if language == "python":
        return "Python " + ".".join(map(str, sys.version_info[:3]))
    found = javascript_runtime()
    if found is None:
        return None
    name, path = found
    return f"{name.capitalize()} {_version(path)}"


def installed_python_packages() -> list[str]:
    """The service's Python packages (distribution names) this interpreter can import."""
    return [dist for dist, module in PYTHON_PACKAGES.items()
            if importlib.util.find_spec(module) is not None]


# -- the children ------------------------------------------------------------------------------

# Run by `sys.executable -I -c`: reads {code, params, ...} on stdin, writes one JSON object on
# the result pipe. Limits first, then the guards, then the tool's code as module "main.py".
_PYTHON_CHILD = r'''
import builtins, json, os, resource, sys, time
cfg = json.loads(sys.stdin.read())
sys.stdin.close()
out = os.fdopen(cfg["result_fd"], "w", encoding="utf-8")
limit = cfg["memory_bytes"]
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
import asyncio, errno, inspect, socket, traceback

def _no_network(*args, **kwargs):
    raise PermissionError(errno.EACCES, cfg["network_off"])

for _name in ("connect", "connect_ex", "sendto", "sendmsg"):
    setattr(socket.socket, _name, _no_network)
socket.create_connection = socket.getaddrinfo = socket.gethostbyname = _no_network
socket.gethostbyname_ex = socket.getaddrinfo

_stdlib = sys.stdlib_module_names
_allowed = set(cfg["allowed"])
_missing = cfg["missing"]
_real_import = builtins.__import__

def _import(name, globals=None, locals=None, fromlist=(), level=0):
    if level == 0 and globals is not None and globals.get("__name__") == "__tool__":
        top = name.partition(".")[0]
        if top not in _stdlib and top not in _allowed:
            if top in _missing:
                raise ModuleNotFoundError(
                    f"package {_missing[top]!r} (import {top}) is not available in the mock: "
                    f"the service installs it, this mock's Python does not have it "
                    f"(pip install {_missing[top]} where the mock runs)", name=top)
            raise ModuleNotFoundError(
                f"No module named {top!r}: custom tool code may import the standard library "
                f"and the packages GET /v1/custom-tools/runtimes lists", name=top)
    return _real_import(name, globals, locals, fromlist, level)

builtins.__import__ = _import
sys.argv = ["main.py"]

def send(answer):
    sys.stdout.flush()
    sys.stderr.flush()
    out.write(json.dumps(answer))
    out.close()

def described(exc):
    text = str(exc)
    if isinstance(exc, MemoryError):
        text = text or f"over the memory limit of {cfg['memory_mb']} MiB"
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__

def trace(exc):
    found = traceback.TracebackException.from_exception(exc)
    found.stack = traceback.StackSummary.from_list(
        [f for f in found.stack if f.filename == "main.py"])
    return "".join(found.format())

started = time.perf_counter()
try:
    space = {"__name__": "__tool__", "__builtins__": builtins}
    exec(compile(cfg["code"], "main.py", "exec"), space)
    main = space.get("main")
    if not callable(main):
        raise NameError("the code defines no function main(**params)")
    value = main(**cfg["params"])
    if inspect.isawaitable(value):
        value = asyncio.run(value) if inspect.iscoroutine(value) else asyncio.run(
            asyncio.ensure_future(value))
except BaseException as exc:
    elapsed = (time.perf_counter() - started) * 1000
    send({"status": "raised", "error": described(exc), "trace": trace(exc), "ms": elapsed})
else:
    elapsed = (time.perf_counter() - started) * 1000
    kind = ("object" if isinstance(value, dict) else "null" if value is None
            else type(value).__name__)
    try:
        encoded = json.loads(json.dumps(value, allow_nan=False))
    except (TypeError, ValueError, RecursionError) as exc:
        send({"status": "unencodable", "type": kind, "error": str(exc),
              "repr": repr(value)[:200], "ms": elapsed})
    else:
        send({"status": "returned", "type": kind, "value": encoded,
              "repr": repr(value)[:200], "ms": elapsed})
'''

# The JavaScript child (runner.mjs beside tool.mjs in the run's directory), for Bun and Node.
_JS_CHILD = r'''
import fs from "node:fs";
import { createRequire } from "node:module";
const cfg = JSON.parse(fs.readFileSync(0, "utf8"));
const off = () => { const e = new Error(cfg.network_off); e.code = "EACCES"; throw e; };
const require = createRequire(import.meta.url);
for (const name of ["net", "tls", "http", "https", "http2", "dns", "dgram"]) {
  const mod = require("node:" + name);
  for (const key of ["connect", "createConnection", "request", "get", "lookup", "resolve",
                     "resolve4", "resolve6", "createSocket"]) {
    if (typeof mod[key] === "function") { try { mod[key] = off; } catch {} }
  }
  if (mod.Socket && mod.Socket.prototype) mod.Socket.prototype.connect = off;
  if (mod.promises) { mod.promises.lookup = off; mod.promises.resolve = off; }
}
globalThis.fetch = async () => off();
globalThis.WebSocket = function () { off(); };
if (globalThis.XMLHttpRequest) globalThis.XMLHttpRequest = function () { off(); };
const send = (answer) => { fs.writeSync(cfg.result_fd, JSON.stringify(answer)); fs.closeSync(cfg.result_fd); };
const kind = (v) => v === null ? "null" : Array.isArray(v) ? "array" : typeof v;
const described = (e) => {
  if (e instanceof Error) {
    const found = /Cannot find (?:package|module) '([^']+)'/.exec(e.message);
    if (found && !found[1].startsWith(".") && !found[1].startsWith("/")) {
      const name = found[1];
      const listed = cfg.packages.includes(name.split("/")[0]);
      return listed
        ? `Error: package '${name}' is not available in the mock: the service installs it, this mock installs no package`
        : `Error: Cannot find package '${name}': custom tool code may import the runtime's built-in modules and the packages GET /v1/custom-tools/runtimes lists`;
    }
    return `${e.name}: ${e.message}`;
  }
  return `Uncaught ${typeof e === "string" ? e : JSON.stringify(e) ?? String(e)}`;
};
const started = performance.now();
let value;
try {
  const mod = await import("./tool.mjs");
  const main = mod.main;
  if (typeof main !== "function") throw new ReferenceError("the code defines no function main(params)");
  value = await main(cfg.params);
} catch (e) {
  const stack = e instanceof Error && e.stack ? String(e.stack) : "";
  send({ status: "raised", error: described(e), trace: stack, ms: performance.now() - started });
  process.exit(0);
}
const ms = performance.now() - started;
let encoded;
try {
  encoded = value === undefined ? undefined : JSON.stringify(value);
} catch (e) {
  send({ status: "unencodable", type: kind(value), error: String(e && e.message || e), repr: String(value).slice(0, 200), ms });
  process.exit(0);
}
let shown;
try { shown = typeof value === "string" ? JSON.stringify(value) : String(encoded ?? value); } catch { shown = "?"; }
send({ status: "returned", js: true, type: kind(value), value: encoded === undefined ? null : JSON.parse(encoded), repr: shown.slice(0, 200), ms });
process.exit(0);
'''

_JS_PRELUDE = ('import { createRequire as __mockCreateRequire } from "node:module"; '
               'const require = __mockCreateRequire(import.meta.url); ')
_EXPORTS = re.compile(r"^\s*export\b", re.M)

_slots_lock = threading.Lock()
_slots: dict[int, threading.BoundedSemaphore] = {}


def _slot(limits: Limits) -> threading.BoundedSemaphore:
    with _slots_lock:
        return _slots.setdefault(limits.concurrent, threading.BoundedSemaphore(limits.concurrent))


def _child_env(home: str) -> dict[str, str]:
    """Nothing of the server's environment (its tokens, secrets) reaches tool code."""
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": home, "TMPDIR": home,
            "LANG": "C.UTF-8", "TZ": "UTC", "PYTHONIOENCODING": "utf-8",
            "PYTHONDONTWRITEBYTECODE": "1", "NO_COLOR": "1", "BUN_INSTALL_CACHE_DIR": home}


def _fail(error: str, runtime: str = "", logs: str | None = None, ms: float = 0) -> RunResult:
    return RunResult(success=False, error=error, logs=logs, run_time_ms=int(ms), runtime=runtime)


def run_tool(tool: Mapping[str, Any], params: Mapping[str, Any], limits: Limits = LIMITS, *,
             code: str | None = None) -> RunResult:
    """Run `tool`'s code (`code` instead, when given: a file of `serve --tool-code-dir`) with
    `params`, within `limits`. Blocks until the run ends (at most about `limits.timeout_s`
    plus a slot's wait); never raises for anything the code does."""
    language = tool.get("language")
    source = tool.get("code", "") if code is None else code
    with tempfile.TemporaryDirectory(prefix="mock-tool-") as home:
        if language == "python":
            runtime = runtime_description("python") or "python"
            argv = [sys.executable, "-I", "-u", "-c", _PYTHON_CHILD]
            installed = installed_python_packages()
            config: dict[str, Any] = {
                "allowed": [PYTHON_PACKAGES[d] for d in installed],
                "missing": {m: d for d, m in PYTHON_PACKAGES.items() if d not in installed},
            }
        elif language == "javascript":
            found = javascript_runtime()
            if found is None:
                return _fail("JavaScript tools need Bun (the service's runtime) or Node; "
                             "neither is installed where the mock runs (bun, node not on PATH; "
                             "MOCK_API_BUN unset)", "javascript")
            name, path = found
            runtime = f"{name} {_version(path)}"
            with open(os.path.join(home, "runner.mjs"), "w", encoding="utf-8") as f:
                f.write(_JS_CHILD)
            module = _JS_PRELUDE + source
            if not _EXPORTS.search(source):
                module += "\nexport { main };\n"
            with open(os.path.join(home, "tool.mjs"), "w", encoding="utf-8") as f:
                f.write(module)
            if name == "bun":
                argv = [path, "--no-install", "run", "runner.mjs"]
            else:
                argv = [path, f"--max-old-space-size={limits.memory_mb}", "runner.mjs"]
            config = {"packages": list(JS_PACKAGES)}
        else:
            return _fail(f"unknown language {language!r}")
        with _slot(limits):
            return _run(list(network_isolation()) + argv, home, runtime, {
                **config, "code": source, "params": dict(params), "network_off": _NETWORK_OFF,
                "memory_bytes": limits.memory_mb * 1024 * 1024, "memory_mb": limits.memory_mb,
            }, limits)


def _run(argv: list[str], home: str, runtime: str, config: dict[str, Any],
         limits: Limits) -> RunResult:
    result_read, result_write = os.pipe()
    config["result_fd"] = result_write
    started = time.perf_counter()
    try:
        child = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT, pass_fds=(result_write,), cwd=home,
                                 env=_child_env(home), start_new_session=True)
    except OSError as exc:
        os.close(result_read)
        os.close(result_write)
        return _fail(f"the mock could not start {argv[0]}: {exc}", runtime)
    os.close(result_write)
    logs = bytearray()
    dropped = 0
    answer = bytearray()
    timed_out = False
    try:
        assert child.stdin is not None and child.stdout is not None
        try:
            child.stdin.write(json.dumps(config).encode())
            child.stdin.close()
        except (BrokenPipeError, OSError):
            pass
        deadline = started + limits.timeout_s
        with selectors.DefaultSelector() as selector:
            selector.register(child.stdout, selectors.EVENT_READ, "logs")
            selector.register(result_read, selectors.EVENT_READ, "answer")
            while selector.get_map():
                left = deadline - time.perf_counter()
                if left <= 0:
                    timed_out = True
                    break
                for key, _ in selector.select(min(left, 0.25)):
                    chunk = os.read(key.fd, 65536)
                    if not chunk:
                        selector.unregister(key.fileobj)
                    elif key.data == "logs":
                        room = limits.output_bytes - len(logs)
                        logs += chunk[:max(room, 0)]
                        dropped += max(len(chunk) - max(room, 0), 0)
                    elif len(answer) <= limits.result_bytes:  # past it: over the bound
                        answer += chunk
                if "answer" not in [k.data for k in selector.get_map().values()] \
                        and child.poll() is not None:
                    break  # answered and ended: a grandchild holding stdout is not waited for
        elapsed = (time.perf_counter() - started) * 1000
    finally:
        _kill(child)
        os.close(result_read)
        if child.stdout is not None:
            child.stdout.close()
    text = logs.decode("utf-8", "replace")
    if dropped:
        text += f"\n[... {dropped} more bytes of output not kept: the mock keeps " \
                f"{limits.output_bytes} bytes]"
    shown = text or None
    if timed_out:
        return _fail(f"timed out after {limits.timeout_s:g} s (the mock's limit for a run)",
                     runtime, shown, elapsed)
    if not answer:
        return _fail(_no_answer(child.returncode, text, limits), runtime, shown, elapsed)
    if len(answer) > limits.result_bytes:
        return _fail(f"the returned object is over the mock's bound of {limits.result_bytes} "
                     "bytes once encoded as JSON", runtime, shown, elapsed)
    try:
        reply = json.loads(answer)
    except ValueError:
        return _fail("the tool's process sent an unreadable answer", runtime, shown, elapsed)
    ms = reply.get("ms", elapsed)
    if reply["status"] == "raised":
        trace = reply.get("trace") or ""
        logs_out = (text + ("\n" if text and not text.endswith("\n") else "") + trace) \
            if trace else text
        return _fail(reply["error"], runtime, logs_out or None, ms)
    if reply["status"] == "unencodable":
        return _fail(f"{CONTRACT}, and the returned value must encode as JSON: "
                     f"{reply['error']}", runtime, shown, ms)
    return _checked(reply, runtime, shown, ms)


_JSON_TYPES = {bool: "boolean", int: "number", float: "number", list: "array",
               type(None): "null", dict: "object"}


def _checked(reply: dict[str, Any], runtime: str, logs: str | None, ms: float) -> RunResult:
    """The returned value judged as the service judges it (DECISIONS T2)."""
    value, kind = reply.get("value"), reply.get("type")
    if not isinstance(value, dict):
        return _fail(f"{CONTRACT}; it returned {kind}: {reply.get('repr', '')}", runtime, logs,
                     ms)
    if "message" not in value:
        return _fail(f"{CONTRACT}; the returned object has no `message` (keys: "
                     f"{', '.join(map(str, value)) or 'none'})", runtime, logs, ms)
    if not isinstance(value["message"], str):
        got = _JSON_TYPES.get(type(value["message"]), "object") if reply.get("js") else \
            type(value["message"]).__name__ if value["message"] is not None else "null"
        return _fail(f"{CONTRACT}; `message` is {got}, not a string", runtime, logs, ms)
    return RunResult(success=True, message=value["message"], raw_data=value.get("rawData"),
                     has_raw_data="rawData" in value, logs=logs, run_time_ms=int(ms),
                     runtime=runtime)


def _no_answer(status: int | None, text: str, limits: Limits) -> str:
    if "heap out of memory" in text or "Allocation failed" in text:
        return f"the tool's code went over the mock's memory limit of {limits.memory_mb} MiB"
    if status is not None and status < 0:
        try:
            name = signal.Signals(-status).name
        except ValueError:
            name = str(-status)
        return f"the tool's process ended without an answer (killed by {name})"
    return f"the tool's process ended without an answer (exit status {status})"


def _kill(child: subprocess.Popen[bytes]) -> None:
    """The run's whole process group, whatever it left running."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(child.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        child.wait(timeout=5)
