"""Time the conformance gate against the mock, served in-process (rate limits off).

    python bench/conform_gate.py                 # full gate: all phases, writes, all tokens
    python bench/conform_gate.py --max-examples 10 --phases examples,fuzzing

Extra arguments go to `python -m mockserver conform`. Prints the gate's summary and the time.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mockserver.conform.cli import main
from mockserver.engine.app import Config, MockApp
from mockserver.standalone.server import create_app
from tests.conform.serve import serve


def bench(extra: list[str]) -> int:
    mock = MockApp(Config(rate_limit=0))
    with serve(create_app(mock=mock)) as url:
        started = time.monotonic()
        code = main(["--base-url", url, "--token", "mock-write-token",
                     "--read-token", "mock-read-token", "--foreign-token", "mock-other-token",
                     "--workspace", "ws_harborview", "--allow-writes", "--max-examples", "5",
                     "--seed", "1", "--rate", "0", "--quiet", *extra])
        took = time.monotonic() - started
    print(f"exit {code}; the gate took {took:.1f}s", file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(bench(sys.argv[1:]))
