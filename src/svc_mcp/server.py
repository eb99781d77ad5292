"""The MCP server, built from the tool table with the official SDK's `MCPServer`.

Each row becomes a tool with the row's title, description, annotations, input schema (from its
parameters) and output schema (from its record model). A call runs `call_tool`; a failure comes
back as a tool error (`isError`) whose text says what to do. This is the only module, with
`svc_mcp.gateway`, that imports `mcp`.
"""

from __future__ import annotations

from collections.abc import Sequence
from importlib.metadata import version
from typing import Any

import httpx
from mcp.server import MCPServer
from mcp.server.mcpserver.tools import Tool
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase, FuncMetadata
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import ConfigDict

from portal_tools.calls import call_tool
from portal_tools.client import new_http_client
from portal_tools.errors import CallError
from portal_tools.schemas import output_schema
from portal_tools.toolspec import ToolSpec

SERVER_NAME = "svc-mcp"
INSTRUCTIONS = (
    "Tools for two services. portal_*: the service portal's catalog, how to reach each service "
    "(MCP, web, CLI), the portal page, the caller's identity, and audit trails that need the "
    "auditor role. get_*: the trading data service's state, positions, orders, fills, P&L, risk, "
    "events and intel inbox (start with get_system). submit_intel forwards a pre-signed intel "
    "envelope and is the only write; nothing here can pause, resume, flatten or place orders. "
    "Lists are paged: pass next_cursor back as cursor."
)


class _RawArguments(ArgModelBase):
    """Hands the arguments over as the client sent them: each row checks its own with its
    `Param`s, so a bad one is a tool error in the product's words (`invalid_argument: ...`),
    raised before anything is sent, rather than the SDK's validation text."""

    model_config = ConfigDict(extra="allow")

    def model_dump_one_level(self) -> dict[str, Any]:
        return {"arguments": dict(self.__pydantic_extra__ or {})}


def build_server(specs: Sequence[ToolSpec], http: httpx.AsyncClient) -> MCPServer[Any]:
    """An MCPServer serving `specs`; every call goes through the shared `http` client."""
    return MCPServer(
        SERVER_NAME,
        version=version("svc-mcp"),
        instructions=INSTRUCTIONS,
        tools=[_tool(spec, http) for spec in specs],
        log_level="WARNING",
    )


def _tool(spec: ToolSpec, http: httpx.AsyncClient) -> Tool:
    defaults = spec.agent_defaults()

    async def run(arguments: dict[str, Any]) -> CallToolResult:
        given = {name: value for name, value in arguments.items() if value is not None}
        try:
            result = await call_tool(spec, {**defaults, **given}, http)
        except CallError as error:
            text = f"{error.kind}: {error}"
            return CallToolResult(
                content=[TextContent(type="text", text=text)],
                structured_content=error.as_dict(),
                is_error=True,
            )
        return CallToolResult(
            content=[TextContent(type="text", text=result.text(spec.name))],
            structured_content=result.structured(),
        )

    return Tool(
        fn=run,
        name=spec.name,
        title=spec.title,
        description=spec.description,
        parameters=spec.input_schema(),
        fn_metadata=FuncMetadata(arg_model=_RawArguments, output_schema=output_schema(spec)),
        is_async=True,
        context_kwarg=None,
        annotations=ToolAnnotations.model_validate(spec.hints.annotations()),
    )


async def serve_stdio(specs: Sequence[ToolSpec]) -> None:
    async with new_http_client() as http:
        await build_server(specs, http).run_stdio_async()
