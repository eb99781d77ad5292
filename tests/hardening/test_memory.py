"""Large answers (issue 33, finding 7): a real `svc-mcp --http` gateway gives the memory of a
burst of large answers back, and refuses an answer over its backend's cap while reading it, when
no Content-Length announced it."""

from __future__ import annotations

import asyncio
import subprocess
import time
from pathlib import Path

import pytest

from svc_mcp.core.backends import PORTAL, SERVICE
from tests.hardening.burst import calls, gateway
from tests.hardening.conftest import rss_kib, wait_for
from tests.hardening.fake_backend import SENT, fake_backend
from tests.mcp.conftest import SVC_MCP, process_env

pytestmark = pytest.mark.e2e

BURST = 16
ANSWER_BYTES = 8_000_000
"""Half the data service's cap: 16 of them at once took the old gateway from 86 to 200 MiB."""
OVER_CAP_BYTES = 64 * 1024 * 1024
"""A chunked answer far over the portal's cap: reading it all would show."""


@pytest.mark.alone
def test_memory_comes_back_after_a_burst_of_large_answers(tmp_path: Path) -> None:
    with (
        fake_backend() as base,
        gateway(f"{base}/big-{ANSWER_BYTES}", tmp_path / "g.log") as server,
    ):
        pid = server.process.pid
        baseline = rss_kib(pid)
        results = asyncio.run(calls(f"{server.base_url}/mcp", BURST))
        assert not [told for failed, told in results if failed], results
        peak = rss_kib(pid)
        bound = baseline + 2 * SERVICE.max_answer_bytes // 1024
        # Polled, not slept: the old gateway never came down (200 MiB for ever after 86 MiB).
        settled = wait_until_below(pid, bound)
        assert settled < bound, (baseline, peak, settled)


def wait_until_below(pid: int, bound: int, timeout: float = 20.0) -> int:
    """The gateway's RSS once below `bound`, or the last one seen within `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while (rss := rss_kib(pid)) >= bound and time.monotonic() < deadline:
        time.sleep(0.2)
    return rss


def test_an_answer_over_the_cap_without_a_length_is_cut_while_read(tmp_path: Path) -> None:
    with fake_backend() as base:
        backend = f"{base}/chunked-{OVER_CAP_BYTES}"
        SENT.clear()
        with gateway("http://127.0.0.1:9", tmp_path / "g.log", PORTAL_API_BASE=backend) as server:
            results = asyncio.run(calls(f"{server.base_url}/mcp", 1, tool="portal_catalog"))
        env = {"PORTAL_API_BASE": backend, "SVC_MCP_TIMEOUT_SECONDS": "60"}
        cli = subprocess.run(
            [SVC_MCP, "portal_catalog"], capture_output=True, text=True, env=process_env(env)
        )
        wait_for(lambda: len(SENT.get("chunked", [])) == 2)  # each handler notes it as it ends
    cap = PORTAL.max_answer_bytes / (1024 * 1024)
    [(failed, told)] = results
    assert failed, told
    for said in (told, cli.stderr):
        assert "server_error: the portal answered GET /api/catalog" in said, said
        assert f"with more than {cap:g} MiB; refused (too large" in said, said
    assert cli.returncode == 10, cli.stderr
    # Both stopped reading at the cap: what the backend got out is the cap and socket buffers.
    assert all(sent < PORTAL.max_answer_bytes + 16 * 1024 * 1024 for sent in SENT["chunked"])
