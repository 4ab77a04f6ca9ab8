"""Generated datasets the benches share: `fixtures generate --scale N --seed 0`, written once
into /tmp/mockserver-bench-N and reused by later runs (generating 100k contacts takes a while)."""

from __future__ import annotations

import tempfile
from pathlib import Path

from mockserver.data.generate import generate


def dataset(scale: int) -> Path:
    """The directory of the generated dataset of `scale` contacts (generated if missing)."""
    out = Path(tempfile.gettempdir()) / f"mockserver-bench-{scale}"
    if not (out / "contacts.json").exists():
        print(f"  generating {scale} contacts into {out} ...", flush=True)
        generate(scale, 0, out)
    return out
