"""A connection's deadlines against bytes that begin no request, on every server, over real
sockets (security round four, finding 1): a stray byte of a body the answer did not wait for, a
body that stops coming, blank lines between requests. Each once kept a connection for ever: any
byte cancelled uvicorn's keep-alive timer, and nothing timed a body.

The servers run with deadlines of a second or two (SVC_HTTP_IDLE_TIMEOUT, SVC_HTTP_BODY_TIMEOUT);
uvicorn's own keep-alive timer is 5 s, so a close before that is the new deadline's. The tests
wait on the server closing a socket, with a bound."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from tests.e2e import e2e_fixture
from tests.hardening.raw_http import (
    SERVERS,
    closed_by_server,
    connect,
    read_response,
    request_head,
    served_and_held,
    server_command,
)
from tests.mcp.conftest import process_env
from tests.support import PORT, Server, running_server

IDLE = 1.0
BODY = 2.0
KEEP_ALIVE = 5.0
"""uvicorn's keep-alive timer, which the servers leave at its default."""
LIMITS = {
    "SVC_HTTP_HEAD_TIMEOUT": "2",
    "SVC_HTTP_IDLE_TIMEOUT": str(IDLE),
    "SVC_HTTP_BODY_TIMEOUT": str(BODY),
}
NEVER = 15.0
"""How long a test waits before it calls a connection kept for ever."""


@e2e_fixture(scope="module", params=SERVERS)
def server(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, Server, str]]:
    kind: str = request.param
    root = tmp_path_factory.mktemp(kind)
    args, ready = server_command(kind, root)
    with running_server(
        [*args, "--port", PORT],
        log_path=root / "server.log",
        ready_path=ready,
        env=process_env(LIMITS),
    ) as started:
        yield kind, started, ready


def test_a_stray_body_byte_after_the_answer_does_not_keep_the_connection(
    server: tuple[str, Server, str],
) -> None:
    """The finding as reported: a body announced, the answer read, one byte, silence."""
    _, started, ready = server
    with connect(started, "127.0.0.41") as sock:
        sock.sendall(request_head("GET", ready, "Content-Length: 1000"))
        assert read_response(sock).startswith(b"HTTP/1.1 ")
        sock.sendall(b"x")
        begun = time.monotonic()
        closed, _ = closed_by_server(sock, within=NEVER)
        assert closed, "one body byte after the answer kept the connection"
        assert time.monotonic() - begun < KEEP_ALIVE


def test_a_body_that_stops_coming_is_closed(server: tuple[str, Server, str]) -> None:
    kind, started, ready = server
    path = "/mcp" if kind == "gateway" else "/api/v1/intel" if kind == "service" else ready
    with connect(started, "127.0.0.42") as sock:
        sock.sendall(
            request_head("POST", path, "Content-Type: application/json", "Content-Length: 1000")
            + b"{"
        )
        begun = time.monotonic()
        closed, answer = closed_by_server(sock, within=NEVER)
        assert closed, "a body that stopped coming kept the connection"
        assert time.monotonic() - begun < KEEP_ALIVE
    if kind == "gateway":
        # The gateway waits for a JSON-RPC body: the body deadline answers it.
        assert answer.startswith(b"HTTP/1.1 408 "), answer
        assert b"request_timeout" in answer


def test_blank_lines_between_requests_do_not_keep_the_connection(
    server: tuple[str, Server, str],
) -> None:
    """Bytes that begin no request do not move the deadline between requests."""
    _, started, ready = server
    with served_and_held(started, "127.0.0.43", ready) as sock:
        begun = time.monotonic()
        sock.settimeout(0.2)
        while time.monotonic() - begun < NEVER:
            try:
                sock.sendall(b"\r\n")
                if sock.recv(4096) == b"":
                    break
            except TimeoutError:
                continue
            except (BrokenPipeError, ConnectionResetError):
                break
        assert time.monotonic() - begun < KEEP_ALIVE, "blank lines kept the connection"


def test_a_request_within_the_deadlines_is_served_as_before(
    server: tuple[str, Server, str],
) -> None:
    """Two requests on one connection: both answered (keep-alive works as before)."""
    _, started, ready = server
    with served_and_held(started, "127.0.0.44", ready) as sock:
        sock.sendall(request_head("GET", ready))
        assert read_response(sock).startswith(b"HTTP/1.1 ")
