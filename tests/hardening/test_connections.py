"""Half-open requests and connection floods against every server, over real sockets: a request
head not complete in time is closed, connections are capped per address and in total (the excess
answered 503 at once when no connection can make way for it: tests/hardening/test_admission.py),
one address cannot stop another from being served, and each server raises its soft file limit to
the hard one at start.

The servers run with a head timeout of 2 s and small caps (SVC_HTTP_*), and an idle timeout long
enough for the held connections to outlive a test; the tests never sleep for a window: they wait
on the server closing a socket, with a bound."""

from __future__ import annotations

import contextlib
import resource
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.e2e import e2e_fixture
from tests.hardening.conftest import wait_for
from tests.hardening.raw_http import (
    SERVERS,
    closed_by_server,
    connect,
    served_and_held,
    server_command,
)
from tests.mcp.conftest import process_env
from tests.support import Server, free_port, running_server
from tests.support_other_user import AS_OTHER_USER, python

HEAD_TIMEOUT = 2.0
PER_ADDRESS = 4
TOTAL = 6
LIMITS = {
    "SVC_HTTP_HEAD_TIMEOUT": str(HEAD_TIMEOUT),
    "SVC_HTTP_MAX_CONNECTIONS_PER_ADDRESS": str(PER_ADDRESS),
    "SVC_HTTP_MAX_CONNECTIONS": str(TOTAL),
    "SVC_HTTP_IDLE_TIMEOUT": "60",
}
LOWERED_SOFT_FILES = 1024


@contextlib.contextmanager
def lowered_file_limit() -> Iterator[None]:
    """Children started inside inherit a soft file limit below the hard one."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(soft, LOWERED_SOFT_FILES), hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


@e2e_fixture(scope="module", params=SERVERS)
def server(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Server, str]]:
    kind: str = request.param
    root = tmp_path_factory.mktemp(kind)
    port = free_port()
    args, ready = server_command(kind, root)
    with (
        lowered_file_limit(),
        running_server(
            [*args, "--port", str(port)],
            port=port,
            log_path=root / "server.log",
            ready_path=ready,
            env=process_env(LIMITS),
        ) as started,
    ):
        yield started, ready


def served_from(server: Server, path: str, source: str) -> int:
    transport = httpx.HTTPTransport(local_address=source)
    with httpx.Client(transport=transport, timeout=5) as client:
        return client.get(server.base_url + path).status_code


def test_a_head_that_never_ends_is_closed(server: tuple[Server, str]) -> None:
    started, _ = server
    with connect(started, "127.0.0.11") as sock:
        sock.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
        begun = time.monotonic()
        closed, _ = closed_by_server(sock, within=HEAD_TIMEOUT + 8)
        assert closed, "a half-sent request head kept its connection"
        assert time.monotonic() - begun < HEAD_TIMEOUT + 5
    with connect(started, "127.0.0.12") as silent:
        closed, _ = closed_by_server(silent, within=HEAD_TIMEOUT + 8)
        assert closed, "a connection that never sent a byte was kept"


def test_answered_connections_make_way_for_a_new_one(server: tuple[Server, str]) -> None:
    """Issue 44.1: keep-alive connections between requests are closed, oldest first, to admit a
    new one at the cap (as nginx does); the whole loopback range is one key per local user."""
    started, ready = server
    held = [served_and_held(started, f"127.0.0.{21 + n}", ready) for n in range(PER_ADDRESS)]
    try:
        # The same user from yet another loopback address: one key, at its cap, and served.
        assert served_from(started, ready, "127.0.0.29") != 503
        closed, _ = closed_by_server(held[0], within=HEAD_TIMEOUT)
        assert closed, "the oldest idle connection did not make way"
        assert not closed_by_server(held[-1], within=0.2)[0], "a newer idle one was closed"
    finally:
        for sock in held:
            sock.close()
    wait_for(lambda: _served(started, ready, "127.0.0.25"), timeout=10)
    # A flood of refused connections is not a flood of log lines: one line a minute at most.
    assert started.log().count("connection(s) since the last such line") == 1


def test_a_half_sent_head_makes_way_first(server: tuple[Server, str]) -> None:
    """A connection whose request head is still arriving is the first to make way; only when
    every connection of the key has a request under way is the newcomer answered 503."""
    started, _ = server
    busy = [connect(started, "127.0.0.31") for _ in range(PER_ADDRESS)]
    try:
        for sock in busy:  # half a head each: not yet a request, so these make way
            sock.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        with connect(started, "127.0.0.32") as newcomer:
            closed, answer = closed_by_server(busy[0], within=HEAD_TIMEOUT / 2)
            assert closed, "the oldest half-sent head did not make way"
            assert answer.startswith(b"HTTP/1.1 503 "), answer
            assert b"too_many_connections" in answer
            newcomer.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n")
    finally:
        for sock in busy:
            sock.close()


HOLD = """
import socket, sys, time
port, path, count = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
request = f"GET {path} HTTP/1.1\\r\\nHost: 127.0.0.1\\r\\n\\r\\n".encode()
held = []
for n in range(count):
    try:
        sock = socket.create_connection(("127.0.0.1", port), 5, (f"127.0.0.{2 + n % 4}", 0))
        sock.sendall(request)
        held.append(sock)  # the answer is never read: it waits in the socket's buffer
    except OSError:
        pass
