"""Fixtures for the fault, load and soak tests: real stub processes on loopback.

Durations come from the environment so the default run stays short and CI can run the long ones:
`SVC_LOAD_SECONDS` (default 10) for the load tests, `SVC_SOAK_SECONDS` (default 30) for the soak.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from tests.e2e import e2e_fixture
from tests.mcp.conftest import ServiceStub, service_stub


def seconds_from_env(name: str, default: float) -> float:
    return float(os.environ.get(name, default))


def wait_for(check: Callable[[], bool], *, timeout: float = 10.0, every: float = 0.05) -> None:
    """Polls `check` until it holds; fails after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout} s: {check}")
        time.sleep(every)


def rss_kib(pid: int) -> int:
    """Resident set size of process `pid`, from /proc/PID/status."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError(f"no VmRSS for {pid}")


@contextlib.contextmanager
def start_service(root: Path, **env: str) -> Iterator[ServiceStub]:
    """The shared service stub, without its access log (the load tests count no lines)."""
    with service_stub(root, "--no-access-log", **env) as stub:
        yield stub


@e2e_fixture()
def service(tmp_path: Path) -> Iterator[ServiceStub]:
    """A fresh data service stub per test: these tests break its database."""
    with start_service(tmp_path) as stub:
        yield stub
