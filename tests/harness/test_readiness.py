"""A test waits for the servers it starts on their own sign (the port accepts), as long as a busy
machine needs (SVC_TEST_START_SECONDS, default 60 s), and hears at once of one that exits early."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.support import free_port, running_server

pytestmark = pytest.mark.e2e

SLOW_SERVER = """
import http.server, sys, time
time.sleep(float(sys.argv[2]))
print("listening", flush=True)
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), http.server.SimpleHTTPRequestHandler).serve_forever()
"""


def test_a_server_is_used_once_its_port_accepts(tmp_path: Path) -> None:
    port = free_port()
    with running_server(
        ["-c", SLOW_SERVER, str(port), "0.5"], port=port, log_path=tmp_path / "log"
    ) as server:
        assert "listening" in server.log()


def test_a_server_that_exits_early_fails_at_once_with_its_log(tmp_path: Path) -> None:
    started = time.monotonic()
    with (
        pytest.raises(RuntimeError, match=r"(?s)exited with code 3 before it was ready.*no db"),
        running_server(
            ["-c", "import sys; print('no db', flush=True); sys.exit(3)"],
            port=free_port(),
            log_path=tmp_path / "log",
        ),
    ):
        pass
    assert time.monotonic() - started < 10


def test_the_deadline_comes_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SVC_TEST_START_SECONDS", "1")
    port = free_port()
    started = time.monotonic()
    with (
        pytest.raises(RuntimeError, match=r"(?s)did not start within 1 s.*SVC_TEST_START_SECONDS"),
        running_server(["-c", SLOW_SERVER, str(port), "30"], port=port, log_path=tmp_path / "log"),
    ):
        pass
    assert time.monotonic() - started < 10
