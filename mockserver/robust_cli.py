"""`python -m mockserver robust [options] -- COMMAND`: robustness mode for a client in any language.

Serves the mock on 127.0.0.1 (a free port, the self-check on), and runs COMMAND (the client's
own test command) once per run, each time in a fresh session of the mock whose answers vary by
a plan the server draws from that run's seed (`PUT /sessions/{name}/__mock__/variations`). The
command finds the session's base URL, a write token and its workspace in MOCK_API_BASE_URL,
MOCK_API_TOKEN and MOCK_API_WORKSPACE. A non-zero exit (or a time-out) is a failure: the plan's
applied items are reduced by delta debugging (robust/ddmin.py), re-running COMMAND on explicit
sub-plans, to a minimal plan printed in words with the one-line command that replays it.

Exit status: 0 when every run passed, 1 when a run failed (or the replayed plan fails), 2 on a
usage error (a refused option, a command that cannot be started).

This is robustness mode's command line, beside the package (`mockserver/robust/`: the
catalogue, plans and their runtime, which the standalone server and the plugin import): it
serves the standalone server, so it sits above it (pyproject.toml's layers).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import secrets
import shlex
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from .robust.ddmin import ddmin

__all__ = ["DEFAULT_RUNS", "Outcome", "Runner", "main", "reduce_failure", "serve_mock"]

DEFAULT_RUNS = 25
# Variations drawn per run: many at once, since a run costs a process start and delta
# debugging brings a failure back to the few items that matter.
DEFAULT_SIZE = 40
DEFAULT_TIMEOUT = 60.0  # seconds one run of the command may take (a hang is a failure)
OUTPUT_LINES = 40  # lines of the failing command's output shown with the minimal plan


class UsageError(Exception):
    """A refused option, plan or command: said on stderr, exit status 2."""


@dataclass
class Outcome:
    """One run of the command in one session: its exit status (None: timed out), its output,
    the plan the server applied and which of its items changed at least one answer."""

    exit_code: int | None
    output: str
    plan: list[dict[str, Any]]
    applied: list[int]
    seed: int | None
    seconds: float

    @property
    def failed(self) -> bool:
        return self.exit_code != 0

    @property
    def status(self) -> str:
        if self.exit_code is None:
            return "timed out"
        return "passed" if self.exit_code == 0 else f"failed (exit {self.exit_code})"


@dataclass
class Identity:
    """What the command is handed besides the URL: a write token and its first workspace."""

    token: str
    workspace: str


@contextlib.contextmanager
def serve_mock(fixtures: Sequence[Path]) -> Iterator[tuple[str, Identity]]:
    """The mock on 127.0.0.1 at a free port, in a thread of this process (self-check on, no
    request log); yields its root URL and the identity runs get."""
    import uvicorn

    from .data.fixtures import FixtureError, default_fixtures_dir
    from .engine.app import MockApp
    from .engine.config import Config
    from .standalone.bind import bind_sockets
    from .standalone.cli import PROTOCOL
    from .standalone.server import create_app

    sockets = bind_sockets("127.0.0.1", 0)
    port = sockets[0].getsockname()[1]
    base_url = f"http://127.0.0.1:{port}"
    config = Config(fixtures=list(fixtures) or [default_fixtures_dir()], self_check=True,
                    base_url=base_url, request_log=False, exposed=())
    try:
        mock = MockApp(config)
    except FixtureError as exc:
        for sock in sockets:
            sock.close()
        raise UsageError(f"--fixtures: {exc}") from None
    server = uvicorn.Server(uvicorn.Config(create_app(mock=mock), log_level="warning",
                                           access_log=False, lifespan="on", http=PROTOCOL))
    thread = threading.Thread(target=server.run, kwargs={"sockets": sockets},
                              name="robust-mock", daemon=True)
    thread.start()
    try:
        while not server.started:
            if not thread.is_alive():
                raise RuntimeError("the mock did not start")
            time.sleep(0.01)
        yield base_url, _identity(mock)
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        for sock in sockets:
            sock.close()


def _identity(mock: Any) -> Identity:
    """The fixtures' first write token (as the pytest plugin picks it) and its first workspace."""
    tokens = list(mock.state.shared.dataset.tokens)
    write = next((t for t in tokens if t["token"] == "mock-write-token"), None)
    write = write or next((t for t in tokens if t.get("access") == "write"), None)
    if write is None or not write.get("workspace_ids"):
        raise UsageError("the fixtures have no write token with a workspace")
    return Identity(token=write["token"], workspace=next(iter(write["workspace_ids"])))


