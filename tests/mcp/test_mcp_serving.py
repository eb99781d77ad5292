"""`svc-mcp` over stdio with the official MCP client: the flags that choose the tools, and tool
errors for arguments outside the input schema."""

from __future__ import annotations

import asyncio
import re

from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.types import CallToolResult

from portal_tools.tools import PORTAL_TOOLS
from svc_mcp.serve.untrusted import QUOTED_MARK
from svc_mcp.tools.service import SERVICE_TOOLS
from svc_mcp.tools.table import TOOLS
from tests.mcp.conftest import SVC_MCP, PortalStub


async def listed_and_called(
    variables: dict[str, str], args: list[str], calls: list[tuple[str, dict[str, object]]]
) -> tuple[list[str], list[CallToolResult]]:
    server = StdioServerParameters(command=SVC_MCP, args=args, env=variables)
    async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        tools = await session.list_tools()
        results = [await session.call_tool(name, arguments) for name, arguments in calls]
        return [tool.name for tool in tools.tools], results


def test_toolsets_and_read_only_choose_what_is_served(portal: PortalStub) -> None:
    """--toolsets picks whole toolsets; --read-only drops submit_intel, the only writing row."""

    async def three_servers() -> list[list[str]]:
        runs = await asyncio.gather(
            listed_and_called(portal.env(), ["--toolsets", "analytics"], []),
            listed_and_called(portal.env(), ["--read-only"], []),
            listed_and_called(portal.env(), ["--toolsets", "portal", "--read-only"], []),
        )
        return [names for names, _ in runs]

    analytics, read_only, portal_read_only = asyncio.run(three_servers())
    every_portal_tool = [spec.name for spec in PORTAL_TOOLS]
    assert analytics == [spec.name for spec in SERVICE_TOOLS]
    assert read_only == [spec.name for spec in TOOLS if spec.name != "submit_intel"]
    assert portal_read_only == every_portal_tool


def test_arguments_outside_the_schema_are_tool_errors(portal: PortalStub) -> None:
    calls: list[tuple[str, dict[str, object]]] = [
        ("portal_catalog", {"limit": 0}),
        ("portal_catalog", {"offset": 5}),
        ("portal_catalog", {"cursor": "!!"}),
        ("portal_catalog", {"limit": "1"}),
    ]
    _, (too_small, unknown, bad_cursor, numeric_text) = asyncio.run(
        listed_and_called(portal.env(), [], calls)
    )
    for result, says, hint in (
        (too_small, "invalid_argument: limit must be from 1 to 1000, not 0", "limit"),
        (unknown, "invalid_argument: portal_catalog takes no argument offset", "offset"),
        (bad_cursor, "bad_request: the portal refused GET /api/catalog: HTTP 400", None),
    ):
        assert result.is_error
        text = result.content[0].text  # type: ignore[union-attr]
        assert text.startswith(says)
        assert result.structured_content is not None
        assert result.structured_content["kind"] == says.split(":")[0]
        # The text adds the id of a backend request that failed (docs/observability.md), and
        # the marker of the backend's own words where it quotes them (svc_mcp.serve.untrusted).
        marker = QUOTED_MARK if "untrusted" in result.structured_content else ""
        assert f"{result.structured_content['kind']}: {result.structured_content['message']}" == (
            re.sub(r" \(request id [0-9a-f]{16,32}\)$", "", text).removesuffix(marker)
        )
        assert result.structured_content.get("hint") == hint
    assert not numeric_text.is_error
    assert numeric_text.structured_content is not None
    assert len(numeric_text.structured_content["result"]) == 1
