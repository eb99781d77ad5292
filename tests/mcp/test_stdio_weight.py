"""What a stdio server loads before its first call (issue 36, issue 33 finding 12): agent hosts
start one per session, so start-up loads only what initialize and tools/list need."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from mcp import Client, ClientSession, StdioServerParameters, stdio_client

from svc_mcp.core.client import LazyClient
from svc_mcp.serve.server import build_server
from svc_mcp.tools.table import TOOLS
from tests.mcp.conftest import SVC_MCP, PortalStub, process_env
from tests.support import closed_url


def test_the_pooled_client_is_made_by_the_first_call_only(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))

    async def run() -> tuple[bool, bool, bool]:
        async with LazyClient() as http, Client(build_server(TOOLS, http)) as client:
            await client.list_tools()
            listed = http.made
            result = await client.call_tool("portal_page", {})
            return listed, http.made, result.is_error

    # Nothing listens there: the call fails as unreachable, after making the client.
    with closed_url() as nowhere:
        monkeypatch.setenv("PORTAL_API_BASE", nowhere)
        listed, called, failed = asyncio.run(run())
    assert (listed, called, failed) == (False, True, True)


@pytest.mark.e2e
def test_a_ready_stdio_server_has_not_loaded_httpx_command_line(
    portal: PortalStub, tmp_path: Path
) -> None:
    """httpx imports its command line (rich, pygments) whenever rich is installed; a serving
    process never runs it. The server's own import log (PYTHONPROFILEIMPORTTIME) says what it
    loaded until it answered tools/list and a call."""
    log = tmp_path / "imports.log"
    variables = portal.env("auditor", PYTHONPROFILEIMPORTTIME="1", HOME=str(tmp_path))
    server = StdioServerParameters(command=SVC_MCP, args=[], env=process_env(variables))

    async def run() -> str:
        with log.open("w") as errlog:
            async with (
                stdio_client(server, errlog=errlog) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                await session.list_tools()
                result = await session.call_tool("portal_whoami", {})
                assert not result.is_error, result.content
                return str(result.structured_content)

    assert "alice" in asyncio.run(run())
    loaded = {line.rsplit("|", 1)[-1].strip() for line in log.read_text().splitlines()}
    assert {"httpx", "mcp"} <= loaded
    assert not {"rich", "pygments"} & loaded