@dataclass
class Runner:
    """Runs the command in fresh sessions of the mock at `base_url`, with a drawn or given plan."""

    base_url: str
    identity: Identity
    command: list[str]
    timeout: float = DEFAULT_TIMEOUT
    kinds: list[str] = field(default_factory=list)
    operations: list[str] = field(default_factory=list)
    size: int | None = DEFAULT_SIZE
    runs: int = 0  # how many times the command ran

    def __post_init__(self) -> None:
        self._control = httpx.Client(base_url=self.base_url, timeout=30)

    def close(self) -> None:
        self._control.close()

    def _call(self, method: str, path: str, body: Any = None) -> Any:
        response = self._control.request(method, path, json=body)
        if response.status_code == 400:
            raise UsageError(response.json().get("error", response.text))
        response.raise_for_status()
        return response.json() if response.content else None

    def run(self, *, seed: int | None = None, plan: list[dict[str, Any]] | None = None) -> Outcome:
        """One run: a new session, its variations (the plan, or drawn from the seed), the
        command, then what the server applied; the session is deleted afterwards."""
        self.runs += 1
        name = f"robust-{os.getpid()}-{self.runs}"
        session = self._call("POST", "/__mock__/sessions", {"name": name})
        prefix = session["base_path"]
        try:
            if plan is not None:
                body: dict[str, Any] = {"plan": plan}
            else:
                body = {"seed": seed}
                if self.kinds:
                    body["kinds"] = self.kinds
                if self.operations:
                    body["operations"] = self.operations
                if self.size is not None:
                    body["size"] = self.size
            chosen = self._call("PUT", f"{prefix}/__mock__/variations", body)
            start = time.perf_counter()
            exit_code, output = self._execute(self.base_url + prefix)
            seconds = time.perf_counter() - start
            state = self._call("GET", f"{prefix}/__mock__/variations")
        finally:
            self._call("DELETE", f"/__mock__/sessions/{name}")
        return Outcome(exit_code=exit_code, output=output, plan=list(chosen["plan"]),
                       applied=list(state.get("applied", [])), seed=chosen.get("seed"),
                       seconds=seconds)

    def _execute(self, session_url: str) -> tuple[int | None, str]:
        env = {**os.environ, "MOCK_API_BASE_URL": session_url,
               "MOCK_API_TOKEN": self.identity.token, "MOCK_API_WORKSPACE": self.identity.workspace}
        try:
            proc = subprocess.Popen(self.command, env=env, stdout=subprocess.PIPE,
                                    stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    start_new_session=True)
        except OSError as exc:
            raise UsageError(f"cannot run {shlex.join(self.command)}: {exc}") from None
        try:
            out, _ = proc.communicate(timeout=self.timeout)
            return proc.returncode, out.decode("utf-8", "replace")
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)  # the command and what it started
            out, _ = proc.communicate()
            return None, out.decode("utf-8", "replace")


@dataclass
class Reduction:
    """What reducing a failure found: the minimal plan and its run, or why there is none."""

    plan: list[dict[str, Any]] | None  # None: the failure did not come back when replayed
    outcome: Outcome
    runs: int
    faithful: bool = False  # the command fails on the faithful mock too (the empty plan)


def reduce_failure(run: Callable[[list[dict[str, Any]]], Outcome], failed: Outcome) -> Reduction:
    """The failing run's plan reduced to a 1-minimal failing plan. First the empty plan (a
    failure without variations is none of theirs), then only the items that changed an
    answer, then ddmin over them; each question is one run of the command on a new session."""
    count = 0
    outcomes: dict[str, Outcome] = {}

    def fails(sub: list[dict[str, Any]]) -> bool:
        nonlocal count
        count += 1
        outcome = outcomes[json.dumps(sub, sort_keys=True)] = run(sub)
        return outcome.failed

    if fails([]):
        return Reduction([], outcomes[json.dumps([])], count, faithful=True)
    applied = [failed.plan[i] for i in failed.applied if 0 <= i < len(failed.plan)]
    start = next((plan for plan in (applied, failed.plan) if plan and fails(plan)), None)
    if start is None:
        return Reduction(None, failed, count)
    minimal = ddmin(start, fails)
    return Reduction(minimal, outcomes[json.dumps(minimal, sort_keys=True)], count)


