"""`POST /__mock__/fixtures` safely (DECISIONS H18): which directories it may read, and the read
itself off the event loop within a time bound.

- With a control token set or off loopback, only directories under `serve --fixtures-root`
  (resolved, symlinks followed) are read; without a root configured there, none (403 naming
  `--fixtures-root`). A loopback server without a token reads anywhere (it is the developer's
  own machine), under the root when one is given.
- Files are read only when regular (data/fixtures.py `read_regular`: a FIFO named
  `contacts.yaml` answers 400 naming it instead of freezing the server) and within a size.
- The load (read, parse, validate) runs in a worker thread, abandoned after
  `LOAD_SECONDS` (408-like 400 naming the time: the dataset is left as it was).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread

from ..data.fixtures import FixtureError
from ..engine.errors import BadRequest, Forbidden

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from ..engine.app import MockApp

__all__ = ["LOAD_SECONDS", "allowed_paths", "load_off_loop"]

LOAD_SECONDS = 300.0  # a dataset of 100k contacts loads in well under a minute


def allowed_paths(mock: MockApp, paths: Sequence[str], exposed: bool) -> list[Path]:
    """The directories a request named, each checked against `--fixtures-root`."""
    config = mock.config
    root = config.fixtures_root
    if root is None:
        if config.control_token or exposed:
            raise Forbidden("body field 'path': this server loads fixtures only under its "
                            "--fixtures-root (it has a control token or listens off "
                            "loopback); start it with --fixtures-root DIR")
        return [Path(p) for p in paths]
    top = Path(root).resolve()
    checked = []
    for i, given in enumerate(paths):
        where = Path(given)
        resolved = (top / where if not where.is_absolute() else where).resolve()
        if resolved != top and top not in resolved.parents:
            field = "path" if len(paths) == 1 else f"paths/{i}"
            # The path given only (nothing read, nothing of its content echoed).
            raise Forbidden(f"body field '{field}': {str(given)[:200]!r} is not under the "
                            f"server's --fixtures-root")
        checked.append(resolved)
    return checked


async def load_off_loop(load: Callable[[], Any]) -> Any:
    """Run `load` in a worker thread, abandoned (and refused) after LOAD_SECONDS."""
    try:
        with anyio.fail_after(LOAD_SECONDS):
            return await anyio.to_thread.run_sync(load, abandon_on_cancel=True)
    except TimeoutError:
        raise BadRequest(f"fixtures not loaded: reading them took over {LOAD_SECONDS:.0f} "
                         "seconds; the dataset is unchanged") from None
    except FixtureError as exc:
        raise BadRequest(f"fixtures not loaded: {exc}") from None
    except OSError as exc:
        raise BadRequest(f"fixtures not loaded: {exc}") from None
