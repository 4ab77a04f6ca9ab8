"""The sockets `serve` listens on, bound before the server starts, and whether any of them
can be reached from off this host.

Whether the mock is exposed is decided on the bound sockets, not on the `--host` string:
`''` binds every interface (0.0.0.0 and ::), `localhost` may resolve to several addresses,
and a Unix socket can be shared into a container. Off loopback means any socket that is not
bound to a loopback address; the control API then requires `--control-token` (control.py).
"""

from __future__ import annotations

import ipaddress
import socket

__all__ = ["bind_sockets", "exposed_addresses", "is_loopback_address"]


def bind_sockets(host: str, port: int) -> list[socket.socket]:
    """Bound (not yet listening) TCP sockets for `host`, as asyncio's create_server binds them
    (every address the name resolves to; `''` is every interface). OSError when one fails."""
    infos = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM,
                               flags=socket.AI_PASSIVE)
    sockets: list[socket.socket] = []
    try:
        for family, kind, proto, _, address in dict.fromkeys(infos):
            sock = socket.socket(family, kind, proto)
            sockets.append(sock)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            sock.bind(address)
            if port == 0:  # the other families take the port the first one got
                port = sock.getsockname()[1]
            sock.set_inheritable(True)  # --workers processes listen on them too
    except OSError:
        for sock in sockets:
            sock.close()
        raise
    return sockets


def is_loopback_address(address: str) -> bool:
    """A loopback IP address (an IPv4-mapped IPv6 one included)."""
    try:
        ip = ipaddress.ip_address(address.split("%")[0])
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_loopback


def exposed_addresses(sockets: list[socket.socket]) -> list[str]:
    """The bound addresses of `sockets` that are not loopback (a Unix socket's path counts:
    it can be shared outside the host's loopback, into a container)."""
    exposed = []
    for sock in sockets:
        name = sock.getsockname()
        if sock.family == socket.AF_UNIX:
            exposed.append(f"unix:{name}")
        elif not is_loopback_address(name[0]):
            exposed.append(f"[{name[0]}]:{name[1]}" if sock.family == socket.AF_INET6
                           else f"{name[0]}:{name[1]}")
    return exposed
