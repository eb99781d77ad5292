"""Did you mean: the nearest option for a mistyped one (argparse says only that it is unknown)."""

from __future__ import annotations

import argparse
import difflib
import re

from svc_serving.fence import own_options, subcommands


def option_strings(parser: argparse.ArgumentParser) -> list[str]:
    """Every option of `parser` and of its commands (a tool's own options are its command's)."""
    found = own_options(parser)
    for command in subcommands(parser).values():
        found += [name for name in option_strings(command) if name not in found]
    return found


def near_options(message: str, parser: argparse.ArgumentParser) -> str:
    """argparse's `unrecognized arguments: ...` with the nearest option for each mistyped one."""
    options = option_strings(parser)
    guesses = []
    for word in message.removeprefix("unrecognized arguments: ").split():
        typed = word.partition("=")[0]
        if typed.startswith("--") and (near := difflib.get_close_matches(typed, options, n=1)):
            guesses.append(f"{typed}: did you mean {near[0]}?")
    return f"{message} ({'; '.join(guesses)})" if guesses else message


def near_commands(message: str, parser: argparse.ArgumentParser) -> str:
    """argparse's `invalid choice` for a mistyped command with the nearest commands of `parser`."""
    typed = re.match(r"argument <command>: invalid choice: '([^']*)'", message)
    if typed is None:
        return message
    names = list(subcommands(parser))
    near = difflib.get_close_matches(typed[1], names, n=3)
    guess = f"; did you mean {' or '.join(near)}?" if near else f" (one of {', '.join(names)})"
    return f"no command {typed[1]!r}{guess}"
