"""The exit codes of `svc-portal` and `svc-mcp`, one per kind of failure (docs/mcp.md).

A failure prints one line on stderr, `<prog>: <kind>: <message>`, then exits with its code.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from typing import NoReturn

EXIT_CODES = {
    "usage": 2,
    "misconfigured": 2,
    "invalid_argument": 2,
    "unauthorized": 3,
    "forbidden": 4,
    "not_found": 5,
    "locked_out": 6,
    "rate_limited": 7,
    "unreachable": 8,
    "bad_request": 9,
    "server_error": 10,
}


def fail(prog: str, kind: str, message: str) -> NoReturn:
    print(f"{prog}: {kind}: {message}", file=sys.stderr)
    raise SystemExit(EXIT_CODES[kind])


def quiet_on_broken_pipe(run: Callable[[], None]) -> None:
    """Runs a command whose reader may stop early (`svc-mcp tools | head`): like other Unix tools,
    it then ends quietly instead of with a BrokenPipeError traceback."""
    try:
        run()
        sys.stdout.flush()
    except BrokenPipeError:
        # Python would report the failed flush of stdout at exit; point it at /dev/null first.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        raise SystemExit(1) from None


class OneLineParser(argparse.ArgumentParser):
    """An argparse parser that reports a usage error as one line, like every other failure."""

    def error(self, message: str) -> NoReturn:
        fail(self.prog, "usage", f"{message} (see {self.prog} --help)")
