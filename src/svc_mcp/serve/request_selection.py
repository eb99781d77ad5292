"""The tools one HTTP request may see and call, from its headers (github-mcp-server's remote
convention): `X-MCP-Toolsets: portal,service`, `X-MCP-Tools: get_system,get_orders` and
`X-MCP-Readonly: true`. They narrow what the gateway serves (its own `--toolsets`, `--read-only`,
`--tools`, `--exclude-tools`) and never widen it: a name the gateway does not serve stays unserved.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from svc_mcp.core.toolspec import ToolSpec
from svc_mcp.tools.table import TOOLSETS, parse_tool_names, parse_toolsets, select_tools

TOOLS_HEADER = "x-mcp-tools"
TOOLSETS_HEADER = "x-mcp-toolsets"
READONLY_HEADER = "x-mcp-readonly"
_TRUE, _FALSE = ("true", "1", "yes"), ("false", "0", "no", "")

Narrowing = Callable[[object], frozenset[str] | None]
"""The names a request (Starlette's, or None off HTTP) may use; None: all that are served."""


class SelectionRefused(ValueError):
    """A selection header names something unknown; the message says what there is."""


def narrowing(served: Sequence[ToolSpec]) -> Narrowing:
    """What each request's selection headers leave of `served`."""

    def names_for(request: object) -> frozenset[str] | None:
        headers = getattr(request, "headers", None)
        if not isinstance(headers, Mapping):
            return None
        return selected_names(served, headers)

    return names_for


def selected_names(served: Sequence[ToolSpec], headers: Mapping[str, str]) -> frozenset[str] | None:
    """The served names the headers leave (None when no selection header is sent)."""
    toolsets, tools, readonly = (headers.get(name) for name in _HEADERS)
    if toolsets is None and tools is None and readonly is None:
        return None
    try:
        chosen_sets = parse_toolsets(toolsets) if toolsets is not None else frozenset(TOOLSETS)
        only = parse_tool_names(tools) if tools is not None else None
    except ValueError as exc:
        raise SelectionRefused(f"{_named(toolsets, tools)}: {exc}") from None
    flag = (readonly or "").strip().lower()
    if flag not in _TRUE + _FALSE:
        raise SelectionRefused(f"X-MCP-Readonly takes true or false, not {flag[:20]!r}")
    selected = select_tools(served, toolsets=chosen_sets, read_only=flag in _TRUE, only=only)
    return frozenset(spec.name for spec in selected)


_HEADERS = (TOOLSETS_HEADER, TOOLS_HEADER, READONLY_HEADER)


def _named(toolsets: str | None, tools: str | None) -> str:
    return "X-MCP-Tools" if tools is not None and toolsets is None else "X-MCP-Toolsets/X-MCP-Tools"
