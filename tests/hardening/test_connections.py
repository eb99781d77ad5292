"""Half-open requests and connection floods against every server, over real sockets: a request
head not complete in time is closed, connections are capped per address (on loopback per local
user) and in total, an idle connection makes way at a cap (the excess answered 503 at once when
no connection can make way for it: tests/hardening/test_admission.py; other local users:
tests/hardening/test_local_user_flood.py), and each server raises its soft file limit to the hard
one at start.

The servers run with a head timeout of 2 s and small caps (SVC_HTTP_*), and an idle timeout long
enough for the held connections to outlive a test; the tests never sleep for a window: they wait
on the server closing a socket, with a bound."""

from __future__ import annotations

import contextlib
import resource
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.e2e import e2e_fixture
from tests.hardening.raw_http import (
    SERVERS,
    closed_by_server,
    connect,
    served_and_held,
    server_command,
)
from tests.mcp.conftest import process_env
from tests.support import PORT, Server, running_server

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
    args, ready = server_command(kind, root)
    with (
        lowered_file_limit(),
        running_server(
            [*args, "--port", PORT],
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


def test_at_a_cap_the_longest_idle_connection_makes_way(server: tuple[Server, str]) -> None:
    """Loopback connections count under the local user that owns them, whatever their 127.x
    address; answered keep-alive connections make way for a new one, the longest idle first,
    closed without a word (issue 44.1). That a connection being answered never makes way, and the
    503 when none can: tests/hardening/test_admission.py."""
    started, ready = server
    held = [served_and_held(started, f"127.0.0.{21 + n % 3}", ready) for n in range(PER_ADDRESS)]
    try:
        assert served_from(started, ready, "127.0.0.24") != 503
        closed, answer = closed_by_server(held[0], within=HEAD_TIMEOUT)
        assert closed, "the longest idle connection of the user at its cap was kept"
        assert answer == b""
        assert all(not closed_by_server(sock, within=0.05)[0] for sock in held[1:])
    finally:
        for sock in held:
            sock.close()
    assert started.log().count("connection(s) since the last such line") == 1


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
