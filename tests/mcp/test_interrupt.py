"""Ctrl-C ends `svc-mcp` at once, in one line (issue 35, item 4): the stdio server on a terminal
(its reader thread waits on stdin, which no cancellation ends), and a CLI call waiting for a
backend that does not answer. Real processes; the terminal is a real pty."""

from __future__ import annotations

import fcntl
import os
import pty
import select
import signal
import socket
import subprocess
import sys
import termios
from collections.abc import Callable, Iterator

import pytest

from tests.mcp.conftest import SVC_MCP, SVC_PORTAL, process_env

pytestmark = pytest.mark.e2e


def _sigint_as_started(ignored: bool) -> None:
    """SIGINT as the runner passes it on: a shell's foreground job gets it at its default, a
    background job of a non-interactive shell (`pytest ... &`) ignored, and an ignored signal is
    inherited across exec, where Python then installs no KeyboardInterrupt handler."""
    signal.signal(signal.SIGINT, signal.SIG_IGN if ignored else signal.SIG_DFL)


def _foreground_job() -> None:
    _sigint_as_started(ignored=False)


def _controlling_terminal(sigint_ignored: bool) -> Callable[[], None]:
    def prepare() -> None:
        _sigint_as_started(sigint_ignored)
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)

    return prepare


def read_until(fd: int, wanted: bytes, timeout: float = 60) -> bytes:
    """What the process wrote on the terminal, up to and including `wanted`."""
    seen = b""
    while wanted not in seen:
        ready, _, _ = select.select([fd], [], [], timeout)
        assert ready, f"no {wanted!r} on the terminal; it showed {seen!r}"
        try:
            chunk = os.read(fd, 4096)
        except OSError:  # the other side closed
            break
        if not chunk:
            break
        seen += chunk
    return seen


@pytest.mark.parametrize("sigint_ignored", [False, True], ids=["foreground", "sigint-ignored"])
def test_ctrl_c_on_a_terminal_ends_the_stdio_server(sigint_ignored: bool) -> None:
    """Ended even when started with SIGINT ignored (it takes SIGINT itself), and from the line
    that says it is confined on: a Ctrl-C between it and the serving is not lost."""
    main, child = pty.openpty()
    process = subprocess.Popen(
        [SVC_MCP],
        stdin=child,
        stdout=child,
        stderr=child,
        env=process_env({}),
        start_new_session=True,
        preexec_fn=_controlling_terminal(sigint_ignored),  # the pty becomes its terminal
    )
    os.close(child)
    try:
        shown = read_until(main, b"confined")  # confinement is the last step before it reads
        os.write(main, b"\x03")  # what the terminal sends for Ctrl-C: SIGINT to the process
        code = process.wait(timeout=30)
        shown += read_until(main, b"interrupted\r\n")
        assert code == 130, shown
        assert b"Traceback" not in shown
    finally:
        process.kill()
        process.wait()
        os.close(main)


@pytest.fixture
def silent_backend() -> Iterator[socket.socket]:
    """A loopback port that accepts connections and never answers."""
    with socket.create_server(("127.0.0.1", 0)) as listener:
        listener.settimeout(60)
        yield listener


@pytest.mark.parametrize(
    ("program", "args", "variable"),
    [
        (SVC_MCP, ["get_system"], "SERVICE_API_BASE"),
        (SVC_PORTAL, ["catalog", "list"], "PORTAL_API_BASE"),
    ],
)
def test_ctrl_c_during_a_call_is_one_line(
    silent_backend: socket.socket, program: str, args: list[str], variable: str
) -> None:
    port = silent_backend.getsockname()[1]
    variables = {variable: f"http://127.0.0.1:{port}", "SERVICE_API_TOKEN": "t" * 40}
    process = subprocess.Popen(
        [program, *args],
        env=process_env(variables),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_foreground_job,  # a call started with SIGINT ignored keeps ignoring it
    )
    try:
        connection, _ = silent_backend.accept()  # the call is now waiting for its answer
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=30)
        connection.close()
    finally:
        process.kill()
        process.wait()
    name = os.path.basename(program)
    assert err.splitlines() == [f"{name}: interrupted"], err
    assert process.returncode == 130
    assert out == ""


CTRL_C_MID_WRITE = """
import io, os, signal, sys
from svc_mcp.core.exits import interrupt_ends_process

class Stderr(io.RawIOBase):
    def writable(self):
        return True

    def fileno(self):
        return 2

    def write(self, data):
        os.write(2, bytes(data))
        signal.raise_signal(signal.SIGINT)  # Ctrl-C while the buffered writer is mid-write
        return len(data)

sys.stderr = io.TextIOWrapper(io.BufferedWriter(Stderr()), write_through=True)
with interrupt_ends_process("svc-mcp", lambda: None):
    print("svc-mcp: confined", file=sys.stderr, flush=True)
"""


def test_ctrl_c_while_a_line_is_being_written_still_ends_in_one_line_and_130() -> None:
    """The Ctrl-C that came while the server wrote its start-up line once ended it with a
    traceback and 1: the handler's own print was a reentrant call into the same writer."""
    done = subprocess.run(
        [sys.executable, "-c", CTRL_C_MID_WRITE], capture_output=True, text=True, timeout=60
    )
    assert (done.returncode, done.stderr) == (130, "svc-mcp: confined\nsvc-mcp: interrupted\n")
