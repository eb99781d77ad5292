"""The values svc-mcp's own options take, and the tool selection options (`--toolsets`,
`--read-only`, `--tools`, `--exclude-tools`) it accepts before the command and after `tools`."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TYPE_CHECKING

from svc_mcp.tools.table import TOOLSETS, parse_tool_names, parse_toolsets

if TYPE_CHECKING:
    from svc_mcp.core.backends import Toolset


def add_selection(parser: argparse.ArgumentParser, *, defaults: bool) -> None:
    """--toolsets, --read-only, --tools and --exclude-tools, accepted before the command and after
    `tools`."""
    parser.add_argument(
        "--toolsets",
        type=_toolsets,
        default=frozenset(TOOLSETS) if defaults else argparse.SUPPRESS,
        metavar=",".join(TOOLSETS),
        help="only the tools of these toolsets (default: all)",
    )
    parser.add_argument(
        "--read-only",
        action="store_true",
        default=False if defaults else argparse.SUPPRESS,
        help="drop the tools whose readOnlyHint is false",
    )
    parser.add_argument(
        "--tools",
        type=_tool_names,
        default=None if defaults else argparse.SUPPRESS,
        metavar="NAME,...",
        help="only these tools (of those the other options select)",
    )
    parser.add_argument(
        "--exclude-tools",
        type=_tool_names,
        default=frozenset() if defaults else argparse.SUPPRESS,
        metavar="NAME,...",
        help="not these tools",
    )


def _tool_names(text: str) -> frozenset[str]:
    try:
        return parse_tool_names(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _toolsets(text: str) -> frozenset[Toolset]:
    try:
        return parse_toolsets(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def bounded_int(minimum: int | None, maximum: int | None) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
            raise argparse.ArgumentTypeError(f"{value} is not from {minimum} to {maximum}")
        return value

    return parse


def url_path(text: str) -> str:
    if not text.startswith("/"):
        raise argparse.ArgumentTypeError("the path must start with /")
    return text
