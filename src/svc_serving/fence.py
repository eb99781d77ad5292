"""The small reaches into libraries' internals that no public route replaces, each with why, all
in one place: the standard library's (argparse, http.client, logging) and httpx's.
tests/architecture/test_private_names.py allows them here only, and
tests/architecture/test_fences.py asserts what each relies on, so that an upgrade that changes one
fails there first. uvicorn's and Starlette's larger reaches have fences of their own
(`svc_serving.bounded`, and the stubs' router).

Nothing is imported here at start: each command line imports this module, and pays only for what
it calls.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import argparse
    import http.client
    import socket


def subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """The commands of `parser`, by name: argparse keeps them in its private subparsers action
    and offers no way to list them (a mistyped command's suggestions need them)."""
    import argparse

    return {
        name: command
        for action in parser._actions
        if isinstance(action, argparse._SubParsersAction)
        for name, command in action.choices.items()
    }


def own_options(parser: argparse.ArgumentParser) -> list[str]:
    """The option strings of `parser` itself, in the order they were added (argparse has no
    public list of them either)."""
    return list(parser._option_string_actions)


CLICK_HELP_COLUMN = 34
"""Where Click's plain help starts an option's text at most: 2 of indent, 30 of option, 2 apart."""


def click_shaped_help(prog: str, width: int | None) -> argparse.HelpFormatter:
    """An argparse help formatter that writes Click's plain help (what the typer command lines
    print when piped): `Usage: prog [OPTIONS] COMMAND [ARGS]...`, the description indented,
    `Options:` and `Commands:` with one line per entry, `-h, --help  Show this message and exit.`
    argparse offers only the names of its formatter classes, so the shape is set here, through
    the formatter's hooks; descriptions stay as written (a command in the text stays whole)."""
    formatter: argparse.HelpFormatter = _click_shaped_class()(
        prog, max_help_position=CLICK_HELP_COLUMN, width=width
    )
    return formatter


@functools.cache  # argparse makes a formatter for every option it adds: one class for all
def _click_shaped_class() -> type[argparse.HelpFormatter]:
    import argparse

    class ClickShapedHelp(argparse.RawDescriptionHelpFormatter):
        def _format_usage(self, usage: Any, actions: Any, groups: Any, prefix: Any) -> str:
            if prefix == "":  # argparse naming a command's parser ("svc-mcp tools"), not help
                return super()._format_usage(usage, actions, groups, prefix)
            words = [self._prog]
            if any(action.option_strings for action in actions):
                words.append("[OPTIONS]")
            if any(isinstance(action, argparse._SubParsersAction) for action in actions):
                words.append("COMMAND [ARGS]...")
            return f"Usage: {' '.join(words)}\n\n"

        def start_section(self, heading: str | None) -> None:
            super().start_section((heading or "")[:1].upper() + (heading or "")[1:])

        def _format_action(self, action: argparse.Action) -> str:
            if isinstance(action, argparse._SubParsersAction):  # the commands, one a line
                return "".join(map(self._format_action, action._get_subactions()))
            return super()._format_action(action)

        def _get_help_string(self, action: argparse.Action) -> str | None:
            if isinstance(action, argparse._HelpAction):
                return "Show this message and exit."
            text = action.help
            return f"{text}  [required]" if action.required and action.option_strings else text

        def _metavar_formatter(self, action: argparse.Action, default_metavar: str) -> Any:
            if action.metavar is None and action.choices is not None and action.option_strings:
                shown = f"<{'|'.join(map(str, action.choices))}>"  # as the typer lines show them
                return lambda size: (shown,) * size
            return super()._metavar_formatter(action, default_metavar)

        def _fill_text(self, text: str, width: int, indent: str) -> str:
            return super()._fill_text(text, width, indent + "  ")

    return ClickShapedHelp


def connect_with(
    connection: http.client.HTTPConnection, create: Callable[..., socket.socket]
) -> None:
    """`connection` opens its socket with `create`, called as `socket.create_connection` is:
    http.client takes no other way to bound the name lookup by the call's deadline, and
    `HTTPSConnection` still wraps the socket in TLS after it."""
    connection._create_connection = create  # type: ignore[attr-defined]


def skip_caller_lookup() -> None:
    """Log records no longer look up their caller's frame: the logging docs' "Optimization"
    names this switch (`logging._srcfile = None`), and nothing public replaces it."""
    import logging

    logging._srcfile = None


def skip_httpx_command_line() -> None:
    """httpx imports its own command line (click, rich, pygments: 3 MB and tens of
    milliseconds) whenever rich is installed, and falls back to a stub when that module cannot
    be imported; no serving process runs httpx's command line. Before httpx is imported."""
    blocked: Any = None
    sys.modules.setdefault("httpx._main", blocked)
