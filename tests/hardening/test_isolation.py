"""One hung backend never stalls the other (issue 33, finding 1): a real `svc-mcp --http` gateway
whose data service is a fake backend that never answers in time, and whose portal is the real
portal stub. Twenty clients keep calling a data-service tool while a few call a portal tool: the
portal tool keeps at least 0.8x of the throughput it has in the same run without the hang, and
every hung call ends within the timeout + 1 s with a retryable, typed tool error."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from svc_mcp.core.failures import FailureKind
from tests.hardening.fake_backend import ARRIVALS, fake_backend
from tests.mcp.conftest import SERVICE_TOKEN, PortalStub, portal, process_env  # noqa: F401
from tests.support import Server, free_port, running_server

TIMEOUT_SECONDS = 2.0
HUNG_CLIENTS = 20
PORTAL_CLIENTS = 4
PHASE_SECONDS = 4.0
MIN_RATIO = 0.8


@pytest.fixture
def gateway(portal: PortalStub, tmp_path: Path) -> Iterator[Server]:  # noqa: F811
    with fake_backend() as hung:
        port = free_port()
        env = {
            **portal.env(),
            "SERVICE_API_BASE": f"{hung}/slow",
            "SERVICE_API_TOKEN": SERVICE_TOKEN,
            "SVC_MCP_TIMEOUT_SECONDS": str(TIMEOUT_SECONDS),
        }
        with running_server(
            ["-m", "svc_mcp", "--http", "--no-auth", "--port", str(port)],
            port=port,
            log_path=tmp_path / "gateway.log",
            ready_path="/mcp",
            env=process_env(env),
        ) as server:
            yield server


async def portal_calls(url: str, seconds: float) -> int:
    """Calls `portal_catalog` for `seconds`; how many answered."""
    calls = 0
    async with streamable_http_client(url) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            result = await session.call_tool("portal_catalog", {})
            assert not result.is_error, result.content
            calls += 1
    return calls


async def portal_throughput(url: str) -> float:
    calls = await asyncio.gather(*(portal_calls(url, PHASE_SECONDS) for _ in range(PORTAL_CLIENTS)))
    return sum(calls) / PHASE_SECONDS


async def hung_calls(
    url: str, until: asyncio.Event, ended: list[tuple[float, dict[str, object]]]
) -> None:
    """Calls `get_system` (which hangs) again and again until `until` is set."""
    async with streamable_http_client(url) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        while not until.is_set():
            started = time.monotonic()
            result = await session.call_tool("get_system", {})
            ended.append((time.monotonic() - started, result.structured_content or {}))
            assert result.is_error, result.content


async def slots_taken(count: int) -> None:
    deadline = time.monotonic() + 20
    while ARRIVALS["slow"] < count:
        assert time.monotonic() < deadline, "the hung calls never reached the backend"
        await asyncio.sleep(0.02)


@pytest.mark.alone
def test_a_hung_backend_does_not_starve_the_other(gateway: Server) -> None:
    url = gateway.base_url + "/mcp"

    async def run() -> tuple[float, float, float, list[tuple[float, dict[str, object]]]]:
        before = await portal_throughput(url)
        stop = asyncio.Event()
        ended: list[tuple[float, dict[str, object]]] = []
        arrived = ARRIVALS["slow"]
        hung = [asyncio.create_task(hung_calls(url, stop, ended)) for _ in range(HUNG_CLIENTS)]
        await slots_taken(arrived + 8)
        during = await portal_throughput(url)
        stop.set()
        await asyncio.gather(*hung)
        after = await portal_throughput(url)
        return before, during, after, ended

    before, during, after, ended = asyncio.run(run())
    baseline = (before + after) / 2
    print(f"portal calls/s: {before:.1f} before, {during:.1f} with the hang, {after:.1f} after")
    assert during >= MIN_RATIO * baseline, (before, during, after)
    assert len(ended) >= HUNG_CLIENTS
    for took, structured in ended:
        kind = FailureKind.named(structured.get("kind"))
        assert kind.retryable, structured
        assert "retrying is safe" in str(structured["message"]), structured
        assert took <= TIMEOUT_SECONDS + 1.0, (took, structured)
    assert "Traceback" not in gateway.log()
