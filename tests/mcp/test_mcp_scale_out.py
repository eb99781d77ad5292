"""Two real `svc-mcp --http` gateways behind a round-robin proxy, driven by the official Python
client in both protocol eras: the gateway keeps no session, so every call is answered whichever
instance gets it."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import ExitStack

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.mcp.conftest import PortalStub, process_env
from tests.support import PORT, ROOT, running_server

GATEWAY_TOKEN = "scale-out-gateway-token-0123456789abcdef"
CALLS = 8


@pytest.fixture(scope="module")
def balanced_url(portal: PortalStub, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Two gateways with the same token behind tests/mcp/round_robin.py; its /mcp URL."""
    root = tmp_path_factory.mktemp("scale-out")
    variables = portal.env("auditor", SVC_MCP_GATEWAY_TOKEN=GATEWAY_TOKEN)
    with ExitStack() as stack:
        upstreams = []
        for index in range(2):
            gateway = stack.enter_context(
                running_server(
                    ["-m", "svc_mcp", "--http", "--port", PORT],
                    log_path=root / f"gateway-{index}.log",
                    ready_path="/mcp",
                    env=process_env(variables),
                )
            )
            upstreams.append(gateway.base_url)
        proxy = stack.enter_context(
            running_server(
                ["-m", "tests.mcp.round_robin", PORT, *upstreams],
                log_path=root / "proxy.log",
                ready_path="/_proxy/counts",
                env={"PYTHONPATH": str(ROOT)},
            )
        )
        yield proxy.base_url + "/mcp"


def counts(url: str) -> list[int]:
    answer = httpx.get(url.removesuffix("/mcp") + "/_proxy/counts")
    return [int(count) for count in answer.json()]


async def calls_through(url: str, mode: str) -> tuple[str, list[object]]:
    """The negotiated version and CALLS results of portal_whoami over one client."""
    headers = {"Authorization": f"Bearer {GATEWAY_TOKEN}"}
    async with (
        httpx2.AsyncClient(headers=headers) as http,
        Client(streamable_http_client(url, http_client=http), mode=mode) as client,
    ):
        results = []
        for _ in range(CALLS):
            result = await client.call_tool("portal_whoami", {})
            results.append(None if result.is_error else result.structured_content)
        return client.protocol_version, results


@pytest.mark.parametrize(
    ("mode", "era"),
    [("legacy", "2025-11-25"), ("auto", "2026-07-28"), ("2026-07-28", "2026-07-28")],
    ids=["initialize era", "discover then 2026-07-28", "2026-07-28 pinned"],
)
def test_every_call_is_answered_behind_a_round_robin_proxy(
    balanced_url: str, mode: str, era: str
) -> None:
    before = counts(balanced_url)
    version, results = asyncio.run(calls_through(balanced_url, mode))
    after = counts(balanced_url)
    assert version == era
    assert results == [{"id": "alice", "kind": "human", "role": "auditor"}] * CALLS
    # Both instances answered part of this one client's requests.
    assert all(later - earlier >= CALLS // 2 for earlier, later in zip(before, after, strict=True))
