"""One tool at a time (issue 35, item 2): `--tools` and `--exclude-tools` beside `--toolsets` and
`--read-only`, for the CLI listing, the stdio server and the gateway; unknown names refused with
the nearest and every valid one; and the gateway's per-request headers (`X-MCP-Tools`,
`X-MCP-Toolsets`, `X-MCP-Readonly`), which narrow its own selection and never widen it."""

from __future__ import annotations

import asyncio
import json
import subprocess
from collections.abc import Iterator

import httpx2
import pytest
from mcp import ClientSession, MCPError
from mcp.client.streamable_http import streamable_http_client

from tests.mcp.conftest import SVC_MCP, PortalStub, over_stdio, process_env
from tests.mcp.test_mcp_gateway import GATEWAY_TOKEN, start_gateway

pytestmark = pytest.mark.e2e


def listed(*args: str) -> list[str]:
    done = subprocess.run(
        [SVC_MCP, *args, "tools", "--json"],
        env=process_env({}),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return [tool["name"] for tool in json.loads(done.stdout)]


def test_the_listing_takes_tools_and_exclude_tools() -> None:
    assert listed("--tools", "get_system,get_orders") == ["get_system", "get_orders"]
    assert listed("--tools", "get_system,get_orders", "--exclude-tools", "get_orders") == [
        "get_system"
    ]
    everything = listed()
    assert listed("--exclude-tools", "submit_intel") == [
        n for n in everything if n != "submit_intel"
    ]
    # Each option narrows what the others leave.
    assert listed("--toolsets", "portal", "--tools", "get_system,portal_page") == ["portal_page"]
    assert listed("--read-only", "--tools", "submit_intel,get_health") == ["get_health"]


def test_an_unknown_name_is_refused_with_the_nearest_and_every_name() -> None:
    done = subprocess.run(
        [SVC_MCP, "--tools", "get_sytem", "tools"],
        env=process_env({}),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    (line,) = done.stderr.splitlines()
    assert "unknown tool get_sytem (did you mean get_system" in line
    assert "the tools are portal_catalog, " in line
    assert "submit_intel" in line


def test_the_stdio_server_serves_only_the_tools_named() -> None:
    async def names(session: ClientSession) -> list[str]:
        await session.initialize()
        return [tool.name for tool in (await session.list_tools()).tools]

    nowhere = {"PORTAL_API_BASE": "http://127.0.0.1:9", "SERVICE_API_BASE": "http://127.0.0.1:9"}
    got = asyncio.run(over_stdio(nowhere, names, "--tools", "get_system,get_pnl"))
    assert got == ["get_system", "get_pnl"]


@pytest.fixture(scope="module")
def gateway(portal: PortalStub, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A gateway that serves everything but submit_intel."""
    log = tmp_path_factory.mktemp("gateway") / "gateway.log"
    with start_gateway(
        portal, log, "--exclude-tools", "submit_intel", token=GATEWAY_TOKEN
    ) as server:
        yield server.base_url + "/mcp"


def over_gateway(url: str, headers: dict[str, str], tool: str | None = None) -> list[str]:
    async def run() -> list[str]:
        sent = {"Authorization": f"Bearer {GATEWAY_TOKEN}", **headers}
        async with (
            httpx2.AsyncClient(headers=sent) as http,
            streamable_http_client(url, http_client=http) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            names = [t.name for t in (await session.list_tools()).tools]
            if tool is not None:
                result = await session.call_tool(tool, {})
                names.append(f"called {tool}: {'error' if result.is_error else 'ok'}")
            return names

    return asyncio.run(run())


def test_the_gateway_takes_its_own_flags(gateway: str) -> None:
    names = over_gateway(gateway, {})
    assert "submit_intel" not in names
    assert "get_system" in names


def test_headers_narrow_the_gateways_selection(gateway: str) -> None:
    assert over_gateway(gateway, {"X-MCP-Tools": "get_system,portal_page"}) == [
        "portal_page",
        "get_system",
    ]
    portal_only = over_gateway(gateway, {"X-MCP-Toolsets": "portal"})
    assert portal_only
    assert all(name.startswith("portal_") for name in portal_only)
    # Never wider than the gateway's own flags: submit_intel stays unserved.
    assert over_gateway(gateway, {"X-MCP-Tools": "submit_intel,get_health"}) == ["get_health"]
    assert "get_system" in over_gateway(gateway, {"X-MCP-Readonly": "true"})


def test_a_tool_left_out_by_the_headers_cannot_be_called(gateway: str) -> None:
    got = over_gateway(gateway, {"X-MCP-Tools": "portal_page"}, tool="get_health")
    assert got == ["portal_page", "called get_health: error"]


def test_an_unknown_name_in_a_header_is_refused(gateway: str) -> None:
    with pytest.raises(BaseException) as caught:  # noqa: PT011 - unwrapped below
        over_gateway(gateway, {"X-MCP-Tools": "get_sytem"})
    error: BaseException = caught.value
    while isinstance(error, BaseExceptionGroup):
        error = error.exceptions[0]
    assert isinstance(error, MCPError)
    assert "unknown tool get_sytem (did you mean get_system" in str(error)
