"""The one tool table: every tool that `svc-mcp` serves, lists and runs.

Rows are declared next to their backend (`portal_tools.tools`, `svc_mcp.tools.service`); this is
where they meet, and where `--toolsets`, `--read-only`, `--tools` and `--exclude-tools` choose among
them.
"""

from __future__ import annotations

import difflib
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


def parse_tool_names(text: str) -> frozenset[str]:
    """`get_system,get_orders` -> the names; raises ValueError naming each unknown one with the
    nearest names, and every name there is."""
    names = {name.strip() for name in text.split(",") if name.strip()}
    known = [spec.name for spec in TOOLS]
    unknown = sorted(names - set(known))
    if unknown or not names:
        said = [_with_nearest(name, known) for name in unknown] or ["(none given)"]
        raise ValueError(f"unknown tool {', '.join(said)}; the tools are {', '.join(known)}")
    return frozenset(names)


def _with_nearest(name: str, known: list[str]) -> str:
    near = difflib.get_close_matches(name, known, n=2)
    return f"{name} (did you mean {' or '.join(near)}?)" if near else name


def select_tools(
    tools: Collection[ToolSpec] = TOOLS,
    *,
    toolsets: Collection[Toolset] = TOOLSETS,
    read_only: bool = False,
    only: Collection[str] | None = None,
    excluded: Collection[str] = (),
) -> tuple[ToolSpec, ...]:
    """The rows of the given toolsets; with `read_only`, only those whose readOnlyHint is true;
    with `only`, only those named; never those `excluded`. Each narrows: none widens."""
    return tuple(
        spec
        for spec in tools
        if spec.toolset in toolsets
        and (spec.hints.read_only or not read_only)
        and (only is None or spec.name in only)
        and spec.name not in excluded
    )
