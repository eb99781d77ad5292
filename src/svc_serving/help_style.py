"""One look for every command line of the package, the typer ones (install, doctor, svc-stub) and
the argparse ones (svc-mcp, its tools and demo, svc-portal): Click's plain help when piped (to a
pager, grep or a file), unwrapped, so no line breaks inside a word, a choice or a command someone
copies; `-h` and `--help` alike; a usage error as one line, `<command>: usage: <what> (see <command>
--help)`, in Click's words, exit code 2. On a terminal the same plain help, to the terminal's
width: typer's rich panels stay off (rich still draws the tables and doctor's findings)."""

from __future__ import annotations

import functools
import re
import shutil
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import argparse

UNWRAPPED = 100_000
"""A line width no help text reaches."""

HELP_OPTIONS = ["-h", "--help"]
USAGE_EXIT = 2


@functools.cache
def on_terminal() -> bool:
    return sys.stdout.isatty()


def typer_style() -> dict[str, Any]:
    """Keyword arguments for `typer.Typer(...)` (decided when the app is built, at start-up):
    Click's plain help (no rich markup, no rich traceback, which would show local variables such
    as a token), as wide as argparse's."""
    width = argparse_width() or shutil.get_terminal_size().columns
    return {
        "rich_markup_mode": None,
        "pretty_exceptions_enable": False,
        "context_settings": {
            "help_option_names": HELP_OPTIONS,
            "max_content_width": width,
            "terminal_width": width,
        },
    }


def argparse_width() -> int | None:
    """The width argparse formats help to: the terminal's on one (None), else unwrapped."""
    return None if on_terminal() else UNWRAPPED


def argparse_formatter(prog: str) -> argparse.HelpFormatter:
    """The `formatter_class` of every argparse command line: Click's plain shape, descriptions as
    written, options to the terminal's width, or unwrapped when piped."""
    from svc_serving.fence import click_shaped_help

    return click_shaped_help(prog, argparse_width())


def usage_line(command: str, message: str) -> str:
    """As `svc_mcp.core.exits.OneLineParser` says it: the command whose options were read."""
    return f"{command}: usage: {message} (see {command} --help)"


CLICK_WORDS: tuple[tuple[str, str], ...] = (
    (r"the following arguments are required: ([^,]+).*", r"Missing option '\1'."),
    (r"unrecognized arguments: (-\S+).*?( \(.*\))?$", r"No such option: \1\2"),
    (r"unrecognized arguments: (.*)", r"Got unexpected extra argument(s) (\1)"),
    (r"argument (\S+): expected one argument", r"Option '\1' requires an argument."),
    (
        r"argument (\S+): invalid choice: (\S+) \(choose from (.*)\)",
        r"Invalid value for '\1': \2 is not one of \3.",
    ),
    (r"argument (\S+): (.*)", r"Invalid value for '\1': \2"),
)
"""argparse's usage errors in Click's words (what the typer command lines say), first match."""


def click_words(message: str) -> str:
    for pattern, words in CLICK_WORDS:
        if (said := re.fullmatch(pattern, message)) is not None:
            return said.expand(words)
    return message


def run_click_app(app: Callable[..., Any], args: Sequence[str], prog_name: str, prog: str) -> None:
    """Runs a typer app as the argparse command lines run: a usage error is one line on stderr
    (`usage_line`, exit 2), instead of Click's usage, hint and boxed error."""
    try:
        # Without standalone mode, click returns the code of an Exit instead of raising it.
        code = app(args=list(args), prog_name=prog_name, standalone_mode=False)
    except Exception as error:
        if isinstance(error.__cause__, KeyboardInterrupt | EOFError):  # click's Abort
            print(f"{prog}: interrupted", file=sys.stderr)
            raise SystemExit(130) from None
        if type(error).__name__ == "Abort":  # click's, as its standalone mode says it
            print("Aborted!", file=sys.stderr)
            raise SystemExit(1) from None
        message = click_usage_message(error)
        if message is None:
            raise
        if type(error).__name__ == "NoArgsIsHelpError":  # a group alone: its help, as click does
            print(getattr(error, "format_message")(), file=sys.stderr)  # noqa: B009
            raise SystemExit(USAGE_EXIT) from None
        shown = "".join(c if c.isprintable() else ascii(c)[1:-1] for c in message)
        command = getattr(getattr(error, "ctx", None), "command_path", None) or prog_name
        print(usage_line(command, shown), file=sys.stderr)
        raise SystemExit(USAGE_EXIT) from None
    if isinstance(code, int) and code:
        raise SystemExit(code)


def click_usage_message(error: Exception) -> str | None:
    """The one-line message of click's UsageError (exit code 2, `format_message`), by its
    documented attributes: typer raises its own copy of click's exceptions from 0.22 on, click's
    before, and exports neither class."""
    format_message = getattr(error, "format_message", None)
    if getattr(error, "exit_code", None) != USAGE_EXIT or not callable(format_message):
        return None
    return " ".join(str(format_message()).split())
