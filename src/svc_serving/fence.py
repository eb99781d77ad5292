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
