"""The exit codes of `svc-portal` and `svc-mcp`, one per kind of failure (docs/mcp.md).

A failure prints one line on stderr, `<prog>: <kind>: <message>`, then exits with its code.
"""

from __future__ import annotations

import sys
from typing import NoReturn

EXIT_CODES = {
    "usage": 2,
    "misconfigured": 2,
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
