"""Benchmark: load a large generated dataset and build a mock from it.

Generates `--scale` contacts with related records (default 100,000) into a temporary directory,
or reuses `--dir`, then measures in a fresh subprocess, for each validation mode:

- wall time and peak RSS (`resource.getrusage(RUSAGE_SELF).ru_maxrss`) of `load_dataset`
  plus building `MockApp(Config(fixtures=[dir]))` around it, and the CPU time of each phase
  (imports and the document, `load_dataset`, `MockApp`): on a shared machine the wall time
  swings with the load, the CPU time much less.

Targets: <= 10 s and <= 1 GiB RSS.

    python bench/bench_fixtures_load.py                  # generate 100,000 contacts, measure
    python bench/bench_fixtures_load.py --dir /tmp/big   # reuse (or fill) a dataset directory
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET_SECONDS = 10.0
TARGET_BYTES = 1 << 30

# Runs in the fresh subprocess: nothing imported or allocated before the measurement starts
# except the interpreter and the modules the mock itself needs.
_CHILD = r"""
import json, resource, sys, time
from pathlib import Path
directory, validate = Path(sys.argv[1]), sys.argv[2] == "1"
start, cpu0 = time.perf_counter(), time.process_time()
from mockserver.engine.app import Config, MockApp
from mockserver.data.fixtures import load_dataset
from mockserver.openapi.spec import load_spec
spec = load_spec()
imported, cpu1 = time.perf_counter(), time.process_time()
dataset = load_dataset([directory], spec=spec, validate=validate)
loaded, cpu2 = time.perf_counter(), time.process_time()
error = None
try:
    MockApp(Config(fixtures=[directory]), dataset=dataset)
except RuntimeError as exc:  # e.g. operations without a handler while handlers are in progress
    error = str(exc)[:200]
built, cpu3 = time.perf_counter(), time.process_time()
usage = resource.getrusage(resource.RUSAGE_SELF)
rss = usage.ru_maxrss * 1024  # KiB on Linux
cpu = usage.ru_utime + usage.ru_stime
records = sum(len(rows) for rows in dataset.tables.values())
print(json.dumps({"import_s": imported - start, "load_s": loaded - imported, "app_s": built - loaded,
                  "import_cpu": cpu1 - cpu0, "load_cpu": cpu2 - cpu1, "app_cpu": cpu3 - cpu2,
                  "total_s": built - start, "cpu_s": cpu, "rss_bytes": rss, "records": records, "app_error": error}))
"""


def measure(directory: Path, validate: bool) -> dict:
    output = subprocess.run(
        [sys.executable, "-c", _CHILD, str(directory), "1" if validate else "0"],
        check=True, capture_output=True, text=True,
    )
    return json.loads(output.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description="Benchmark loading a large fixture dataset.")
    parser.add_argument("--scale", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--dir", type=Path, help="dataset directory to reuse (generated if empty)")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="bench-fixtures-") as tmp:
        directory = args.dir or Path(tmp)
        if not directory.is_dir() or not any(directory.glob("contacts.*")):
            from mockserver.data.generate import generate

            started = time.perf_counter()
            generate(args.scale, args.seed, directory)
            print(f"generated {args.scale:,} contacts into {directory} in {time.perf_counter() - started:.1f} s")
        size = sum(p.stat().st_size for p in directory.iterdir())
        print(f"dataset: {directory} ({size / 1e6:.1f} MB on disk)")
        ok = True
        for validate in (True, False):
            result = measure(directory, validate)
            within = result["total_s"] <= TARGET_SECONDS and result["rss_bytes"] <= TARGET_BYTES
            ok = ok and (within or not validate)
            print(
                f"validate={'on ' if validate else 'off'}: {result['records']:,} records; "
                f"load_dataset {result['load_s']:.2f} s ({result['load_cpu']:.2f} s CPU), "
                f"MockApp {result['app_s']:.2f} s ({result['app_cpu']:.2f} s CPU), imports and "
                f"document {result['import_s']:.2f} s ({result['import_cpu']:.2f} s CPU), "
                f"total {result['total_s']:.2f} s wall "
                f"({result['cpu_s']:.2f} s CPU); "
                f"peak RSS {result['rss_bytes'] / (1 << 20):.0f} MiB "
                f"[{'within' if within else 'OVER'} target 10 s / 1024 MiB]"
            )
            if result["app_error"]:
                print(f"  note: MockApp raised: {result['app_error']}")
        sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
