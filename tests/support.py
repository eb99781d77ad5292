"""Helpers for end-to-end tests: free loopback ports and real server processes."""

from __future__ import annotations

import contextlib
import os
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


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


@dataclass
class Server:
    base_url: str
    process: subprocess.Popen[bytes]
    log_path: Path

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")


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


@contextlib.contextmanager
def running_server(
    args: Sequence[str],
    *,
    port: int,
    log_path: Path,
    ready_path: str = "/",
    env: Mapping[str, str] | None = None,
    host: str = "127.0.0.1",
) -> Iterator[Server]:
    """Starts `python <args>` and waits until its port accepts and `ready_path` answers (any
    status): a socket bound before the app serves (the gateway's) accepts early."""
    full_env = {**CONFINED, **os.environ, **(env or {})}
    with log_path.open("wb") as log_file:
        process = subprocess.Popen(
            [sys.executable, *args], stdout=log_file, stderr=subprocess.STDOUT, env=full_env
        )
    base_url = f"http://{host}:{port}"
    try:
        wait_ready(
            process,
            log_path,
            # `host` is as in a URL: an IPv6 literal comes in brackets, which a socket refuses.
            lambda left: accepts(host.strip("[]"), port) and answers(base_url + ready_path, left),
        )
        yield Server(base_url=base_url, process=process, log_path=log_path)
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
