"""The MCP server, built from the tool table on the official SDK's low-level `Server`.

Each row becomes a tool with the row's title, description, annotations, input schema (from its
parameters) and output schema (from its record model). Only the tool handlers are registered, so
capabilities claim tools and nothing else, and every other method answers -32601. A call hands
the arguments over as sent to `call_tool`, where the row's `Param`s check them; a failure comes
back as a tool error (`isError`) whose text says what to do.

`mcp` is imported by these only: the MCP face (`svc_mcp.serve`), the demo's client session
(`svc_mcp.demo`) and doctor's probe sessions (`svc_mcp.hosts.probe_sessions`); never by the core,
the rows or the command line, so `svc-mcp tools` and a call from the shell never load it
(tests/architecture/test_stated_rules.py holds this sentence to the code).
"""

from __future__ import annotations

import difflib
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from importlib.metadata import version
from typing import TYPE_CHECKING, Any

import anyio
import httpx
from mcp import MCPError
from mcp.server import CacheHint, Server, ServerRequestContext
from mcp.server.apps import APP_MIME_TYPE, EXTENSION_ID, ResourceCsp, client_supports_apps
from mcp.server.request_state import RequestStateBoundary, RequestStateSecurity
from mcp.server.stdio import stdio_server
from mcp.types import (
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
    CallToolRequestParams,
    CallToolResult,
    ContentBlock,
    ListResourcesResult,
    ListToolsResult,
    PaginatedRequestParams,
    ReadResourceRequestParams,
    ReadResourceResult,
    Resource,
    TextContent,
    TextResourceContents,
    Tool,
    ToolAnnotations,
)

from svc_mcp.core.backends import BACKENDS
from svc_mcp.core.calls import call_tool
from svc_mcp.core.client import LazyClient
from svc_mcp.core.errors import CallError, NotFound
from svc_mcp.core.settings import TIMEOUT_SECONDS, timeout_seconds
from svc_mcp.core.toolspec import ToolSpec
from svc_mcp.serve import untrusted
from svc_mcp.serve.caller_budget import CallerBudgets, caller_key
from svc_mcp.serve.request_selection import Narrowing, SelectionRefused
from svc_mcp.serve.schemas import output_schema
from svc_mcp.serve.spans import RequestSpans
from svc_mcp.serve.stdio_stop import AnsweringStream, stdin_lines, stop_on_sigterm
from svc_mcp.serve.views import ViewDocument, view_documents, view_uri

if TYPE_CHECKING:
    from svc_mcp.serve.oauth.portal_identity import OnBehalf

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

log = logging.getLogger(__name__)


