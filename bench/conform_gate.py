"""Time the conformance gate against the mock, served in-process (rate limits off).

    python bench/conform_gate.py                 # full gate: all phases, writes, all tokens
    python bench/conform_gate.py --max-examples 10 --phases examples,fuzzing
    python bench/conform_gate.py --read-only     # the README's command: reads, default examples

Extra arguments go to `python -m mockserver conform`. Prints the gate's summary (with the
requests it sent, per family), the time, and how long the same requests take at the default
pace of a real service (1.8 requests/s).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mockserver.conform.cli import main
from mockserver.conform.client import DEFAULT_RATE
from mockserver.engine.app import Config, MockApp
from mockserver.standalone.server import create_app
from tests.conform.serve import serve


def bench(extra: list[str]) -> int:
    read_only = "--read-only" in extra
    extra = [arg for arg in extra if arg != "--read-only"]
    mode = [] if read_only else ["--allow-writes", "--max-examples", "5"]
    mock = MockApp(Config(rate_limit=0))
    report = Path("/tmp") / f"conform-bench-{time.time_ns()}.json"
    with serve(create_app(mock=mock)) as url:
        started = time.monotonic()
        code = main(["--base-url", url, "--token", "mock-write-token",
                     "--read-token", "mock-read-token", "--foreign-token", "mock-other-token",
                     "--workspace", "ws_harborview", *mode,
                     "--seed", "1", "--rate", "0", "--quiet", "--report", f"json:{report}",
                     *extra])
        took = time.monotonic() - started
    sent = json.loads(report.read_text())["requests"]
    report.unlink()
    paced = sent / DEFAULT_RATE
    print(f"exit {code}; the gate took {took:.1f}s for {sent} requests "
          f"({took / max(sent, 1) * 1000:.1f} ms each); at the default pace of "
          f"{DEFAULT_RATE} requests/s the same requests take {paced / 60:.0f} min", file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(bench(sys.argv[1:]))
