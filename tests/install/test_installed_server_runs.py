"""What `svc-mcp install` writes starts a working server in every host: each entry is read back
from the file in the host's own format, its command run (uvx replaced by this test environment's
own svc-mcp) with its env, and the tools listed and called with the official MCP client."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client

from svc_mcp.hosts.runners import Source, runner_env
from svc_mcp.tools.table import TOOLS
from tests.install.conftest import HOST_NAMES, Home, RunCli, servers_of
from tests.mcp.conftest import PortalStub

pytestmark = pytest.mark.e2e

SOURCES: tuple[Source, ...] = ("github",)  # uvx (the fake) ignores --from


async def tools_and_identity(entry: dict[str, Any]) -> tuple[list[str], Any]:
    server = StdioServerParameters(command=entry["command"], args=entry["args"], env=entry["env"])
    async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        tools = await session.list_tools()
        whoami = await session.call_tool("portal_whoami", {})
        return [tool.name for tool in tools.tools], whoami.structured_content


def test_every_client_config_starts_a_working_server(
    portal: PortalStub, fake_home: Home, run_cli: RunCli, fake_uvx: Path
) -> None:
    env = {"PORTAL_API_BASE": portal.base_url, "PORTAL_SESSION_TOKEN": portal.tokens["auditor"]}
    entries: dict[str, dict[str, Any]] = {}
    for index, client in enumerate(HOST_NAMES):
        source = SOURCES[index % len(SOURCES)]
        args = ("install", "--client", client, "--uvx", str(fake_uvx), "--source", source)
        result = run_cli(*args, env=env)
        assert result.returncode == 0, result.stderr
        entries[client] = servers_of(client, fake_home.user_file(client))["svc"]
        assert entries[client]["command"] == str(fake_uvx)
        # The uvx it runs trusts the system's certificates (a proxy that re-signs TLS).
        assert entries[client]["env"] == env | runner_env([str(fake_uvx)])

    async def all_sessions() -> list[tuple[list[str], Any]]:
        return await asyncio.gather(*(tools_and_identity(entries[c]) for c in HOST_NAMES))

    for names, identity in asyncio.run(all_sessions()):
        assert names == [spec.name for spec in TOOLS]
        assert identity == {"id": "alice", "kind": "human", "role": "auditor"}
