"""The CLI's one deadline covers resolving the backend's name (issue 33, finding 8): in a network
and mount namespace of the test's own, whose resolver is a DNS server on its loopback that never
answers, `svc-mcp portal_catalog` ends within SVC_MCP_TIMEOUT_SECONDS (+ start-up), not after the
resolver's own retries (10 s), with `unreachable`."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from svc_mcp.core.failures import FailureKind
from tests.mcp.conftest import SVC_MCP, process_env

pytestmark = pytest.mark.e2e

TIMEOUT = 2.0
SILENT_DNS = (
    "import socket\n"
    "s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
    "s.bind(('127.0.0.1', 53))\n"
    "print('listening', flush=True)\n"
    "while True:\n"
    "    s.recv(512)\n"
)


def test_a_resolver_that_never_answers_is_bounded_by_the_timeout(tmp_path: Path) -> None:
    resolv = tmp_path / "resolv.conf"
    resolv.write_text("nameserver 127.0.0.1\noptions timeout:5 attempts:2\n")
    (tmp_path / "dns.py").write_text(SILENT_DNS)
    script = (
        "ip link set lo up && "
        f"mount --bind {resolv} /etc/resolv.conf && "
        f"{{ {sys.executable} {tmp_path / 'dns.py'} > {tmp_path / 'dns.log'} 2>&1 & }} && "
        f"until grep -q listening {tmp_path / 'dns.log'}; do sleep 0.05; done && "
        '"$SVC_MCP" portal_catalog; code=$?; kill $!; exit $code'
    )
    env = process_env(
        {
            "PORTAL_API_BASE": "http://svc-backend.example.com:8081",
            "SVC_MCP_TIMEOUT_SECONDS": str(TIMEOUT),
            "SVC_MCP": SVC_MCP,
            "HOME": str(tmp_path),
        }
    )
    started = time.monotonic()
    done = subprocess.run(
        [
            "unshare",
            "--net",
            "--mount",
            "--propagation",
            "private",
            "--fork",
            "--kill-child",
            "sh",
            "-c",
            script,
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=30,
    )
    took = time.monotonic() - started
    assert done.returncode == FailureKind.UNREACHABLE.exit_code, done.stderr
    assert f"did not resolve within {TIMEOUT:g} s" in done.stderr
    assert took < TIMEOUT + 3.0, done.stderr
