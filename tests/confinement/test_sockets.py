"""What Landlock cannot restrict, the socket filter does (issue 31, finding 11): no confined process
reaches a pathname Unix socket (an ssh-agent, `docker.sock`, the session bus) or sends a UDP
datagram, and the listener the test holds sees nothing arrive. UDP stays open only where a backend
is named by a host name (the resolver needs it). Without Landlock, no_new_privs and the filter
still apply. The probe confines itself with each process's own policy
(tests/confinement/probe.py)."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.confinement.test_write_forms import database_in, probe, run_probe

pytestmark = pytest.mark.e2e  # every test runs the probe in a process of its own


@pytest.fixture
def unix_listener(tmp_path: Path) -> Iterator[tuple[socket.socket, str]]:
    path = str(tmp_path / "agent.sock")
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as server:
        server.bind(path)
        server.listen()
        server.setblocking(False)
        yield server, path


@pytest.fixture
def udp_listener() -> Iterator[socket.socket]:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as server:
        server.bind(("127.0.0.1", 0))
        server.setblocking(False)
        yield server


def nothing_arrived(unix: socket.socket, udp: socket.socket) -> bool:
    for attempt in (unix.accept, lambda: udp.recvfrom(100)):
        try:
            attempt()
        except BlockingIOError:
            continue
        return False
    return True


def arguments(policy: str, tmp_path: Path, backend: int) -> tuple[str, ...]:
    if policy == "portal":
        data = tmp_path / "data"
        data.mkdir()
        return (str(data),)
    if policy == "service":
        folder = tmp_path / "db"
        folder.mkdir(mode=0o700)
        return (str(database_in(folder)),)
    return (str(backend),)


SETTINGS = {
    "portal": "SVC_STUB_CONFINEMENT",
    "service": "SVC_STUB_CONFINEMENT",
    "stdio": "SVC_MCP_CONFINEMENT",
    "gateway": "SVC_MCP_CONFINEMENT",
}


@pytest.mark.parametrize("policy", sorted(SETTINGS))
def test_no_confined_process_reaches_a_unix_socket_or_sends_udp(
    tmp_path: Path,
    unix_listener: tuple[socket.socket, str],
    udp_listener: socket.socket,
    policy: str,
) -> None:
    unix, path = unix_listener
    results = probe(
        tmp_path,
        policy,
        SETTINGS[policy],
        *arguments(policy, tmp_path, 9),
        SERVICE_API_BASE="http://127.0.0.1:9",
        SVC_TEST_UNIX_SOCKET=path,
        SVC_TEST_UDP_PORT=str(udp_listener.getsockname()[1]),
    )
    assert results["connect to a Unix socket"] == "EACCES", results
    assert results["send a UDP datagram"] == "EACCES", results
    assert nothing_arrived(unix, udp_listener)


def test_switched_off_both_arrive(
    tmp_path: Path, unix_listener: tuple[socket.socket, str], udp_listener: socket.socket
) -> None:
    """The attempts are real: unconfined, the listeners see them."""
    unix, path = unix_listener
    results = probe(
        tmp_path,
        "stdio",
        "SVC_MCP_CONFINEMENT",
        "9",
        SVC_MCP_CONFINEMENT="off",
        SVC_TEST_UNIX_SOCKET=path,
        SVC_TEST_UDP_PORT=str(udp_listener.getsockname()[1]),
    )
    assert results["connect to a Unix socket"] == results["send a UDP datagram"] == "ok"
    assert not nothing_arrived(unix, udp_listener)


def test_a_backend_named_by_a_host_name_keeps_udp_for_the_resolver(
    tmp_path: Path, unix_listener: tuple[socket.socket, str], udp_listener: socket.socket
) -> None:
    completed = run_probe(
        tmp_path,
        "stdio",
        "SVC_MCP_CONFINEMENT",
        "9",
        SERVICE_API_BASE="https://svc.example.com",
        SVC_TEST_UNIX_SOCKET=unix_listener[1],
        SVC_TEST_UDP_PORT=str(udp_listener.getsockname()[1]),
    )
    assert completed.returncode == 0, completed.stderr
    assert "new sockets: TCP and UDP (for the resolver)" in completed.stderr
    results = json.loads(completed.stdout)
    assert results["send a UDP datagram"] == "ok", results
    assert results["connect to a Unix socket"] == "EACCES", results


def test_without_landlock_no_new_privs_and_the_filter_still_apply(
    tmp_path: Path, unix_listener: tuple[socket.socket, str], udp_listener: socket.socket
) -> None:
    unix, path = unix_listener
    completed = run_probe(
        tmp_path,
        "stdio",
        "SVC_MCP_CONFINEMENT",
        "9",
        SVC_MCP_CONFINEMENT="auto",
        SVC_TEST_NO_LANDLOCK="1",
        SVC_TEST_UNIX_SOCKET=path,
        SVC_TEST_UDP_PORT=str(udp_listener.getsockname()[1]),
    )
    assert completed.returncode == 0, completed.stderr
    assert completed.stderr.strip() == (
        "svc-mcp: unconfined: the kernel has no Landlock (simulated by the probe); no_new_privs "
        "and the socket filter still apply (set SVC_MCP_CONFINEMENT=require to refuse instead)"
    )
    results = json.loads(completed.stdout)
    assert results["NoNewPrivs"] == "1", results
    assert results["Seccomp"] == "2", results  # a filter
    assert results["read canary"] == "ok", results  # no Landlock: files stay open
    assert results["connect to a Unix socket"] == results["send a UDP datagram"] == "EACCES"
    assert nothing_arrived(unix, udp_listener)


SOCKETS_UNDER_THE_FILTER = """
import ctypes, json, socket, sys
from svc_serving.socket_filter import NETLINK_SOCK_DIAG, install_socket_filter
ctypes.CDLL(None, use_errno=True).prctl(38, ctypes.c_ulong(1), None, None, None)  # no_new_privs
install_socket_filter(False, socket_owners=sys.argv[1] == "owners")
tries = {
    "sock_diag": (socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_SOCK_DIAG),
    "netlink_route": (socket.AF_NETLINK, socket.SOCK_RAW, 0),
    "unix": (socket.AF_UNIX, socket.SOCK_STREAM, 0),
    "tcp": (socket.AF_INET, socket.SOCK_STREAM, 0),
}
opened = {}
for name, args in tries.items():
    try:
        socket.socket(*args).close()
        opened[name] = True
    except PermissionError:
        opened[name] = False
print(json.dumps(opened))
"""


@pytest.mark.parametrize("owners", [True, False])
def test_only_the_data_service_may_ask_the_kernel_who_owns_a_socket(owners: bool) -> None:
    """The data service's guard asks netlink's sock_diag which local user owns a loopback peer;
    the filter lets exactly that protocol through for it, and no other netlink socket."""
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", SOCKETS_UNDER_THE_FILTER, "owners" if owners else "none"],
        capture_output=True,
        text=True,
        check=True,
    )
    opened = json.loads(done.stdout)
    assert opened == {"sock_diag": owners, "netlink_route": False, "unix": False, "tcp": True}
