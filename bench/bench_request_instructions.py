"""Instructions per request of the uncached list request (the one bench_throughput.py sends),
in-process, counted by valgrind's callgrind: steady on a machine shared with other work,
where microseconds are not. Run it twice and take the difference, so that start-up cancels:

    valgrind --tool=callgrind --callgrind-out-file=/dev/null python bench/bench_request_instructions.py 2000
    valgrind --tool=callgrind --callgrind-out-file=/dev/null python bench/bench_request_instructions.py 4000

(I refs of the second run minus the first) / 2000 = instructions per request. JOURNAL=0 turns
the journal off, CACHE=256 turns the response cache on (`apt-get install valgrind`).
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from bench_request_cpu import SCOPE, _receive

from mockserver.engine.app import Config, MockApp
from mockserver.standalone.server import create_app


async def _send(message: dict[str, Any]) -> None:
    pass


def main() -> None:
    mock = MockApp(Config(response_cache=int(os.environ.get("CACHE", "0")),
                          journal_size=int(os.environ.get("JOURNAL", "1000")),
                          rate_limit=100_000_000, request_log=False))
    app = create_app(mock=mock)

    async def run(n: int) -> None:
        for _ in range(n):
            await app(dict(SCOPE), _receive, _send)

    asyncio.run(run(int(sys.argv[1]) if len(sys.argv) > 1 else 2000))


if __name__ == "__main__":
    main()
