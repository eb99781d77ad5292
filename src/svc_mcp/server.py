"""The MCP server, built from the tool table on the official SDK's low-level `Server`.

Each row becomes a tool with the row's title, description, annotations, input schema (from its
parameters) and output schema (from its record model). Only the tool handlers are registered, so
capabilities claim tools and nothing else, and every other method answers -32601. A call hands
the arguments over as sent to `call_tool`, where the row's `Param`s check them; a failure comes
back as a tool error (`isError`) whose text says what to do. This is the only module, with
`svc_mcp.gateway`, that imports `mcp`.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from importlib.metadata import version
from typing import Any

import anyio
import httpx
from mcp.server import CacheHint, Server, ServerRequestContext
from mcp.server.request_state import RequestStateBoundary, RequestStateSecurity
from mcp.server.stdio import stdio_server
from mcp.types import (
    CallToolRequestParams,
    CallToolResult,
    ListToolsResult,
    PaginatedRequestParams,
    TextContent,
    Tool,
    ToolAnnotations,
)

from svc_client.calls import call_tool
from svc_client.client import new_http_client
from svc_client.errors import CallError, NotFound
from svc_client.schemas import output_schema
from svc_client.toolspec import ToolSpec
from svc_mcp.spans import RequestSpans

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

BACKEND_SLOTS = 16
"""At most this many backend requests of one server in flight; more calls wait their turn, first
come first served. Below httpx's 20 kept-alive connections, so no call opens a new connection,
and httpcore's pool bookkeeping, which grows with requests times connections, stays small (with
50 calls in flight, a profile of the gateway put it at about a quarter of its CPU)."""


log = logging.getLogger(__name__)


def build_server(
    specs: Sequence[ToolSpec], http: httpx.AsyncClient, *, transport: str = "pipe"
) -> Server[Any]:
    """A low-level Server serving `specs`, and nothing else; every call goes through the shared
    `http` client. `transport` (`pipe`, `tcp`) is what its spans say it is served over."""
    tools = {spec.name: _tool(spec) for spec in specs}
    rows = {spec.name: (spec, spec.agent_defaults()) for spec in specs}
    slots = anyio.Semaphore(BACKEND_SLOTS)
    listing = ListToolsResult(tools=list(tools.values()))

    async def list_tools(
        ctx: ServerRequestContext[Any], params: PaginatedRequestParams | None
    ) -> ListToolsResult:
        return listing

    async def call(ctx: ServerRequestContext[Any], params: CallToolRequestParams) -> CallToolResult:
        row = rows.get(params.name)
        if row is None:
            # Like every other failure, with a kind; the name is the caller's, not echoed.
            return _error_result(NotFound("no tool of that name here; tools/list names them"))
        spec, defaults = row
        given = {
            name: value for name, value in (params.arguments or {}).items() if value is not None
        }
        try:
            async with slots:
                return await _run(spec, {**defaults, **given}, http)
        except Exception:
            # A bug, not a failure the product names: its text stays in the server's log.
            log.exception("Tool %r raised an unexpected exception", spec.name)
            return _failure(f"Error executing tool {spec.name}")

    def input_schema(name: str) -> dict[str, Any] | None:
        tool = tools.get(name)
        return None if tool is None else tool.input_schema

    # The list is the same for every caller (no tool depends on who asks), so it may be shared.
    hint = CacheHint(ttl_ms=TOOL_LIST_TTL_MS, scope="public")
    server: Server[Any] = Server(
        SERVER_NAME,
        version=version("svc-mcp"),
        instructions=INSTRUCTIONS,
        cache_hints={"tools/list": hint, "server/discover": hint},
        get_tool_input_schema=input_schema,
        on_list_tools=list_tools,
        on_call_tool=call,
    )
    # No tool ever asks the client for input, so any `requestState` a client sends is one this
    # server did not mint: the SDK's boundary refuses it (-32602), as `MCPServer` does.
    # Our span middleware replaces the SDK's default one (svc_mcp.spans says why).
    server.middleware = [
        RequestSpans(transport),
        RequestStateBoundary(RequestStateSecurity.ephemeral(), default_audience=SERVER_NAME),
    ]
    return server


def _tool(spec: ToolSpec) -> Tool:
    return Tool(
        name=spec.name,
        title=spec.title,
        description=spec.description,
        input_schema=spec.input_schema(),
        output_schema=output_schema(spec),
        annotations=ToolAnnotations.model_validate(spec.hints.annotations()),
    )


async def _run(
    spec: ToolSpec, arguments: dict[str, Any], http: httpx.AsyncClient
) -> CallToolResult:
    try:
        result = await call_tool(spec, arguments, http)
    except CallError as error:
        return _error_result(error)
    return CallToolResult(
        content=[TextContent(type="text", text=result.text(spec.name))],
        structured_content=result.structured(),
    )


def _error_result(error: CallError) -> CallToolResult:
    return CallToolResult(
        content=[TextContent(type="text", text=f"{error.kind}: {error.told()}")],
        structured_content=error.as_dict(),
        is_error=True,
    )


def _failure(text: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)


async def serve_stdio(specs: Sequence[ToolSpec]) -> None:
    async with new_http_client() as http, stdio_server() as (read, write):
        server = build_server(specs, http)
        await server.run(read, write, server.create_initialization_options())