def describe(item: dict[str, Any]) -> str:
    """An item in words: the server's `describe`, else its fields."""
    words = item.get("describe")
    return str(words) if words else json.dumps(item, sort_keys=True)


def _list_option(value: str) -> list[str]:
    return [part.strip() for part in value.split(",") if part.strip()]


def build_parser(prog: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=prog, usage=f"{prog} [options] -- COMMAND [ARG ...]",
        description="Run COMMAND (a client's own tests, in any language) against the mock, "
        "once per run in a fresh session whose answers vary by a plan drawn from the run's "
        "seed: content (null, absent, empty, long, non-ASCII, every enum value, extra fields), "
        "paging (pages of one, an empty last page) and answers (documented errors, 429 with "
        "Retry-After, a 5xx then success, slow answers, dropped connections), each valid "
        "against the document. COMMAND gets MOCK_API_BASE_URL, MOCK_API_TOKEN and "
        "MOCK_API_WORKSPACE. A failing run is reduced to a minimal plan, printed in words "
        "with the command that replays it. Exit 0: every run passed; 1: a failure.")
    parser.add_argument("--runs", type=int, default=DEFAULT_RUNS, metavar="N",
                        help=f"runs, each with its own seed (default {DEFAULT_RUNS})")
    parser.add_argument("--seed", type=int, default=None, metavar="S",
                        help="seed of the first run (the next runs take S+1, S+2, ...; "
                        "default: random, printed)")
    parser.add_argument("--size", type=int, default=DEFAULT_SIZE, metavar="N",
                        help="variations drawn for each run's plan, at most 100 (default "
                        f"{DEFAULT_SIZE}: many at once, a failure is reduced to the few that "
                        "matter)")
    parser.add_argument("--kinds", type=_list_option, default=[], metavar="K,...",
                        help="vary only these kinds (default: every kind)")
    parser.add_argument("--operations", type=_list_option, default=[], metavar="OP,...",
                        help="vary only these operations' answers (default: every operation)")
    parser.add_argument("--replay", default=None, metavar="PLAN",
                        help="run once on exactly this plan (a JSON list, or a file holding "
                        "one), as the failure report prints it")
    parser.add_argument("--fixtures", action="append", default=[], metavar="DIR",
                        help="fixture directory to serve instead of the defaults (repeatable)")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, metavar="SECONDS",
                        help=f"a run taking longer fails (default {DEFAULT_TIMEOUT:g})")
    parser.add_argument("--report", default=None, metavar="FILE",
                        help="also write the result as JSON (for CI): the seeds, the failing "
                        "run's plan, the minimal plan and the replay command")
    return parser


def _load_plan(text: str) -> list[dict[str, Any]]:
    source = "--replay"
    if not text.lstrip().startswith("["):
        try:
            text, source = Path(text).read_text(encoding="utf-8"), text
        except OSError as exc:
            raise UsageError(f"--replay: neither a JSON list nor a readable file: {exc}") from None
    try:
        plan = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(f"--replay: {source} is not JSON: {exc}") from None
    if not isinstance(plan, list) or not all(isinstance(item, dict) for item in plan):
        raise UsageError(f"--replay: {source} is not a JSON list of variation objects")
    return plan


def replay_line(prog: str, args: argparse.Namespace, plan: list[dict[str, Any]],
                command: list[str]) -> str:
    """The one-line command that runs COMMAND once on exactly `plan`."""
    words = [*shlex.split(prog)]
    for directory in args.fixtures:
        words += ["--fixtures", directory]
    if args.timeout != DEFAULT_TIMEOUT:
        words += ["--timeout", f"{args.timeout:g}"]
    words += ["--replay", json.dumps(plan, separators=(",", ":")), "--", *command]
    return shlex.join(words)


def _indented(output: str) -> str:
    lines = output.rstrip().splitlines()
    shown = lines[-OUTPUT_LINES:]
    head = [f"    ... ({len(lines) - len(shown)} lines before)"] if len(lines) > len(shown) else []
    return "\n".join(head + [f"    | {line}" for line in shown]) or "    (no output)"


