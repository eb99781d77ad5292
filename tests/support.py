"""Helpers for end-to-end tests: free loopback ports and real server processes."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
CONFINED = {"SVC_STUB_CONFINEMENT": "require", "SVC_MCP_CONFINEMENT": "require"}
"""Every server a test starts must confine itself, as it does for its users (docs/security.md);
the outer environment may say otherwise, e.g. `off` to see which tests depend on it."""


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


@contextlib.contextmanager
def running_server(
    args: Sequence[str],
    *,
    port: int,
    log_path: Path,
    ready_path: str = "/",
    env: Mapping[str, str] | None = None,
    host: str = "127.0.0.1",
    timeout: float = 20.0,
) -> Iterator[Server]:
    """Starts `python -m <args>` and waits until `ready_path` answers (any status)."""
    full_env = {**CONFINED, **os.environ, **(env or {})}
    with log_path.open("wb") as log_file:
        process = subprocess.Popen(
            [sys.executable, *args], stdout=log_file, stderr=subprocess.STDOUT, env=full_env
        )
    base_url = f"http://{host}:{port}"
    try:
        deadline = time.monotonic() + timeout
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"server exited early:\n{log_path.read_text()}")
            try:
                httpx.get(base_url + ready_path, timeout=1.0)
                break
            except httpx.TransportError:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"server did not start:\n{log_path.read_text()}") from None
                time.sleep(0.05)
        yield Server(base_url=base_url, process=process, log_path=log_path)
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
