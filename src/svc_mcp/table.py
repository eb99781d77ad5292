"""The one tool table: every tool that `svc-mcp` serves, lists and runs.

Rows are declared next to their backend (`portal_tools.tools`, `svc_mcp.analytics`); this is
where they meet, and where `--toolsets` and `--read-only` choose among them.
"""

from __future__ import annotations

from collections.abc import Collection

from portal_tools.backends import Toolset
from portal_tools.tools import PORTAL_TOOLS
from portal_tools.toolspec import ToolSpec
from svc_mcp.analytics import ANALYTICS_TOOLS

TOOLS: tuple[ToolSpec, ...] = PORTAL_TOOLS + ANALYTICS_TOOLS
TOOLSETS: tuple[Toolset, ...] = tuple(Toolset)


def parse_toolsets(text: str) -> frozenset[Toolset]:
    """`portal,analytics` -> the toolsets; raises ValueError naming what is unknown."""
    names = {name.strip() for name in text.split(",") if name.strip()}
    unknown = sorted(names - {toolset.value for toolset in Toolset})
    if unknown or not names:
        raise ValueError(
            f"unknown toolset {', '.join(unknown) or '(none given)'}; choose from "
            f"{', '.join(TOOLSETS)}"
        )
    return frozenset(Toolset(name) for name in names)


def select_tools(
    tools: Collection[ToolSpec] = TOOLS,
    *,
    toolsets: Collection[Toolset] = TOOLSETS,
    read_only: bool = False,
) -> tuple[ToolSpec, ...]:
    """The rows of the given toolsets; with `read_only`, only those whose readOnlyHint is true."""
    return tuple(
        spec
        for spec in tools
        if spec.toolset in toolsets and (spec.hints.read_only or not read_only)
    )
