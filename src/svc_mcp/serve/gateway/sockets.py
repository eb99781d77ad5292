"""Where the gateway listens: a TCP socket or a Unix socket only its owner may open, bound before
the gateway says it serves and before it confines itself (the confined gateway binds nothing)."""

from __future__ import annotations

import contextlib
import os
import socket
import stat
from collections.abc import Iterator
from pathlib import Path


class PortUnavailable(Exception):
    """The gateway cannot listen where it was told (a port in use, a Unix socket path taken):
    `misconfigured`."""


@contextlib.contextmanager
def listening(host: str, port: int, uds: Path | None) -> Iterator[list[socket.socket]]:
    """The listening socket, bound before the gateway says it serves: host and port
    (`PortUnavailable` when taken), or the Unix socket, created 0600 before anyone can connect
    (uvicorn's own `uds` would make it 0666) and removed at the end."""
    if uds is None:
        bound = _listen(host, port)
        try:
            yield [bound]
        finally:
            bound.close()
        return
    path = uds
    _remove_stale_socket(path)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    previous = os.umask(0o177)
    try:
        listener.bind(str(path))
    except OSError as exc:
        listener.close()
        raise PortUnavailable(f"cannot serve on the Unix socket {path}: {exc.strerror}") from None
    finally:
        os.umask(previous)
    os.chmod(path, 0o600)
    listener.listen(128)
    try:
        yield [listener]
    finally:
        listener.close()
        # Confined, the gateway may not remove files; the next start removes a stale socket.
        with contextlib.suppress(FileNotFoundError, PermissionError):
            path.unlink()


def _remove_stale_socket(path: Path) -> None:
    """A socket file left by a gateway that is gone is removed; anything else is refused."""
    try:
        mode = path.lstat().st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISSOCK(mode):
        raise PortUnavailable(f"{path} exists and is not a Unix socket: choose another --uds path")
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.connect(str(path))
    except OSError:
        _remove_ours(path)
        return
    finally:
        probe.close()
    raise PortUnavailable(f"another server is listening on {path}: stop it or choose another path")


def _remove_ours(path: Path) -> None:
    """Removes a stale socket; one this user may not remove (another user's, in a shared
    sticky folder such as /tmp) is refused in one line."""
    try:
        path.unlink()
    except FileNotFoundError:
        return
    except OSError as exc:
        raise PortUnavailable(
            f"{path} is a socket this user can neither connect to nor remove ({exc.strerror}): "
            "another user's; choose another --uds path"
        ) from None


def _listen(host: str, port: int) -> socket.socket:
    """A socket bound to host:port, as uvicorn binds one; `PortUnavailable` when it cannot be."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    listening = socket.socket(family, socket.SOCK_STREAM)
    listening.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listening.bind((host, port))
    except OSError as exc:
        listening.close()
        raise PortUnavailable(
            f"cannot listen on {host} port {port} ({exc.strerror or exc}): another program may "
            "be using it; pass another --port, or stop that program"
        ) from None
    listening.set_inheritable(True)
    return listening
