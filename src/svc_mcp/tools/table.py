"""The one tool table: every tool that `svc-mcp` serves, lists and runs.

Rows are declared next to their backend (`portal_tools.tools`, `svc_mcp.tools.service`); this is
where they meet, and where `--toolsets` and `--read-only` choose among them.
"""

from __future__ import annotations

from collections.abc import Collection

from portal_tools.tools import PORTAL_TOOLS
from svc_mcp.core.backends import Toolset
from svc_mcp.core.toolspec import ToolSpec
from svc_mcp.tools.service import SERVICE_TOOLS

TOOLS: tuple[ToolSpec, ...] = PORTAL_TOOLS + SERVICE_TOOLS
TOOLSETS: tuple[Toolset, ...] = tuple(Toolset)
FORMER_NAMES = {"analytics": Toolset.SERVICE}
"""Toolset names of earlier releases, still accepted so that existing host entries keep working."""


def parse_toolsets(text: str) -> frozenset[Toolset]:
    """`portal,service` -> the toolsets; raises ValueError naming what is unknown."""
    given = {name.strip() for name in text.split(",") if name.strip()}
    names = {FORMER_NAMES.get(name, name) for name in given}
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