def _report_failure(prog: str, args: argparse.Namespace, command: list[str], failed: Outcome,
                    reduction: Reduction) -> dict[str, Any]:
    """The failure in words (and, returned, as the JSON report has it)."""
    say = print
    report: dict[str, Any] = {
        "result": "failed", "failing_run": {"seed": failed.seed, "plan": failed.plan,
                                            "applied": failed.applied,
                                            "exit_code": failed.exit_code},
        "faithful_failure": reduction.faithful, "reproduced": reduction.plan is not None,
        "reruns": reduction.runs, "minimal_plan": reduction.plan, "replay": None}
    if reduction.faithful:
        say(f"\nThe command fails on the faithful mock too (no variation needed), "
            f"{reduction.outcome.status}:")
        say(_indented(reduction.outcome.output))
        return report
    if reduction.plan is None:
        say(f"\nThe failure did not come back when its plan was replayed ({reduction.runs} "
            "re-runs): the command may be flaky. The failing run's plan:")
        plan = failed.plan
    else:
        plan = reduction.plan
        say(f"\nMinimal failing plan ({len(plan)} of {len(failed.plan)} variations, found in "
            f"{reduction.runs} re-runs):")
    for item in plan:
        say(f"  - {describe(item)}")
    say(f"\nThe command on that plan {reduction.outcome.status}:")
    say(_indented(reduction.outcome.output))
    report["replay"] = replay_line(prog, args, plan, command)
    say("\nReplay it:")
    say(f"  {report['replay']}")
    return report


def _explore(runner: Runner, args: argparse.Namespace, first: int) -> Outcome | None:
    """The seeded runs, until one fails; a summary of what was varied when none does."""
    print(f"robust: {args.runs} runs of {shlex.join(runner.command)}, seeds {first}.."
          f"{first + args.runs - 1} (--seed {first})", flush=True)
    varied: Counter[str] = Counter()
    for number in range(args.runs):
        outcome = runner.run(seed=first + number)
        applied = [outcome.plan[i] for i in outcome.applied if 0 <= i < len(outcome.plan)]
        varied.update(str(item.get("kind")) for item in applied)
        print(f"  run {number + 1}/{args.runs} seed {outcome.seed}: {len(outcome.plan)} drawn, "
              f"{len(applied)} applied, {outcome.status} ({outcome.seconds:.2f}s)", flush=True)
        if outcome.failed:
            return outcome
    kinds = ", ".join(f"{kind} {n}" for kind, n in sorted(varied.items())) or "none"
    print(f"robust: all {args.runs} runs passed; variations applied: {kinds}")
    return None


def _replay(runner: Runner, plan: list[dict[str, Any]]) -> dict[str, Any]:
    print(f"robust: replaying {len(plan)} variation(s) on {shlex.join(runner.command)}")
    for item in plan:
        print(f"  - {describe(item)}")
    outcome = runner.run(plan=plan)
    print(_indented(outcome.output))
    print(f"robust: the command {outcome.status} on the replayed plan")
    return {"result": "failed" if outcome.failed else "passed", "plan": outcome.plan,
            "applied": outcome.applied, "exit_code": outcome.exit_code}


def _robust(prog: str, args: argparse.Namespace, command: list[str],
            plan: list[dict[str, Any]] | None) -> dict[str, Any]:
    """Serve the mock, then replay the plan or explore seeds (and reduce a failure)."""
    with serve_mock([Path(p) for p in args.fixtures]) as (base_url, identity):
        runner = Runner(base_url, identity, command, timeout=args.timeout, kinds=args.kinds,
                        operations=args.operations, size=args.size)
        try:
            if plan is not None:
                return _replay(runner, plan)
            first = args.seed if args.seed is not None else secrets.randbelow(1_000_000)
            failed = _explore(runner, args, first)
            if failed is None:
                return {"result": "passed", "seed": first, "runs": args.runs}
            print(f"robust: reducing the {len(failed.applied)} applied of "
                  f"{len(failed.plan)} variations ...", flush=True)
            reduction = reduce_failure(lambda sub: runner.run(plan=sub), failed)
            return {**_report_failure(prog, args, command, failed, reduction), "seed": first}
        finally:
            runner.close()


def main(argv: Sequence[str] | None = None, prog: str = "python -m mockserver robust") -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(prog)
    if "--" not in argv:
        options, command = argv, []
    else:
        split = argv.index("--")
        options, command = argv[:split], argv[split + 1:]
    args = parser.parse_args(options)
    if not command:
        parser.error("give the command to run after --, e.g. -- python -m pytest tests/")
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    try:
        plan = _load_plan(args.replay) if args.replay is not None else None
        report = _robust(prog, args, command, plan)
    except UsageError as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 2
    if args.report:
        Path(args.report).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return 1 if report["result"] == "failed" else 0
