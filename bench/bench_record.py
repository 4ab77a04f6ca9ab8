"""Benchmark: record a mock serving a generated dataset (`python -m mockserver record`'s walk,
scrubbing, drift checks, the written files' load and leak check).

For each `--scale` (default 10,000 and 100,000 contacts) it generates the dataset, then in a
fresh subprocess serves it in-process (no socket, no pacing: `--rate 0`) and records both
workspaces, printing the wall and CPU time, the requests sent, the records written and the
peak RSS of the process (which holds the source mock's dataset too, so it overstates what
`record` alone holds). Against a real server the time is set by the rate limit instead:
at the documented 120 requests a minute, `requests / 120` minutes.

    python bench/bench_record.py                       # 10,000 and 100,000 contacts
    python bench/bench_record.py --scale 2000          # one size
    nice python bench/bench_record.py --progress 2> progress.log   # record's progress line

With `--progress` the recording's own progress line (records, requests, reads queued, time
elapsed) goes to stderr: a run stopped before its end still tells how far it got and how fast.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

_CHILD = r"""
import json, resource, sys, time
from pathlib import Path
import httpx
from mockserver.engine.app import Config
from mockserver.openapi.spec import load_spec
from mockserver.record.run import Options, record
from mockserver.standalone.server import create_app
from mockserver.testing.transport import DirectTransport
source, out, progress = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3] == "1"
print(f"serving {source}", file=sys.stderr, flush=True)
app = create_app(Config(fixtures=[source], rate_limit=0, request_log=False, response_cache=0))
transport = DirectTransport(app, httpx.URL("http://mock"), httpx.HTTPTransport())
start, cpu0 = time.perf_counter(), time.process_time()
print(f"recording (dataset loaded: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024}"
      " MiB peak RSS so far)", file=sys.stderr, flush=True)
with httpx.Client(base_url="http://mock", transport=transport,
                  headers={"Authorization": "Bearer mock-write-token"}) as client:
    summary = record(load_spec(), client, Options(out=out, scrub_key="bench", progress=progress),
                     per_minute=0)
print(json.dumps({"seconds": time.perf_counter() - start, "cpu": time.process_time() - cpu0,
                  "requests": summary["requests"], "records": sum(summary["records"].values()),
                  "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def measure(scale: int, progress: bool = False) -> dict[str, float]:
    from mockserver.data.generate import generate

    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "source"
        generate(scale=scale, seed=0, out=source)
        # stderr is left to the terminal (or the caller's redirection): --progress shows there
        done = subprocess.run([sys.executable, "-c", _CHILD, str(source), str(Path(tmp) / "rec"),
                               "1" if progress else "0"],
                              stdout=subprocess.PIPE, text=True, check=True)
        result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
        return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=int, action="append", default=[])
    parser.add_argument("--progress", action="store_true",
                        help="the recording's progress line on stderr")
    args = parser.parse_args()
    for scale in args.scale or [10_000, 100_000]:
        print(f"{scale} contacts: generating", file=sys.stderr, flush=True)
        r = measure(scale, args.progress)
        print(f"{scale:>7} contacts: {r['seconds']:.1f} s wall, {r['cpu']:.1f} s CPU, "
              f"{int(r['requests'])} requests ({r['requests'] / r['seconds']:.0f}/s), "
              f"{int(r['records'])} records, peak RSS {r['peak_rss_mib']:.0f} MiB; "
              f"at 120 requests/min: {r['requests'] / 120 / 60:.1f} h", flush=True)


if __name__ == "__main__":
    main()
