"""How `svc-portal` and `svc-mcp` fail: one line, then the kind's exit code (`FailureKind`).

A failure prints one line on stderr, `<prog>: <kind>: <message>`, then exits with its code.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
from collections.abc import Callable, Iterator
from typing import NoReturn

from svc_mcp.core.failures import FailureKind
from svc_mcp.core.safe_text import visible

EXIT_CODES: dict[str, int] = {kind: kind.exit_code for kind in FailureKind}


def fail(prog: str, kind: FailureKind, message: str) -> NoReturn:
    print(f"{prog}: {kind}: {visible(message)}", file=sys.stderr)
    raise SystemExit(kind.exit_code)


INTERRUPTED_EXIT = 130
"""The shell's code for a program ended by Ctrl-C (128 + SIGINT)."""


def run_command(prog: str, run: Callable[[], None]) -> None:
    """Runs a command to its end: one whose reader stops early (`svc-mcp tools | head`) ends
    quietly, like other Unix tools, instead of with a BrokenPipeError traceback; Ctrl-C ends it
    with one line and 130, never a traceback."""
    try:
        run()
        sys.stdout.flush()
    except BrokenPipeError:
        # Python would report the failed flush of stdout at exit; point it at /dev/null first.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        raise SystemExit(1) from None
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        raise SystemExit(INTERRUPTED_EXIT) from None


@contextlib.contextmanager
def interrupt_ends_process(prog: str, cleanup: Callable[[], None]) -> Iterator[None]:
    """Ctrl-C (SIGINT) ends the process at once, after `cleanup`. For the stdio server: its
    reader thread waits in a read of stdin that no cancellation ends, so on a terminal the
    usual KeyboardInterrupt would wait for the next line of input (asyncio.run leaves a handler
    that is not its own in place)."""

    def stop(_signum: int, _frame: object) -> None:
        with contextlib.suppress(Exception):
            cleanup()
        # Straight to the file descriptor: the signal may come while this thread is inside a
        # write to sys.stderr (its start-up lines), and the buffered writer refuses a reentrant
        # call (RuntimeError: the process ended 1 with a traceback instead of 130).
        with contextlib.suppress(OSError):
            os.write(sys.stderr.fileno(), f"{prog}: interrupted\n".encode())
        os._exit(INTERRUPTED_EXIT)

    previous = signal.signal(signal.SIGINT, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


class OneLineParser(argparse.ArgumentParser):
    """An argparse parser that reports a usage error as one line, like every other failure, in
    the typer command lines' words (`svc_serving.help_style.click_words`)."""

    def error(self, message: str) -> NoReturn:
        from svc_serving.help_style import click_words

        fail(self.prog, FailureKind.USAGE, f"{click_words(message)} (see {self.prog} --help)")
