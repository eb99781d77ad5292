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

import anyio
import httpx
from mcp.server import MCPServer
from mcp.server.caching import CacheHint
from mcp.server.mcpserver.tools import Tool
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase, FuncMetadata
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import ConfigDict

from portal_tools.calls import call_tool
from portal_tools.client import new_http_client
from portal_tools.errors import CallError, NotFound
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


TOOL_LIST_TTL_MS = 10 * 60 * 1000
"""How long a client may keep `tools/list` and `server/discover` (2026-07-28 cache hints). Both
change only when the process restarts with other toolsets or another version; ten minutes bounds
how long a client keeps an old list after such a restart."""

UNSERVED_METHODS = (
    "prompts/list",
    "prompts/get",
    "resources/list",
    "resources/templates/list",
    "resources/read",
)
"""Handlers `MCPServer` always registers although this server has no prompts or resources.
Dropped, so capabilities claim only tools and these methods answer -32601 (method not found)."""


BACKEND_SLOTS = 16
"""At most this many backend requests of one server in flight; more calls wait their turn, first
come first served. Below httpx's 20 kept-alive connections, so no call opens a new connection,
and httpcore's pool bookkeeping, which grows with requests times connections, stays small (with
50 calls in flight, a profile of the gateway put it at about a quarter of its CPU)."""


class _Server(MCPServer[Any]):
    """An unknown tool answers like every other failure: `<kind>: <message>` and `{kind,
    message}` (the SDK's own answer has no kind). The name is not echoed: it is the caller's."""

    def __init__(self, name: str, *, tools: list[Tool], **settings: Any) -> None:
        super().__init__(name, tools=tools, **settings)
        self._tool_names = frozenset(tool.name for tool in tools)

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        if name not in self._tool_names:
            return error_result(NotFound("no tool of that name here; tools/list names them"))
        return await super().call_tool(name, arguments, context)


def error_result(error: CallError) -> CallToolResult:
    return CallToolResult(
        content=[TextContent(type="text", text=f"{error.kind}: {error}")],
        structured_content=error.as_dict(),
        is_error=True,
    )


class _RawArguments(ArgModelBase):
    """Hands the arguments over as the client sent them: each row checks its own with its
    `Param`s, so a bad one is a tool error in the product's words (`invalid_argument: ...`),
    raised before anything is sent, rather than the SDK's validation text."""

    model_config = ConfigDict(extra="allow")

    def model_dump_one_level(self) -> dict[str, Any]:
        return {"arguments": dict(self.__pydantic_extra__ or {})}


def build_server(specs: Sequence[ToolSpec], http: httpx.AsyncClient) -> MCPServer[Any]:
    """An MCPServer serving `specs`, and nothing else; every call goes through the shared `http`
    client."""
    # The list is the same for every caller (no tool depends on who asks), so it may be shared.
    hint = CacheHint(ttl_ms=TOOL_LIST_TTL_MS, scope="public")
    slots = anyio.Semaphore(BACKEND_SLOTS)
    server = _Server(
        SERVER_NAME,
        version=version("svc-mcp"),
        instructions=INSTRUCTIONS,
        tools=[_tool(spec, http, slots) for spec in specs],
        log_level="WARNING",
        cache_hints={"tools/list": hint, "server/discover": hint},
        subscriptions=False,
    )
    # The SDK has no switch for these; capabilities are derived from the registered handlers.
    for method in UNSERVED_METHODS:
        server._lowlevel_server._request_handlers.pop(method, None)
    return server


def _tool(spec: ToolSpec, http: httpx.AsyncClient, slots: anyio.Semaphore) -> Tool:
    defaults = spec.agent_defaults()

    async def run(arguments: dict[str, Any]) -> CallToolResult:
        given = {name: value for name, value in arguments.items() if value is not None}
        try:
            async with slots:
                result = await call_tool(spec, {**defaults, **given}, http)
        except CallError as error:
            return error_result(error)
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
