"""The progress line: records, requests, 429s, reads queued, the time left and elapsed."""

from __future__ import annotations

from collections import deque
from types import SimpleNamespace
from typing import Any

import pytest

from mockserver.record.client import PacedClient
from mockserver.record.run import _progress


def test_the_progress_line_counts_and_estimates_the_time_left(
        capsys: pytest.CaptureFixture[str]) -> None:
    client = PacedClient(client=None, per_minute=120)  # type: ignore[arg-type]
    client.requests, client.retried_429, client.elapsed = 40, 3, 2.0
    walk: Any = SimpleNamespace(records=250, queue=deque(range(240)))
    _progress(0.0, client)(walk)
    line = capsys.readouterr().err
    # 240 reads queued at the paced 0.5 s each (slower than the 0.05 s measured): 2 minutes
    assert "250 records, 40 requests (3 after 429), 240 reads queued, ~2m00s left" in line
    unpaced = PacedClient(client=None, per_minute=0)  # type: ignore[arg-type]
    unpaced.requests, unpaced.elapsed = 100, 25.0
    _progress(0.0, unpaced)(walk)
    assert "~1m00s left" in capsys.readouterr().err  # 240 x 0.25 s measured