def build_server(
    specs: Sequence[ToolSpec],
    http: httpx.AsyncClient | Callable[[], httpx.AsyncClient],
    *,
    transport: str = "pipe",
    narrow: Narrowing | None = None,
    on_behalf: OnBehalf | None = None,
    budgets: CallerBudgets | None = None,
) -> Server[Any]:
    """A low-level Server serving `specs`, and nothing else; every call goes through the shared
    `http` client (or the one `http()` makes on first use, `LazyClient`). `transport` (`pipe`,
    `tcp`) is what its spans say it is served over. `narrow` (the gateway's selection headers)
    leaves each request a part of `specs`. `on_behalf`: the gateway presents each OAuth caller to
    the portal as themselves; `budgets`: each OAuth caller's calls are counted against their own
    budget (svc_mcp.serve.caller_budget)."""
    client = _always(http) if isinstance(http, httpx.AsyncClient) else http
    tools = {spec.name: _tool(spec) for spec in specs}
    rows = {spec.name: (spec, spec.agent_defaults()) for spec in specs}
    # Per backend (`Backend.slots`): a hung backend holds its own slots only.
    slots = {backend.name: anyio.Semaphore(backend.slots) for backend in BACKENDS}
    listing = ListToolsResult(tools=list(tools.values()))
    views = view_documents(specs)
    # For a client that declared MCP Apps: the same list, each view tool linked to its view. It
    # differs by what the client declared, so no cache may hand it to another client.
    listing_with_views = ListToolsResult(
        tools=[
            _with_view(tool) if view_uri(tool.name) in views else tool for tool in tools.values()
        ],
        cache_scope="private",
        ttl_ms=TOOL_LIST_TTL_MS,
    )

    def allowed(ctx: ServerRequestContext[Any]) -> frozenset[str] | None:
        if narrow is None:
            return None
        try:
            return narrow(ctx.request)
        except SelectionRefused as refused:
            raise MCPError(code=INVALID_PARAMS, message=str(refused)) from None

    async def list_tools(
        ctx: ServerRequestContext[Any], params: PaginatedRequestParams | None
    ) -> ListToolsResult:
        whole = listing_with_views if views and client_supports_apps(ctx) else listing
        names = allowed(ctx)
        if names is None:
            return whole
        narrowed = [tool for tool in whole.tools if tool.name in names]
        return ListToolsResult(tools=narrowed, cache_scope="private", ttl_ms=TOOL_LIST_TTL_MS)

    async def call(ctx: ServerRequestContext[Any], params: CallToolRequestParams) -> CallToolResult:
        names = allowed(ctx)
        row = rows.get(params.name) if names is None or params.name in names else None
        if row is None:
            # Like every other failure, with a kind; the name is the caller's, not echoed, but the
            # nearest names served are (a mistyped name, an older name).
            near = difflib.get_close_matches(params.name, list(names or rows), n=3)
            guess = f"did you mean {' or '.join(near)}? " if near else ""
            return _error_result(
                NotFound(f"no tool of that name here; {guess}tools/list names them")
            )
        spec, defaults = row
        given = {
            name: value for name, value in (params.arguments or {}).items() if value is not None
        }
        person = caller_key() if budgets is not None else None
        refused = budgets.admit(person) if budgets is not None and person is not None else None
        if refused is not None:
            return _error_result(refused)
        try:
            slot = slots[spec.backend.name]
            return await _run(spec, {**defaults, **given}, client(), slot, on_behalf)
        except Exception:
            # A bug, not a failure the product names: its text stays in the server's log.
            log.exception("Tool %r raised an unexpected exception", spec.name)
            return _failure(f"Error executing tool {spec.name}")
        finally:
            if budgets is not None and person is not None:
                budgets.release(person)

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
        **_view_handlers(views),
    )
    # Our span middleware takes the place of the SDK's default one (svc_mcp.serve.spans says why).
    server.middleware = [RequestSpans(transport)]
    if views:
        server.extensions[EXTENSION_ID] = {}
        server.middleware.append(ViewsForDeclaringClients())
    # No tool ever asks the client for input, so any `requestState` a client sends is one this
    # server did not mint: the SDK's boundary refuses it (-32602), as `MCPServer` does.
    server.middleware.append(
        RequestStateBoundary(RequestStateSecurity.ephemeral(), default_audience=SERVER_NAME)
    )
    return server


VIEW_TTL_MS = TOOL_LIST_TTL_MS
"""How long a client may keep a view or the list of views: they change only with the version."""

VIEW_CSP = ResourceCsp(connect_domains=[], resource_domains=[]).model_dump(
    by_alias=True, exclude_none=True
)
"""What a view may reach beyond its own document: nothing."""

VIEW_METHODS = frozenset({"resources/list", "resources/read"})


class ViewsForDeclaringClients:
    """Serves the views only to a client that declared MCP Apps (`io.modelcontextprotocol/ui`
    with the app MIME type): everyone else sees the capabilities, the list and the errors of a
    server without resources, byte for byte as before the views existed."""

    async def __call__(
        self,
        ctx: ServerRequestContext[Any],
        call_next: Callable[[ServerRequestContext[Any]], Awaitable[Any]],
    ) -> Any:
        if ctx.method == "initialize":
            declared = _declares_apps((ctx.params or {}).get("capabilities"))
        else:
            declared = client_supports_apps(ctx)
        if ctx.method in VIEW_METHODS and not declared:
            raise MCPError(code=METHOD_NOT_FOUND, message="Method not found", data=ctx.method)
        result = await call_next(ctx)
        if ctx.method in ("initialize", "server/discover") and isinstance(result, dict):
            return _capabilities_for(result, declared=declared)
        return result


def _declares_apps(capabilities: object) -> bool:
    extensions = capabilities.get("extensions") if isinstance(capabilities, dict) else None
    settings = extensions.get(EXTENSION_ID) if isinstance(extensions, dict) else None
    mime_types = settings.get("mimeTypes") if isinstance(settings, dict) else None
    return isinstance(mime_types, list) and APP_MIME_TYPE in mime_types


