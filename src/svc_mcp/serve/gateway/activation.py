"""Listening sockets handed over by systemd (socket activation, `svc-mcp-gateway.socket`).

systemd keeps the socket open while the gateway restarts, so a connection made in between waits
in its backlog instead of being refused. The handed-over sockets obey the gateway's bind rule: a
TCP address beyond loopback needs `--allow-remote` (and then a token), as `--host` would.
"""

from __future__ import annotations

import os
import socket

from svc_serving.loopback import is_loopback

FIRST_FD = 3
"""sd_listen_fds(3): the first socket passed is descriptor 3."""


def activated_sockets() -> list[socket.socket]:
    """The sockets systemd passed to this process (none when it passed none); the variables are
    removed so no child process takes them for its own."""
    if os.environ.get("LISTEN_PID") != str(os.getpid()):
        return []
    try:
        count = int(os.environ.get("LISTEN_FDS", "0"))
    except ValueError:
        count = 0
    for name in ("LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES"):
        os.environ.pop(name, None)
    return [socket.socket(fileno=fd) for fd in range(FIRST_FD, FIRST_FD + count)]


def beyond_loopback(sockets: list[socket.socket]) -> str | None:
    """The first TCP address among `sockets` that is not loopback, or None."""
    for sock in sockets:
        if sock.family in (socket.AF_INET, socket.AF_INET6):
            host = str(sock.getsockname()[0])
            if not is_loopback(host):
                return host
    return None
