"""HTTP/1.1 over raw sockets on loopback, for the tests that attack connections: what a client
sends byte by byte, and whether (and when) the server closes."""

from __future__ import annotations

import socket
from pathlib import Path

from tests import support_stub_data as stub_data
from tests.support import Server


def connect(server: Server, source: str) -> socket.socket:
    port = int(server.base_url.rsplit(":", 1)[1])
    return socket.create_connection(("127.0.0.1", port), timeout=10, source_address=(source, 0))


def closed_by_server(sock: socket.socket, *, within: float) -> tuple[bool, bytes]:
    """Whether the server closed `sock` within `within` seconds, and what it sent first."""
    sock.settimeout(within)
    received = b""
    try:
        while chunk := sock.recv(4096):
            received += chunk
    except TimeoutError:
        return False, received
    except ConnectionResetError:
        pass
    return True, received


def read_response(sock: socket.socket) -> bytes:
    """One whole response with a Content-Length (the servers' answers all have one), read off
    `sock`, which stays open."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(4096)
        assert chunk, f"the server closed before a whole response head: {data!r}"
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = next(
        int(line.split(b":", 1)[1])
        for line in head.split(b"\r\n")[1:]
        if line.lower().startswith(b"content-length:")
    )
    while len(body) < length:
        chunk = sock.recv(4096)
        assert chunk, "the server closed before a whole response body"
        body += chunk
    return head + b"\r\n\r\n" + body


def request_head(method: str, path: str, *lines: str) -> bytes:
    return "\r\n".join([f"{method} {path} HTTP/1.1", "Host: 127.0.0.1", *lines, "", ""]).encode()


def served_and_held(server: Server, source: str, path: str) -> socket.socket:
    """A connection from `source` that has had one request answered and stays open (keep-alive)."""
    sock = connect(server, source)
    sock.sendall(request_head("GET", path))
    assert read_response(sock).startswith(b"HTTP/1.1 ")
    return sock


SERVERS = ("portal", "service", "gateway")
"""The three servers the connection defences guard, each started by `server_command`."""


def server_command(kind: str, root: Path) -> tuple[list[str], str]:
    """The arguments that start `kind` (with its demo data made in `root`) without its port, and
    the path that answers once it is ready."""
    if kind == "portal":
        data = root / "data"
        stub_data.portal_folder(data)
        return ["-m", "server_stub", "portal", "--data", str(data)], "/api/page"
    if kind == "service":
        db = root / "service.db"
        stub_data.service_db(db)
        return ["-m", "server_stub", "service", "--db", str(db)], "/health/live"
    return ["-m", "svc_mcp", "--http", "--no-auth"], "/mcp"
