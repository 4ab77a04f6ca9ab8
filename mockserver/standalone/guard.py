"""Browser-facing guards of the standalone server's own routes (the control API, the docs, the
inspector): the Host a request reached the server by, and the Origin of a browser's write.

As the trusted local dev servers do (Vite's `server.allowedHosts`, webpack-dev-server's
`allowedHosts`, Jupyter's `allow_origin` and host check):

- **Host** (DNS rebinding, DECISIONS H15): a page of `http://attacker.example` whose name is
  made to resolve to 127.0.0.1 reaches the mock with `Host: attacker.example`. Refused unless
  the Host names loopback (`localhost`, `*.localhost`, `127.0.0.1`, `[::1]`, any port), an
  address the server is bound to, or a name of `serve --allowed-host`. With a control token
  set, any Host (a rebinding page does not hold the token; a container is reached by its
  service name). Checked only where `Config.allowed_hosts` is set (`serve` always sets it):
  an app embedded in-process (a test client, the pytest plugin's server, whose app is called
  through ASGI transports under any base URL) is not Host-checked; Origin is checked everywhere.
- **Origin** (cross-site writes, DECISIONS H16): a browser sends `Origin` with every
  cross-origin write, even the "simple" `text/plain` POST that needs no preflight. A write
  (any method but GET, HEAD, OPTIONS) whose Origin is not the server's own origin (`null`
  included) is refused. Clients that are not browsers send no Origin and pass.

Neither applies to `/v1` (bearer tokens; the pipeline is not touched: no cost per request) nor to
`/__storage__/` (capability URLs, PUT by the application under test from its own origin).
Refusals are 403 `{"error"}` naming the header.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable
from typing import TYPE_CHECKING

from ..engine.errors import Forbidden
from .bind import is_loopback_address

if TYPE_CHECKING:
    from starlette.types import Scope

    from ..engine.app import Config

__all__ = ["allowed_host_names", "check_browser", "host_name", "may_create_sessions"]

_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


def host_name(host: str) -> str:
    """The name or address of a Host header value, without its port and brackets, lowercased."""
    host = host.strip().lower()
    if host.startswith("["):  # [v6]:port
        return host[1:].partition("]")[0]
    if host.count(":") == 1:
        return host.partition(":")[0]
    return host  # a name, an IPv4 address, or a bare IPv6 address


def allowed_host_names(config: Config) -> frozenset[str]:
    """The host names a request may name besides loopback ones: `--allowed-host` and the
    addresses the server is bound to."""
    names: set[str] = set()
    for entry in config.allowed_hosts or ():
        names.add(host_name(entry))
    bound: Iterable[str] = config.exposed or ()
    for address in bound:
        if not address.startswith("unix:"):
            names.add(host_name(address))
    names.add(host_name(config.host or ""))
    names.discard("")
    return frozenset(names)


def _loopback_name(name: str) -> bool:
    return (name == "localhost" or name.endswith(".localhost")
            or is_loopback_address(name))


def _header(scope: Scope, wanted: bytes) -> str | None:
    for key, value in scope["headers"]:
        if key == wanted:
            return str(value.decode("latin-1"))
    return None


_DEFAULT_PORTS = (("http://", ":80"), ("https://", ":443"))


def _origin(value: str) -> str:
    """An origin as browsers serialise it: lowercased, without the scheme's default port."""
    value = value.strip().lower()
    for scheme, port in _DEFAULT_PORTS:
        if value.startswith(scheme) and value.endswith(port):
            return value[: -len(port)]
    return value


def check_browser(config: Config, allowed: frozenset[str], scope: Scope) -> None:
    """Raise Forbidden (403 naming the header) for a Host the server does not answer to, or a
    browser's write from another origin."""
    host = _header(scope, b"host")
    if (config.allowed_hosts is not None and not config.control_token and host is not None):
        name = host_name(host)
        if not (_loopback_name(name) or name in allowed):
            raise Forbidden(
                f"header 'Host': {host[:100]!r} is not a name this server answers to "
                "(loopback names, the addresses it is bound to, or serve --allowed-host; "
                "a check against DNS rebinding)")
    if scope["method"] in _SAFE_METHODS:
        return
    origin = _header(scope, b"origin")
    if origin is None:
        return
    scheme = scope.get("scheme", "http")
    own = _origin(f"{scheme}://{host}") if host is not None else None
    if _origin(origin) != own:
        raise Forbidden(
            f"header 'Origin': {origin[:100]!r} is not this server's own origin; the mock's "
            "control API and pages refuse writes from other sites (send no Origin header "
            "from scripts, or use the pages the mock serves)")


def may_create_sessions(config: Config, scope: Scope) -> bool:
    """Whether a request naming an unknown session may create it (`--sessions-on-use`) when a
    control token is set: only with that token (`X-Mock-Control-Token`), so anonymous callers
    cannot exhaust `--max-sessions` (DECISIONS H17)."""
    expected = config.control_token or ""
    given = _header(scope, b"x-mock-control-token")
    return given is not None and secrets.compare_digest(given.encode(), expected.encode())
