"""A test waits for the servers it starts on their own sign (the port accepts), as long as a busy
machine needs (SVC_TEST_START_SECONDS, default 60 s), and hears at once of one that exits early."""

from __future__ import annotations

import http.server
import socket
import threading
import time
from pathlib import Path

import pytest

from tests.support import PORT, closed_port, holds_listener, reserved_port, running_server

pytestmark = pytest.mark.e2e

SLOW_SERVER = """
import http.server, sys, time
time.sleep(float(sys.argv[2]))
print("listening", flush=True)
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), http.server.SimpleHTTPRequestHandler).serve_forever()
"""


def test_a_server_is_used_once_its_port_accepts(tmp_path: Path) -> None:
    with running_server(["-c", SLOW_SERVER, PORT, "0.5"], log_path=tmp_path / "log") as server:
        assert "listening" in server.log()


def test_a_port_taken_before_the_server_binds_it_is_traded_for_another(tmp_path: Path) -> None:
    # Another process bound the port first (with SO_REUSEADDR) and answers HTTP on it, as a server the test did not
    # start would: the test gets its own server, on another port, never the squatter.
    with http.server.HTTPServer(("127.0.0.1", 0), http.server.BaseHTTPRequestHandler) as squatter:
        taken = int(squatter.server_address[1])
        threading.Thread(target=squatter.serve_forever, daemon=True).start()
        try:
            with running_server(
                ["-c", SLOW_SERVER, PORT, "0.5"], port=taken, log_path=tmp_path / "log"
            ) as server:
                assert server.port != taken
                assert server.base_url == f"http://127.0.0.1:{server.port}"
                assert "listening" in server.log()
                assert holds_listener(server.process.pid, server.port)
                assert not holds_listener(server.process.pid, taken)
        finally:
            squatter.shutdown()


def test_a_server_that_exits_early_fails_at_once_with_its_log(tmp_path: Path) -> None:
    started = time.monotonic()
    with (
        pytest.raises(RuntimeError, match=r"(?s)exited with code 3 before it was ready.*no db"),
        running_server(
            ["-c", "import sys; print('no db', flush=True); sys.exit(3)"],
            log_path=tmp_path / "log",
        ),
    ):
        pass
    assert time.monotonic() - started < 10


def test_the_deadline_comes_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SVC_TEST_START_SECONDS", "1")
    started = time.monotonic()
    with (
        pytest.raises(RuntimeError, match=r"(?s)did not start within 1 s.*SVC_TEST_START_SECONDS"),
        running_server(["-c", SLOW_SERVER, PORT, "30"], log_path=tmp_path / "log"),
    ):
        pass
    assert time.monotonic() - started < 10


def test_a_reserved_port_is_given_to_no_one_else_but_the_server_may_bind_it() -> None:
    with reserved_port() as port:
        asked = []
        for _ in range(2000):  # what a bind to port 0 or an outgoing connection gets
            with socket.socket() as sock:
                sock.bind(("127.0.0.1", 0))
                asked.append(sock.getsockname()[1])
        assert port not in asked
        with socket.socket() as plain, pytest.raises(OSError, match="in use"):
            plain.bind(("127.0.0.1", port))
        for host in ("127.0.0.1", "0.0.0.0"):  # as uvicorn, the gateway, Node and http.server do
            with http.server.HTTPServer((host, port), http.server.BaseHTTPRequestHandler):
                pass


def test_nothing_may_listen_on_a_closed_port() -> None:
    with closed_port() as port:
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection(("127.0.0.1", port), timeout=5)
        with pytest.raises(OSError, match="in use"):
            http.server.HTTPServer(("127.0.0.1", port), http.server.BaseHTTPRequestHandler)