print(len(held), flush=True)
end = time.monotonic() + float(sys.argv[4])
while time.monotonic() < end:  # one tiny request on each, again and again: never idle long
    for sock in held:
        try:
            sock.sendall(request)
        except OSError:
            pass
    time.sleep(0.2)
"""


def test_another_local_user_cannot_take_the_operators_connections(
    server: tuple[Server, str], tmp_path: Path
) -> None:
    """Issue 44.1: another local user (uid 4242) without a credential opens three times the
    server's connection total over 127.0.0.2-5 and keeps each busy with small requests whose
    answers it never reads; every one of the operator's calls is still served."""
    started, ready = server
    port = started.base_url.rsplit(":", 1)[1]
    home = tmp_path / "other"
    home.mkdir()
    attacker = subprocess.Popen(
        [*AS_OTHER_USER, str(python()), "-I", "-c", HOLD, port, ready, str(3 * TOTAL), "20"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=home,
        env={"PATH": "/usr/bin:/bin", "HOME": str(home)},
    )
    try:
        assert attacker.stdout is not None
        assert int(attacker.stdout.readline()) > PER_ADDRESS, attacker.stderr
        statuses = [_status(started, ready, "127.0.0.1") for _ in range(12)]
    finally:
        attacker.kill()
        attacker.communicate()
    assert all(status not in (503, None) for status in statuses), statuses


def _status(server: Server, path: str, source: str) -> int | None:
    try:
        return served_from(server, path, source)
    except httpx.TransportError:
        return None


def _served(server: Server, path: str, source: str) -> bool:
    try:
        return served_from(server, path, source) != 503
    except httpx.TransportError:
        return False


def test_the_soft_file_limit_is_raised_to_the_hard_one(server: tuple[Server, str]) -> None:
    started, _ = server
    limits = Path(f"/proc/{started.process.pid}/limits").read_text()
    line = next(row for row in limits.splitlines() if row.startswith("Max open files"))
    soft, hard = line.split()[3:5]
    assert soft == hard
    assert int(soft) > LOWERED_SOFT_FILES or soft == "unlimited"


@pytest.mark.parametrize("header", ["Host", "Authorization"])
def test_a_repeated_host_or_authorization_is_refused(
    server: tuple[Server, str], header: str
) -> None:
    """Which of two would count is a guess the next hop may make the other way."""
    started, ready = server
    lines = [f"GET {ready} HTTP/1.1", "Host: 127.0.0.1", "Connection: close"]
    lines += [f"{header}: {value}" for value in ("Bearer first-0123456789", "Bearer second-987")]
    if header == "Host":
        lines[-2:] = ["Host: evil.example"]
    with connect(started, "127.0.0.31") as sock:
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        closed, answer = closed_by_server(sock, within=5)
    assert closed
    assert answer.startswith(b"HTTP/1.1 400 ")
    assert f"the {header} header is repeated".encode() in answer
