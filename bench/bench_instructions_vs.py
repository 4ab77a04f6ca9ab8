"""Instructions per request of this tree against a base commit, side by side, under callgrind.

    python bench/bench_instructions_vs.py c120e29 [--seeds 0,1] [--n 2000]

For each tree (the base checked out into a temporary worktree, and this one), each hash seed
(`PYTHONHASHSEED`: unseeded runs of one tree vary by about 1%) and each path (uncached:
`CACHE=0`; cached: `CACHE=256`), runs `bench_request_instructions.py` at N and 2N requests
under `valgrind --tool=callgrind` and prints (I refs at 2N - I refs at N) / N, then the ratio
of this tree to the base. Instruction counts do not depend on the machine's load.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _refs(tree: Path, n: int, seed: str, cache: str) -> int:
    env = {**os.environ, "PYTHONHASHSEED": seed, "CACHE": cache, "PYTHONPATH": str(tree)}
    done = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable,
         str(tree / "bench" / "bench_request_instructions.py"), str(n)],
        cwd=tree, env=env, capture_output=True, text=True, check=True)
    found = re.search(r"Collected\s*:\s*(\d+)", done.stderr) or re.search(
        r"I\s+refs:\s*([\d,]+)", done.stderr)
    assert found, done.stderr[-2000:]
    return int(found.group(1).replace(",", ""))


def per_request(tree: Path, n: int, seed: str, cache: str) -> float:
    return (_refs(tree, 2 * n, seed, cache) - _refs(tree, n, seed, cache)) / n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("base", help="a commit of this repository")
    parser.add_argument("--seeds", default="0,1")
    parser.add_argument("--n", type=int, default=2000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp) / "base"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "-q", "--detach", str(base),
                        args.base], check=True)
        try:
            print(f"{'path':9} {'seed':>4} {'base':>10} {'this tree':>10} {'ratio':>7}")
            for cache, name in (("0", "uncached"), ("256", "cached")):
                for seed in args.seeds.split(","):
                    before = per_request(base, args.n, seed, cache)
                    after = per_request(ROOT, args.n, seed, cache)
                    print(f"{name:9} {seed:>4} {before:10.0f} {after:10.0f} "
                          f"{after / before:7.3f}", flush=True)
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(base)],
                           check=False)


if __name__ == "__main__":
    main()
