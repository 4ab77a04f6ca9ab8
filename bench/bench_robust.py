"""Robustness mode's cost: the per-example overhead (a fresh session and a drawn plan) on the
default fixtures and on 100k generated contacts, and examples per second for a test making
ten calls.

Over HTTP against the mock `python -m mockserver robust` serves (127.0.0.1, in a thread of
this process, self-check on), as the CLI drives it:
- overhead: per example, POST /__mock__/sessions, PUT .../__mock__/variations {seed}, GET it
  back (the applied items) and DELETE the session: the control calls one run costs besides
  the command itself;
- ten calls: that overhead plus ten API calls in the varied session (three pages of contacts
  of ten, then contacts and tickets read one by one), in process (as the pytest side runs
  examples), and through the CLI with a Python command making the same calls (each run then
  pays a process start).
Plans are the CLI's: 40 items (`--size`) over the three operations the ten calls make. Delays
are the plan's own doing, not overhead: the `slow` kind is left out of the draws.

    python bench/bench_robust.py [--examples 200] [--cli-runs 20]
                                 [--dataset DIR]   # 100k contacts (bench/_datasets.py when omitted)
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).parent))
from _datasets import dataset
from _ten_calls import ten_calls

from mockserver.robust.catalogue import KINDS as ALL_KINDS
from mockserver.robust_cli import DEFAULT_SIZE, serve_mock

KINDS = [kind for kind in ALL_KINDS if kind != "slow"]
OPERATIONS = ["listContacts", "getContact", "listTickets"]  # what the ten calls call



def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q / 100))]


def one_example(control: httpx.Client, api: httpx.Client | None, number: int,
                workspace: str) -> tuple[float, float, int]:
    """Milliseconds of one example's session calls (create, delete) and of its plan calls (PUT
    the seed, GET the applied items), and the plan's size; with `api`, the ten calls are made
    in the varied session too (not counted)."""
    name = f"bench-{number}"
    t0 = time.perf_counter()
    prefix = control.post("/__mock__/sessions", json={"name": name}).json()["base_path"]
    t1 = time.perf_counter()
    answer = control.put(f"{prefix}/__mock__/variations",
                         json={"seed": number, "kinds": KINDS, "operations": OPERATIONS,
                               "size": DEFAULT_SIZE})
    answer.raise_for_status()
    plan = answer.json()["plan"]
    t2 = time.perf_counter()
    if api is not None:
        ten_calls(api, prefix, workspace)
    t3 = time.perf_counter()
    control.get(f"{prefix}/__mock__/variations").raise_for_status()
    t4 = time.perf_counter()
    control.delete(f"/__mock__/sessions/{name}").raise_for_status()
    t5 = time.perf_counter()
    return (t1 - t0 + t5 - t4) * 1000, (t2 - t1 + t4 - t3) * 1000, len(plan)


def dataset_figures(label: str, fixtures: list[Path], examples: int, cli_runs: int) -> None:
    started = time.perf_counter()
    with serve_mock(fixtures) as (base_url, identity):
        load_s = time.perf_counter() - started
        headers = {"Authorization": f"Bearer {identity.token}"}
        with httpx.Client(base_url=base_url, timeout=60) as control, \
                httpx.Client(base_url=base_url, timeout=60, headers=headers) as api:
            one_example(control, api, 10**6, identity.workspace)  # warm: indexes, imports
            session, plan, sizes = [], [], []
            for n in range(examples):
                session_ms, plan_ms, size = one_example(control, None, n, identity.workspace)
                session.append(session_ms)
                plan.append(plan_ms)
                sizes.append(size)
            overhead = [a + b for a, b in zip(session, plan, strict=True)]
            t0 = time.perf_counter()
            for n in range(examples):
                one_example(control, api, examples + n, identity.workspace)
            in_process = examples / (time.perf_counter() - t0)
        print(f"{label} (served in {load_s:.1f} s):")
        print(f"  per-example overhead (session + drawn plan + read back + delete): median "
              f"{statistics.median(overhead):.2f} ms, p95 {percentile(overhead, 95):.2f} ms "
              f"({examples} examples, plans of {min(sizes)}-{max(sizes)} items)")
        print(f"    of which the session (create, delete): median "
              f"{statistics.median(session):.2f} ms; the plan (PUT seed, GET applied): median "
              f"{statistics.median(plan):.2f} ms")
        print(f"  a test making ten calls, in process: {in_process:.1f} examples/s")
    if cli_runs:
        script = Path(__file__).with_name("_ten_calls.py")  # the same calls, as a command
        argv = [sys.executable, "-m", "mockserver", "robust", "--runs", str(cli_runs),
                "--seed", "0", "--kinds", ",".join(KINDS), "--operations", ",".join(OPERATIONS)]
        argv += [w for f in fixtures for w in ("--fixtures", str(f))]
        t0 = time.perf_counter()
        done = subprocess.run([*argv, "--", sys.executable, str(script)],
                              capture_output=True, text=True)
        seconds = time.perf_counter() - t0
        if done.returncode != 0:
            sys.exit(f"robust CLI run failed:\n{done.stdout}\n{done.stderr}")
        print(f"  a test making ten calls, through the CLI (python command per run): "
              f"{cli_runs / seconds:.1f} runs/s ({cli_runs} runs in {seconds:.1f} s, "
              f"serving the mock included)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--examples", type=int, default=200)
    parser.add_argument("--cli-runs", type=int, default=20)
    parser.add_argument("--dataset", type=Path, default=None,
                        help="a generated 100k dataset (python -m mockserver fixtures generate "
                             "--scale 100000 --out DIR); if omitted, generated once into "
                             "/tmp/mockserver-bench-100000 and reused (bench/_datasets.py)")
    args = parser.parse_args()
    dataset_figures("default fixtures", [], args.examples, args.cli_runs)
    dataset_figures("generated --scale 100000 (100k contacts)",
                    [args.dataset or dataset(100_000)], args.examples, args.cli_runs)


if __name__ == "__main__":
    main()
