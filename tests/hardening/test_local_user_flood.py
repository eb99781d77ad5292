"""One local user cannot take the operator's connections (security round five, finding 1), on each
of the three servers: two other local users (uids 4242 and 4243, played with setpriv) hold more
connections than the server takes in total, from 127.0.0.1 to 127.0.0.5, keep-alive ones that
send a tiny request every half second and ones that asked for a great deal and never read it,
and open new ones as theirs are closed. Each loopback user has a share of its own (the local user
that owns the client's socket, however many 127.x addresses it uses), and at a cap an idle
answered connection or one that does not read makes way: every one of the operator's calls (this
process, root), each on a new connection, is served."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.e2e import e2e_fixture
from tests.hardening.raw_http import SERVERS, closed_by_server, served_and_held, server_command
from tests.mcp.conftest import process_env
from tests.support import PORT, Server, running_server
from tests.support_other_user import python

PER_USER = 8
TOTAL = 12
HOSTILE_UIDS = (4242, 4243)
OPERATOR_CALLS = 20
LIMITS = {
    "SVC_HTTP_MAX_CONNECTIONS_PER_ADDRESS": str(PER_USER),
    "SVC_HTTP_MAX_CONNECTIONS": str(TOTAL),
    "SVC_HTTP_IDLE_TIMEOUT": "60",
}
HOSTILE = """
import socket, sys, time
port, path, count = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
ask = f"GET {path} HTTP/1.1\\r\\nHost: 127.0.0.1\\r\\n\\r\\n".encode()

def opened(n):
    sock = socket.create_connection(("127.0.0.1", port), timeout=2,
                                    source_address=(f"127.0.0.{1 + n % 5}", 0))
    sock.sendall(ask * (300 if n % 4 == 3 else 1))  # every fourth never reads its answers
    return sock

held = {}
for n in range(count):
    try:
        held[n] = opened(n)
    except OSError:
        pass
print("holding", len(held), flush=True)
while sys.stdin.readline():  # one line: one round
    for n in range(count):
        try:
            if n % 4 != 3:
                held[n].setblocking(False)
                try:
                    if held[n].recv(1 << 16) == b"":
                        raise OSError("closed")
                except BlockingIOError:
                    pass
                held[n].setblocking(True)
                held[n].sendall(ask)
        except (OSError, KeyError):
            try:
                held[n] = opened(n)
            except OSError:
                pass
    print("round", flush=True)
"""


@e2e_fixture(scope="module", params=SERVERS)
def server(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Server, str]]:
    kind: str = request.param
    root = tmp_path_factory.mktemp(kind)
    args, ready = server_command(kind, root)
    with running_server(
        [*args, "--port", PORT],
        log_path=root / "server.log",
        ready_path=ready,
        env=process_env(LIMITS),
    ) as started:
        yield started, ready


def hostile_user(uid: int, server: Server, path: str) -> subprocess.Popen[str]:
    port = server.base_url.rsplit(":", 1)[1]
    setpriv = ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups"]
    process = subprocess.Popen(
        [*setpriv, str(python()), "-I", "-c", HOSTILE, port, path, str(PER_USER + 4)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd="/",
        env={"PATH": "/usr/bin:/bin"},
    )
    assert process.stdout is not None
    assert process.stdout.readline().startswith("holding")
    return process


def round_of_requests(process: subprocess.Popen[str]) -> None:
    assert process.stdin is not None
    assert process.stdout is not None
    process.stdin.write("go\n")
    process.stdin.flush()
    assert process.stdout.readline() == "round\n"


def operator_status(server: Server, path: str) -> int | str:
    try:
        with httpx.Client(timeout=10) as client:
            return client.get(server.base_url + path).status_code
    except httpx.TransportError as error:
        return type(error).__name__


def test_other_local_users_cannot_take_the_operators_connections(
    server: tuple[Server, str], tmp_path: Path
) -> None:
    started, path = server
    hostile = [hostile_user(uid, started, path) for uid in HOSTILE_UIDS]
    try:
        statuses = []
        for _ in range(OPERATOR_CALLS):
            for process in hostile:
                round_of_requests(process)
            statuses.append(operator_status(started, path))
    finally:
        for process in hostile:
            assert process.stdin is not None
            process.stdin.close()
            process.wait(timeout=30)
    refused = [status for status in statuses if status == 503 or isinstance(status, str)]
    assert not refused, f"the operator was refused {len(refused)} of {OPERATOR_CALLS}: {statuses}"
    assert "connection(s) since the last such line" in started.log()


ONE_REQUEST = """
import socket, sys
sock = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10)
sock.sendall(f"GET {sys.argv[2]} HTTP/1.1\\r\\nHost: 127.0.0.1\\r\\nConnection: close\\r\\n\\r\\n".encode())
print(sock.recv(12).decode())
"""


def test_each_local_user_has_a_share_of_its_own(server: tuple[Server, str]) -> None:
    """The operator's idle connections fill the operator's share: another local user's new
    connections are counted in its own share and take none of them (the servers, confined, still
    ask the kernel who owns a loopback socket)."""
    started, path = server
    held = [served_and_held(started, "127.0.0.1", path) for _ in range(PER_USER)]
    try:
        port = started.base_url.rsplit(":", 1)[1]
        setpriv = ["setpriv", f"--reuid={HOSTILE_UIDS[0]}", f"--regid={HOSTILE_UIDS[0]}"]
        for _ in range(3):
            done = subprocess.run(
                [*setpriv, "--clear-groups", str(python()), "-I", "-c", ONE_REQUEST, port, path],
                capture_output=True,
                text=True,
                timeout=30,
                check=True,
                cwd="/",
            )
            assert done.stdout.startswith("HTTP/1.1 "), done.stdout
        assert not any(closed_by_server(sock, within=0.05)[0] for sock in held)
    finally:
        for sock in held:
            sock.close()
