"""Helpers for end-to-end tests: real server processes on ports they bind, and closed ports."""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
CONFINED = {"SVC_STUB_CONFINEMENT": "require", "SVC_MCP_CONFINEMENT": "require"}
"""Every server a test starts must confine itself, as it does for its users (docs/security.md);
the outer environment may say otherwise, e.g. `off` to see which tests depend on it."""


OUTPUT_SHOWN = 4000
"""How much of a failed command's stdout and of its stderr a failure shows (their ends)."""


class SubprocessFailed(AssertionError):
    """A command a test needed failed; the message carries its output (a bare
    CalledProcessError shows only the exit code)."""


def failure_text(
    args: object, returncode: int, stdout: str | bytes | None, stderr: str | bytes | None
) -> str:
    def tail(output: str | bytes | None) -> str:
        text = output.decode(errors="replace") if isinstance(output, bytes) else output or ""
        return text[-OUTPUT_SHOWN:].strip() or "(nothing)"

    return (
        f"{args} exited with code {returncode}\n"
        f"--- stdout (last {OUTPUT_SHOWN} characters) ---\n{tail(stdout)}\n"
        f"--- stderr (last {OUTPUT_SHOWN} characters) ---\n{tail(stderr)}"
    )


def run_checked(
    args: Sequence[str], *, timeout: float, **options: Any
) -> subprocess.CompletedProcess[str]:
    """`subprocess.run(args)` with its output captured as text; a non-zero exit raises
    SubprocessFailed with the command's stdout and stderr in the message."""
    done = subprocess.run(args, capture_output=True, text=True, timeout=timeout, **options)
    if done.returncode != 0:
        raise SubprocessFailed(failure_text(args, done.returncode, done.stdout, done.stderr))
    return done


PORT = "{port}"
"""Where the port goes in running_server's arguments and variables (`--port`, PORT, or inside a
URL): running_server reserves one and puts it there."""


@contextlib.contextmanager
def reserved_port(host: str = "0.0.0.0") -> Iterator[int]:
    """A port held for a server the block starts, never probed and released: this socket stays
    bound to it with SO_REUSEADDR and never listens. The kernel then gives the port to no other
    socket asking for any port (an outgoing connection, a bind to port 0) and refuses it to a
    plain bind, while a server binding it with SO_REUSEADDR (uvicorn, the gateway, Node, Python's
    http.server) may (tests/harness/test_readiness.py shows each)."""
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, 0))
        yield int(sock.getsockname()[1])


@contextlib.contextmanager
def closed_port(host: str = "127.0.0.1") -> Iterator[int]:
    """A port where nothing listens while the block runs: this socket holds it, bound and never
    listening (a connection is refused), so no other process can listen there meanwhile."""
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as sock:
        sock.bind((host, 0))
        yield int(sock.getsockname()[1])


@contextlib.contextmanager
def closed_url(path: str = "") -> Iterator[str]:
    """`http://127.0.0.1:<closed_port>` + `path`: a URL nothing answers while the block runs."""
    with closed_port() as port:
        yield f"http://127.0.0.1:{port}{path}"


@dataclass
class Server:
    base_url: str
    process: subprocess.Popen[bytes]
    log_path: Path
    port: int = 0
    """The port it listens on (another than the one asked for when that was taken)."""
    ready_path: str = "/"
    """The path that answered when it became ready."""

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def settled_log(self) -> str:
        """A stub's log once every request it has answered has its access line. A stub writes a
        request's line at the end of the event loop's round that answered it, so the line may
        trail the answer; a probe of the ready path sent now is read in a later round, so its
        line (found by the request id it carries) comes after all of theirs."""
        marker = secrets.token_hex(16)
        httpx.get(self.base_url + self.ready_path, headers={"X-Request-Id": marker}, timeout=10)
        deadline = time.monotonic() + 10
        while marker not in (log := self.log()):
            assert time.monotonic() < deadline, f"no access line for the probe {marker}"
            time.sleep(0.01)
        return log


START_SECONDS_VARIABLE = "SVC_TEST_START_SECONDS"
START_SECONDS = 60.0
"""How long a test waits for a server it started to be ready: long enough for a machine busy
with other test runs (20 s was not); the variable overrides it."""


def start_seconds() -> float:
    return float(os.environ.get(START_SECONDS_VARIABLE, START_SECONDS))


