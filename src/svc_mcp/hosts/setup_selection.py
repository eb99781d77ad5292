"""Which tools an installed entry serves: `install --tools` and `--exclude-tools`, as the local
entry's own arguments, or for a gateway entry (`--http`) as the `X-MCP-Tools` header the gateway
narrows each request by."""

from __future__ import annotations

from typing import Any

from svc_mcp.hosts.errors import InstallError
from svc_mcp.hosts.runners import SELECTION_OPTIONS
from svc_mcp.hosts.table import Host
from svc_mcp.tools.table import TOOLS, parse_tool_names


def tool_selection(tools: str | None, exclude_tools: str | None) -> list[str]:
    """The arguments the entry adds (`--tools a,b`, `--exclude-tools c`), names checked."""
    selection: list[str] = []
    for option, text in zip(SELECTION_OPTIONS, (tools, exclude_tools), strict=True):
        if text is None:
            continue
        try:
            names = parse_tool_names(text)
        except ValueError as error:
            raise InstallError(f"{option}: {error}") from None
        selection += [option, ",".join(spec.name for spec in TOOLS if spec.name in names)]
    return selection


def with_selection_headers(
    host: Host, entry: dict[str, Any], selection: list[str]
) -> dict[str, Any]:
    """A gateway entry with the selection as `X-MCP-Tools` (the gateway has no exclude header:
    the names left are written)."""
    if not selection:
        return entry
    chosen = dict(zip(selection[::2], selection[1::2], strict=True))
    only = set(chosen.get("--tools", ",".join(spec.name for spec in TOOLS)).split(","))
    only -= set(chosen.get("--exclude-tools", "").split(","))
    if not only:
        raise InstallError("--tools and --exclude-tools leave no tool")
    headers = dict(entry.get(host.headers_key, {}))
    headers["X-MCP-Tools"] = ",".join(spec.name for spec in TOOLS if spec.name in only)
    return {**entry, host.headers_key: headers}
