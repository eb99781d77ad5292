"""The ways around Landlock's TCP connect rule are closed (issue 44, finding 11): an MPTCP socket
(Landlock's TCP rights do not apply to it, and it falls back to TCP against any server) can neither
connect to a port the process may not reach nor listen, and TCP fast open (`MSG_FASTOPEN`, which
connects inside `sendto`/`sendmsg`, where no LSM hook looks) is refused. The listener the test holds
sees nothing arrive, while a plain connect to a port the policy allows still works. Each probe
confines itself with a process's own policy (tests/confinement/probe.py)."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.confinement.test_sockets import SETTINGS, arguments
from tests.confinement.test_write_forms import probe

pytestmark = pytest.mark.e2e  # every test runs the probe in a process of its own

SIDE_DOORS = ("MPTCP connect", "MPTCP listen", "fast open sendto", "fast open sendmsg")


def listener() -> socket.socket:
    server = socket.create_server(("127.0.0.1", 0))
    server.setblocking(False)
    return server


@pytest.fixture
def forbidden() -> Iterator[socket.socket]:
    with listener() as server:
        yield server


@pytest.fixture
def allowed() -> Iterator[socket.socket]:
    with listener() as server:
        yield server


def arrivals(server: socket.socket) -> int:
    count = 0
    while True:
        try:
            connection, _ = server.accept()
        except BlockingIOError:
            return count
        connection.close()
        count += 1


def allowing(policy: str, port: int) -> dict[str, str]:
    """The setting that lets `policy` connect to `port`: a backend, or the stubs' OTLP endpoint."""
    url = f"http://127.0.0.1:{port}"
    if policy in ("stdio", "gateway"):
        return {"SERVICE_API_BASE": url}
    return {"OTEL_EXPORTER_OTLP_ENDPOINT": url}


@pytest.mark.parametrize("policy", sorted(SETTINGS))
def test_no_confined_process_connects_or_listens_around_the_tcp_rule(
    tmp_path: Path,
    forbidden: socket.socket,
    allowed: socket.socket,
    policy: str,
) -> None:
    allowed_port = allowed.getsockname()[1]
    results = probe(
        tmp_path,
        policy,
        SETTINGS[policy],
        *arguments(policy, tmp_path, allowed_port),
        SVC_TEST_SIDE_DOOR_PORT=str(forbidden.getsockname()[1]),
        SVC_TEST_ALLOWED_PORT=str(allowed_port),
        **allowing(policy, allowed_port),
    )
    assert {door: results[door] for door in SIDE_DOORS} == dict.fromkeys(SIDE_DOORS, "EACCES")
    assert results["connect elsewhere"] == "EACCES", results
    assert results["connect to an allowed port"] == "ok", results
    assert arrivals(forbidden) == 0
    assert arrivals(allowed) >= 1


def test_switched_off_each_side_door_arrives(tmp_path: Path, forbidden: socket.socket) -> None:
    """The attempts are real on this kernel: unconfined, MPTCP connects and listens, and both fast
    open sends connect (a new connection each)."""
    results = probe(
        tmp_path,
        "stdio",
        "SVC_MCP_CONFINEMENT",
        "9",
        SVC_MCP_CONFINEMENT="off",
        SVC_TEST_SIDE_DOOR_PORT=str(forbidden.getsockname()[1]),
    )
    assert {door: results[door] for door in SIDE_DOORS} == dict.fromkeys(SIDE_DOORS, "ok")
    assert arrivals(forbidden) == 3