def wait_ready(
    process: subprocess.Popen[bytes], log_path: Path, ready: Callable[[float], bool]
) -> None:
    """Returns once `ready(seconds left)` holds; fails at once with the log when the process
    exits first, and with the log after `start_seconds()`."""
    limit = start_seconds()
    deadline = time.monotonic() + limit
    while True:
        code = process.poll()
        if code is not None:
            raise RuntimeError(
                f"server exited with code {code} before it was ready: {process.args}\n"
                + log_path.read_text(errors="replace")
            )
        left = deadline - time.monotonic()
        if left <= 0:
            raise RuntimeError(
                f"server did not start within {limit:g} s ({START_SECONDS_VARIABLE} waits "
                f"longer): {process.args}\n" + log_path.read_text(errors="replace")
            )
        if ready(left):
            return
        time.sleep(0.05)


def accepts(host: str, port: int) -> bool:
    """Whether something listens on `host:port` (the server's own sign that it serves)."""
    try:
        with socket.create_connection((host, port), timeout=1.0):
            return True
    except OSError:
        return False


def answers(url: str, seconds: float) -> bool:
    """Whether `url` answers an HTTP GET (any status) within `seconds`."""
    try:
        httpx.get(url, timeout=min(seconds, 10.0))
    except httpx.TransportError:
        return False
    return True


PORT_ATTEMPTS = 5
"""How many ports running_server tries: a squatter may bind even a reserved port first."""
_PORT_TAKEN = re.compile(r"address already in use", re.IGNORECASE)


def listening_inodes(port: int) -> set[str]:
    """The inodes of the TCP sockets listening on `port` (any address), from /proc/net."""
    inodes: set[str] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError), open(table, encoding="ascii") as rows:
            for row in list(rows)[1:]:
                fields = row.split()
                if fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:
                    inodes.add(fields[9])
    return inodes


def holds_listener(pid: int, port: int) -> bool:
    """Whether process `pid` holds the socket listening on `port` (not some other process
    that took the port first)."""
    wanted = {f"socket:[{inode}]" for inode in listening_inodes(port)}
    try:
        fds = list(Path(f"/proc/{pid}/fd").iterdir())
    except PermissionError:
        return True  # not ours to look at (a process made undumpable, seen by another user)
    except OSError:
        return False
    return any(_link(fd) in wanted for fd in fds)


def _link(path: Path) -> str:
    try:
        return os.readlink(path)
    except OSError:
        return ""


def _with_port(text: str, port: int) -> str:
    return text.replace(PORT, str(port))


@contextlib.contextmanager
def running_server(
    args: Sequence[str],
    *,
    log_path: Path,
    ready_path: str = "/",
    env: Mapping[str, str] | None = None,
    host: str = "127.0.0.1",
    port: int | None = None,
) -> Iterator[Server]:
    """Starts `python <args>` and waits until its port accepts, `ready_path` answers (any
    status) and the listening socket is the process's own: a socket bound before the app serves
    (the gateway's) accepts early. The port stands as PORT in `args` and `env` (alone or inside a
    URL): a reserved_port, held while the server runs, unless `port` names one the caller holds.
    When the server finds it taken all the same (a squatter binding it with SO_REUSEADDR first),
    it starts again on another reserved port: see `Server.port`."""
    with contextlib.ExitStack() as stack:
        for attempt in range(PORT_ATTEMPTS):
            chosen = port if port is not None and attempt == 0 else None
            if chosen is None:
                chosen = stack.enter_context(reserved_port("::" if ":" in host else "0.0.0.0"))
            started = _running_server(
                [_with_port(arg, chosen) for arg in args],
                chosen,
                log_path,
                ready_path,
                {name: _with_port(value, chosen) for name, value in (env or {}).items()},
                host,
            )
            try:
                server = stack.enter_context(started)
            except PortTaken:
                if attempt == PORT_ATTEMPTS - 1:
                    raise
                continue
            yield server
            return


class PortTaken(RuntimeError):
    """The server exited at start because its port was taken."""


@contextlib.contextmanager
def _running_server(
    args: Sequence[str],
    port: int,
    log_path: Path,
    ready_path: str,
    env: Mapping[str, str] | None,
    host: str,
) -> Iterator[Server]:
    full_env = {**CONFINED, **os.environ, **(env or {})}
    with log_path.open("wb") as log_file:
        process = subprocess.Popen(
            [sys.executable, *args], stdout=log_file, stderr=subprocess.STDOUT, env=full_env
        )
    base_url = f"http://{host}:{port}"
    try:
        try:
            wait_ready(
                process,
                log_path,
                # `host` is as in a URL: an IPv6 literal comes in brackets, which a socket refuses.
                lambda left: (
                    accepts(host.strip("[]"), port)
                    and answers(base_url + ready_path, left)
                    and holds_listener(process.pid, port)
                ),
            )
        except RuntimeError as exc:
            if process.poll() is not None and _PORT_TAKEN.search(
                log_path.read_text("utf-8", "replace")
            ):
                raise PortTaken(str(exc)) from None
            raise
        yield Server(base_url, process, log_path, port, ready_path)
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
