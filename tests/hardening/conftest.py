"""Fixtures for the fault, load and soak tests: real stub processes on loopback.

Durations come from the environment so the default run stays short and CI can run the long ones:
`SVC_LOAD_SECONDS` (default 10) for the load tests, `SVC_SOAK_SECONDS` (default 30) for the soak.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.mcp.conftest import INTEL_KEY, SERVICE_TOKEN, SVC_STUB, ServiceStub
from tests.support import free_port, running_server


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


@dataclass(frozen=True)
class RunningService(ServiceStub):
    pid: int


@contextlib.contextmanager
def start_service(root: Path, **extra_env: str) -> Iterator[RunningService]:
    """A real `svc-stub service` with demo data, auth on and an intel key, without access log."""
    db = root / "service.db"
    subprocess.run(
        [SVC_STUB, "demo-data", "service", "--db", str(db)], check=True, capture_output=True
    )
    port = free_port()
    env = {"SERVICE_API_TOKEN": SERVICE_TOKEN, "SERVICE_INTEL_HMAC": INTEL_KEY, **extra_env}
    args = ["-m", "server_stub", "service", "--db", str(db), "--port", str(port)]
    with running_server(
        [*args, "--no-access-log"],
        port=port,
        log_path=root / "service.log",
        ready_path="/health/live",
        env=env,
    ) as server:
        yield RunningService(
            base_url=server.base_url, db=db, log_path=server.log_path, pid=server.process.pid
        )


@pytest.fixture
def service(tmp_path: Path) -> Iterator[RunningService]:
    """A fresh data service stub per test: these tests break its database."""
    with start_service(tmp_path) as stub:
        yield stub
