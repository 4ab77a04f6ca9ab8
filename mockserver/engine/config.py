"""`Config`: how the pipeline runs and a mock starts (`serve`'s options, the plugin's, the
benches'). `from mockserver.engine.app import Config` still works (app.py re-exports it)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from .journal import MAX_JOURNAL_BYTES
from .toolexec import LIMITS, Limits

__all__ = ["Config"]


@dataclass
class Config:
    """How the pipeline runs and a mock starts. What changes at run time lives in `MockState`
    (`rate_limit`, `seed` and `frozen_clock` here are only its initial settings)."""

    fixtures: list[Path] = field(default_factory=list)  # empty: the default fixtures
    seed: int = 0
    rate_limit: int = 120  # requests per minute per workspace; 0 turns limits off
    # apply the fixtures' per-workspace plan limits (`_rate_limit_per_minute`) over rate_limit;
    # `serve --rate-limit N` turns them off: N is then every workspace's limit
    workspace_limits: bool = True
    self_check: bool = False
    frozen_clock: str | None = None  # an ISO instant: start frozen there (tests)
    max_body_bytes: int = 1_048_576
    spec_path: str | None = None
    cursor_secret: bytes | None = None
    # Keys upload URLs, storage ids and file URLs' signatures (storage.py): random per server
    # unless pinned here (then the same seed and writes give the same URLs again).
    storage_secret: str | None = None
    base_url: str = "http://127.0.0.1:8080"
    # -- standalone features (control API, journal, faults, logging, docs) ------------------
    host: str = "127.0.0.1"  # the bound address: off loopback, control needs control_token
    # The bound sockets' addresses that are not loopback (serve sets them once bound; a
    # Unix socket counts): any, and control needs control_token. None: judged by `host`.
    exposed: tuple[str, ...] | None = None
    control_token: str | None = None  # X-Mock-Control-Token for /__mock__/ routes
    # The Host names the control API and the pages answer besides loopback and the bound
    # addresses (`serve --allowed-host`; standalone/guard.py). None: no Host check (an app
    # embedded in-process, the plugin's server); `serve` sets a tuple (DECISIONS H15).
    allowed_hosts: tuple[str, ...] | None = None
    # The directory POST /__mock__/fixtures reads under (`serve --fixtures-root`); None:
    # anywhere on a loopback-only server without a control token, nowhere otherwise (H18).
    fixtures_root: str | None = None
    journal_size: int = 1000  # requests kept for GET /__mock__/requests; 0 turns it off
    journal_bytes: int = MAX_JOURNAL_BYTES  # and at most this many bytes of them in all
    request_log: bool = True  # one line per request on "mockserver.requests" (when enabled)
    prefer_header: bool = True  # `Prefer: code=404` answers that documented response
    response_cache: int = 256  # answers of repeated reads kept (cache.py); 0 turns it off
    # Unknown query parameters: ignored and reported (journal, request log) by default, as
    # the real service ignores them (decision B10); strict refuses them with 400.
    strict_params: bool = False
    # -- custom tools' code (toolexec.py; DECISIONS T10-T12) ------------------------------------
    run_tool_code: bool = False  # run it (serve --run-tool-code); off: deterministic answers
    tool_code_dir: Path | None = None  # <name>.py / <name>.js, read on every run
    tool_limits: Limits = LIMITS
    # -- sessions (sessions.py) ---------------------------------------------------------------
    max_sessions: int = 10_000  # sessions at once (the default session not counted)
    max_session_memory: int = 512 * 1024 * 1024  # bytes the sessions' changes may hold
    session_idle_seconds: float = 3600.0  # a session without requests this long is deleted
    sessions_on_use: bool = False  # a request naming an unknown session creates it
    # -- shared state (shared.py): several workers and processes as one mock ------------------
    state: str | None = None  # redis://HOST:PORT/DB; None: in memory, this process only
    state_namespace: str = "mock"  # mocks sharing one Redis are apart by namespace
