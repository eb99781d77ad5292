"""`svc_serving.peer_owner` on real loopback sockets: the uid that owns the other end, asked of
the kernel, and None (never a guess, never root) when it cannot be known."""

from __future__ import annotations

import os
import pwd
import socket
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from svc_serving.loopback import is_loopback
from svc_serving.peer_owner import Unknown, loopback_owner, peer_owner
from svc_serving.subordinate_uids import SUBUID_VARIABLE, load, parse
from tests.support import ROOT
from tests.support_other_user import python

OTHER_UID = 4242
HOLD = (
    "import socket, sys; c = socket.create_connection((sys.argv[1], int(sys.argv[2]))); c.recv(1)"
)


@contextmanager
def accepted_from(
    family: socket.AddressFamily, host: str, *, uid: int | None = None
) -> Iterator[socket.socket]:
    """Our end of a connection another process (as `uid`) holds open until we close ours."""
    with socket.socket(family) as server:
        server.bind((host, 0))
        server.listen()
        prefix = ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups"] if uid else []
        port = str(server.getsockname()[1])
        client = subprocess.Popen([*prefix, str(python()), "-I", "-c", HOLD, host, port], cwd="/")
        try:
            accepted, _ = server.accept()
            with accepted:
                yield accepted
        finally:
            client.wait(timeout=30)


def ends(sock: socket.socket) -> tuple[tuple[str, int], tuple[str, int]]:
    peer, local = sock.getpeername(), sock.getsockname()
    return (peer[0], peer[1]), (local[0], local[1])


@pytest.mark.e2e
@pytest.mark.parametrize(
    ("family", "host"), [(socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1")]
)
def test_the_owner_of_the_peer_socket_is_named(family: socket.AddressFamily, host: str) -> None:
    with accepted_from(family, host, uid=OTHER_UID) as ours:
        assert loopback_owner(*ends(ours)) == OTHER_UID
    with accepted_from(family, host) as ours:
        assert loopback_owner(*ends(ours)) == os.getuid()


@pytest.mark.e2e
def test_an_ipv4_client_of_a_dual_stack_listener_is_found() -> None:
    with socket.socket(socket.AF_INET6) as server:
        server.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        server.bind(("::", 0))
        server.listen()
        port = str(server.getsockname()[1])
        command = ["setpriv", f"--reuid={OTHER_UID}", f"--regid={OTHER_UID}", "--clear-groups"]
        client = subprocess.Popen(
            [*command, str(python()), "-I", "-c", HOLD, "127.0.0.3", port], cwd="/"
        )
        accepted, _ = server.accept()
        with accepted:
            peer, local = ends(accepted)
            assert peer[0].startswith("::ffff:127.")
            assert local[0] == "::ffff:127.0.0.3"
            assert loopback_owner(peer, local) == OTHER_UID
        client.wait(timeout=30)


def test_a_closed_peer_is_nobody_not_root() -> None:
    """The client's TIME_WAIT entry reports uid 0; it must not read as root."""
    with socket.create_server(("127.0.0.1", 0)) as server:
        client = socket.create_connection(server.getsockname())
        accepted, _ = server.accept()
        with accepted:
            peer, local = ends(accepted)
            client.close()  # the client closes first: its end waits in TIME_WAIT
            accepted.recv(1)
            accepted.close()
            assert loopback_owner(peer, local) is None


@pytest.mark.e2e
def test_in_a_user_namespace_of_its_own_an_unmapped_owner_is_nobody() -> None:
    with accepted_from(socket.AF_INET, "127.0.0.1", uid=OTHER_UID) as ours:
        peer, local = ends(ours)
        probe = (
            f"import sys; sys.path.insert(0, {str(ROOT / 'src')!r}); "
            "from svc_serving.peer_owner import loopback_owner; "
            f"print(loopback_owner({peer!r}, {local!r}))"
        )
        namespace = ["unshare", "--user", "--map-user=1000", "--map-group=1000"]
        done = subprocess.run(
            [*namespace, str(python()), "-I", "-c", probe],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
    assert done.stdout.strip() == "None"


def test_only_loopback_peers_are_looked_up() -> None:
    assert loopback_owner(("192.0.2.1", 40000), ("127.0.0.1", 8080)) is None
    assert loopback_owner(("127.0.0.1", 40000), ("192.0.2.1", 8080)) is None
    assert loopback_owner(("127.0.0.1", 1), ("127.0.0.1", 1)) is None  # no such connection
    for host in ("127.0.0.1", "127.255.0.9", "::1", "::ffff:127.0.0.2", "[::1]"):
        assert is_loopback(host)
    for host in ("10.0.0.1", "::ffff:10.0.0.1", "2001:db8::1", "", "::"):
        assert not is_loopback(host)


def test_a_peer_that_closed_while_we_still_read_is_gone_not_root() -> None:
    """Issue 44.13: the client closes, we do not: its end lingers in FIN-WAIT-2, which the kernel
    reports with uid 0 and inode 0 (state FIN-WAIT-2, not TIME_WAIT)."""
    with socket.create_server(("127.0.0.1", 0)) as server:
        client = socket.create_connection(server.getsockname())
        accepted, _ = server.accept()
        with accepted:
            peer, local = ends(accepted)
            client.close()
            assert accepted.recv(1) == b""  # our end has its FIN: the client's waits in FIN-WAIT-2
            assert peer_owner(peer, local) is Unknown.GONE
            assert loopback_owner(peer, local) is None


def test_a_subordinate_uid_counts_as_its_owner(tmp_path: Path) -> None:
    """Issue 44.16: one person's 65,536 subordinate uids are that person."""
    owners = parse("nobody:100000:65536\n1000:200000:65536\nbroken line\nno-such-user:1:2\n")
    assert owners.owner(100000) == owners.owner(165535) == pwd.getpwnam("nobody").pw_uid
    assert owners.owner(234567) == 1000
    assert owners.owner(165536) == 165536
    assert owners.owner(0) == 0
    assert owners.owner(1) == 1  # the unknown owner's line folds nothing
    missing = load({SUBUID_VARIABLE: str(tmp_path / "absent")})
    assert missing.owner(100000) == 100000
