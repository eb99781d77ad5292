"""One help style for every command line of the package: rich on a terminal; piped (to a pager,
grep or a file), click's plain text, unwrapped, so no line breaks inside a word, a choice or a
command someone copies."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import argparse

UNWRAPPED = 100_000
"""A line width no help text reaches."""


def on_terminal() -> bool:
    return sys.stdout.isatty()


def typer_style() -> dict[str, Any]:
    """Keyword arguments for `typer.Typer(...)` (decided when the app is built, at start-up)."""
    if on_terminal():
        return {"rich_markup_mode": "rich"}
    return {
        "rich_markup_mode": None,
        "context_settings": {"max_content_width": UNWRAPPED, "terminal_width": UNWRAPPED},
    }


def argparse_width() -> int | None:
    """The width argparse formats help to: the terminal's on one (None), else unwrapped."""
    return None if on_terminal() else UNWRAPPED


def argparse_formatter(prog: str) -> argparse.HelpFormatter:
    """The `formatter_class` of every argparse command line: descriptions as written; options to
    the terminal's width, or unwrapped when piped."""
    import argparse

    return argparse.RawDescriptionHelpFormatter(prog, width=argparse_width())