def _capabilities_for(result: dict[str, Any], *, declared: bool) -> dict[str, Any]:
    capabilities = dict(result.get("capabilities") or {})
    if declared:
        # The answer depends on what this client declared: no shared cache may keep it.
        return {**result, **({"cacheScope": "private"} if "cacheScope" in result else {})}
    capabilities.pop("resources", None)
    capabilities.pop("extensions", None)
    return {**result, "capabilities": capabilities}


def _view_handlers(views: dict[str, ViewDocument]) -> dict[str, Any]:
    """`resources/list` and `resources/read` over the views; none when there are none, so the
    capabilities claim no resources."""
    if not views:
        return {}
    listing = ListResourcesResult(
        resources=[
            Resource(
                uri=view.uri,
                name=view.tool,
                title=view.title,
                description=view.description,
                mime_type=APP_MIME_TYPE,
                size=len(view.html.encode("utf-8")),
                _meta={"ui": {"csp": VIEW_CSP}},
            )
            for view in views.values()
        ],
        ttl_ms=VIEW_TTL_MS,
        cache_scope="public",
    )
    contents = {
        uri: ReadResourceResult(
            contents=[
                TextResourceContents(
                    uri=uri,
                    mime_type=APP_MIME_TYPE,
                    text=view.html,
                    _meta={"ui": {"csp": VIEW_CSP, "prefersBorder": True}},
                )
            ],
            ttl_ms=VIEW_TTL_MS,
            cache_scope="public",
        )
        for uri, view in views.items()
    }

    async def list_resources(
        ctx: ServerRequestContext[Any], params: PaginatedRequestParams | None
    ) -> ListResourcesResult:
        return listing

    async def read_resource(
        ctx: ServerRequestContext[Any], params: ReadResourceRequestParams
    ) -> ReadResourceResult:
        found = contents.get(str(params.uri))
        if found is None:
            raise MCPError(
                code=INVALID_PARAMS,
                message=f"No view at {str(params.uri)[:200]}",
                data={"uri": str(params.uri)[:200]},
            )
        return found

    return {"on_list_resources": list_resources, "on_read_resource": read_resource}


def _with_view(tool: Tool) -> Tool:
    return tool.model_copy(update={"meta": {"ui": {"resourceUri": view_uri(tool.name)}}})


def _always(http: httpx.AsyncClient) -> Callable[[], httpx.AsyncClient]:
    return lambda: http


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
    spec: ToolSpec,
    arguments: dict[str, Any],
    http: httpx.AsyncClient,
    slot: anyio.Semaphore,
    on_behalf: OnBehalf | None = None,
) -> CallToolResult:
    delegate = on_behalf.delegate if on_behalf is not None else None
    try:
        result = await call_tool(spec, arguments, http, slot, delegate=delegate)
    except CallError as error:
        return _error_result(error)
    structured = untrusted.mark(spec.name, result.structured())
    text = replace(result, data=structured).text(spec.name)
    content: list[ContentBlock] = [TextContent(type="text", text=text)]
    if on_behalf is not None and (notice := on_behalf.notice(spec)) is not None:
        content.append(TextContent(type="text", text=notice))
    return CallToolResult(content=content, structured_content=structured)


def _error_result(error: CallError) -> CallToolResult:
    return CallToolResult(
        content=[TextContent(type="text", text=untrusted.error_text(error))],
        structured_content={**error.as_dict(), **untrusted.quoted_error(error.quoted)},
        is_error=True,
    )


def _failure(text: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)


async def serve_stdio(specs: Sequence[ToolSpec]) -> None:
    """Serves until the host closes stdin or sends SIGTERM; either way the calls already read
    are answered first (svc_mcp.serve.stdio_stop)."""
    lines = await stdin_lines(grace=stop_grace_seconds())
    async with LazyClient() as http, stdio_server(stdin=lines) as (read, write):  # type: ignore[arg-type]
        server = build_server(specs, http)
        if lines is None:
            await server.run(read, write, server.create_initialization_options())
            return
        async with anyio.create_task_group() as group:
            group.start_soon(stop_on_sigterm, lines)
            answering = AnsweringStream(write, lines)
            await server.run(read, answering, server.create_initialization_options())
            group.cancel_scope.cancel()


def stop_grace_seconds() -> float:
    """How long a stop waits for the calls in flight: longer than any one may take."""
    try:
        return timeout_seconds() + 1.0
    except CallError:  # a bad setting; each call reports it
        return TIMEOUT_SECONDS + 1.0
