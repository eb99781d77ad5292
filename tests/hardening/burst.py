"""A burst of large answers through a real `svc-mcp --http` gateway, and its resident memory
before, at the peak and after (issue 33, finding 7). Shared by the test and `bench/`.

The data service is the fake backend: `get_intel` answers a page of `size` bytes of records as
large as a real intel envelope can be (`tests.hardening.fake_backend.large_page`).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from tests.hardening.conftest import rss_kib
from tests.mcp.conftest import SERVICE_TOKEN, process_env
from tests.support import PORT, Server, running_server


@contextlib.contextmanager
def gateway(
    backend: str, log: Path, entry: Sequence[str] = ("-m", "svc_mcp"), **extra: str
) -> Iterator[Server]:
    """A gateway whose data service is `backend` (a base URL with the fake backend's mode),
    started as `python <entry>`; `extra` adds to its environment."""
    env = {
        "SERVICE_API_BASE": backend,
        "SERVICE_API_TOKEN": SERVICE_TOKEN,
        "PORTAL_API_BASE": "http://127.0.0.1:9",
        "SVC_MCP_TIMEOUT_SECONDS": "60",
        **extra,
    }
    with running_server(
        [*entry, "--http", "--no-auth", "--port", PORT],
        log_path=log,
        ready_path="/mcp",
        env=process_env(env),
    ) as server:
        yield server


async def _one_call(url: str, tool: str) -> tuple[bool, str]:
    """One call of `tool` for a full page: (whether it failed, the text of its first content)."""
    async with streamable_http_client(url) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        result = await session.call_tool(tool, {"limit": 1000})
        first = result.content[0] if result.content else None
        text = getattr(first, "text", "")
        return result.is_error, text[:500]


async def calls(url: str, count: int, tool: str = "get_intel") -> list[tuple[bool, str]]:
    """`count` calls at once, each over a session of its own."""
    return list(await asyncio.gather(*(_one_call(url, tool) for _ in range(count))))


@dataclass(frozen=True)
class Memory:
    """The gateway's resident memory (KiB) before a burst, at its peak, and after it."""

    baseline: int
    peak: int
    settled: int


def burst(server: Server, count: int, settle_seconds: float) -> tuple[Memory, list[bool]]:
    """Runs `count` calls at once on an idle gateway, sampling its RSS every 10 ms; `settled` is
    the lowest RSS seen within `settle_seconds` after the last answer (the allocator gives the
    memory back, or never does)."""
    pid = server.process.pid
    baseline = rss_kib(pid)
    samples: list[int] = []
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            samples.append(rss_kib(pid))
            time.sleep(0.01)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        results = asyncio.run(calls(f"{server.base_url}/mcp", count))
    finally:
        done.set()
        sampler.join()
    settled = rss_kib(pid)
    deadline = time.monotonic() + settle_seconds
    while time.monotonic() < deadline:
        time.sleep(0.1)
        settled = min(settled, rss_kib(pid))
    failed = [error for error, _ in results]
    return Memory(baseline, max(samples, default=baseline), settled), failed
