"""`POST /__mock__/fixtures` safely (DECISIONS H18): which directories it may read, and the read
itself off the event loop within a time bound.

- With a control token set or off loopback, only directories under `serve --fixtures-root`
  (resolved, symlinks followed) are read; without a root configured there, none (403 naming
  `--fixtures-root`). A loopback server without a token reads anywhere (it is the developer's
  own machine), under the root when one is given.
- Files are read only when regular (data/fixtures.py `read_regular`: a FIFO named
  `contacts.yaml` answers 400 naming it instead of freezing the server) and within a size.
- The control route runs the handler off the event loop (`blocking`, `off_loop`); the load
  (read, parse, validate) runs in a worker thread waited for at most `LOAD_SECONDS` (400
  naming the time, the dataset left as it was: a late result is never applied).
"""

from __future__ import annotations

import concurrent.futures
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio.to_thread

from ..data.fixtures import FixtureError
from ..engine.errors import BadRequest, Forbidden

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from ..engine.app import MockApp

__all__ = ["LOAD_SECONDS", "allowed_paths", "blocking", "off_loop", "read_bounded"]

LOAD_SECONDS = 300.0  # a dataset of 100k contacts loads in well under a minute
# The threads fixture reads run in (one at a time: a load abandoned past its time keeps one).
_POOL = concurrent.futures.ThreadPoolExecutor(max_workers=2, thread_name_prefix="fixtures")


def allowed_paths(mock: MockApp, paths: Sequence[str]) -> list[Path]:
    """The directories a request named, each checked against `--fixtures-root`."""
    from .control import exposed as exposed_on  # (control.py imports the handlers' module)

    config = mock.config
    exposed = bool(exposed_on(mock))
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


def read_bounded(load: Callable[[], Any]) -> Any:
    """`load`'s result, read in a worker thread of its own and waited for at most
    LOAD_SECONDS (400 past it: the thread's result is then dropped, never applied). The
    caller is off the event loop (the control route runs this handler in a thread)."""
    future = _POOL.submit(load)
    try:
        return future.result(timeout=LOAD_SECONDS)
    except concurrent.futures.TimeoutError:
        raise BadRequest(f"fixtures not loaded: reading them took over {LOAD_SECONDS:g} "
                         "seconds; the dataset is unchanged") from None
    except (FixtureError, OSError) as exc:
        raise BadRequest(f"fixtures not loaded: {exc}") from None


async def off_loop(func: Callable[..., Any], *args: Any) -> Any:
    """Run a blocking control handler (`BLOCKING`) in a worker thread: the event loop, and
    every other session, go on meanwhile."""
    return await anyio.to_thread.run_sync(func, *args)


def blocking(handler: Callable[..., Any]) -> Callable[..., Any]:
    """Mark a control handler that reads files: the route runs it off the event loop."""
    vars(handler)["blocking"] = True  # read by control.py's route (getattr)
    return handler
