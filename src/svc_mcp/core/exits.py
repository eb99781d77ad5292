"""How `svc-portal` and `svc-mcp` fail: one line, then the kind's exit code (`FailureKind`).

A failure prints one line on stderr, `<prog>: <kind>: <message>`, then exits with its code.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from typing import NoReturn

from svc_mcp.core.failures import FailureKind
from svc_mcp.core.safe_text import visible

EXIT_CODES: dict[str, int] = {kind: kind.exit_code for kind in FailureKind}


def fail(prog: str, kind: FailureKind, message: str) -> NoReturn:
    print(f"{prog}: {kind}: {visible(message)}", file=sys.stderr)
    raise SystemExit(kind.exit_code)


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
        fail(self.prog, FailureKind.USAGE, f"{message} (see {self.prog} --help)")
