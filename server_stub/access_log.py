"""An access log that cannot leak credentials: one JSON line per request on stderr, written by
`server_stub.stack.RequestGate` while `server_stub.access` is enabled for INFO.

Logged: client peer, method, the matched route's path template (or `-` for unknown paths),
status, duration, the request id (server_stub.telemetry.request_id) and, when the portal proved
who called, the principal's id (never the credential or the e-mail it was found by). Never the
query string, headers, cookies or bodies, and never a raw unknown path, since a mistyped URL may
carry a pasted token.
"""

from __future__ import annotations

import asyncio
import atexit
import json
import logging
import sys
import time

from starlette.routing import Route
from starlette.types import Scope

from server_stub.telemetry import request_id

access_log = logging.getLogger("server_stub.access")
"""Its level is the switch (INFO: on); the lines themselves bypass its handlers (see below)."""

PRINCIPAL_KEY = "server_stub.principal"
"""Where a route leaves the id of the principal it identified, in the request's scope."""
_MEMO_LIMIT = 256
_quoted: dict[str | None, str] = {}
"""Peers and methods as JSON strings: a server sees few of each, so each is escaped once."""
_stamp: list[tuple[int, str]] = [(-1, "")]
_pending: list[str] = []
"""Lines waiting for the end of the loop's round (`write_line`)."""


def enabled() -> bool:
    return access_log.isEnabledFor(logging.INFO)


def write_line(line: str) -> None:
    """`line` on stderr as is; a log record, its handler lock and formatter cost ten times as much.
    On the event loop, the lines of one round of the loop (the responses it completed, several
    under load) are gathered and written together once that round ends: one system call for all,
    still before the loop reads what comes next. Elsewhere at once (stderr is line-buffered)."""
    if _pending:
        _pending.append(line)
        return
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        sys.stderr.write(line + "\n")
        return
    _pending.append(line)
    loop.call_soon(flush_lines)


def flush_lines() -> None:
    """Writes the gathered lines (also at exit, should the loop stop with some)."""
    if _pending:
        text = "\n".join(_pending) + "\n"
        _pending.clear()
        sys.stderr.write(text)


atexit.register(flush_lines)


def write_access_line(scope: Scope, status: int, elapsed_ms: float) -> None:
    route = scope.get("route")
    client = scope.get("client")
    principal = scope.get(PRINCIPAL_KEY)
    who = f',"principal":{json.dumps(principal)}' if isinstance(principal, str) else ""
    # Hand-built JSON: the route template and the numbers need no escaping; the rest is escaped
    # by json.dumps once per distinct value (cheaper than dumping a whole dict per request).
    write_line(
        f'{{"ts":"{_timestamp()}","client":{_json(client[0] if client else None)},'
        f'"method":{_json(scope["method"])},'
        f'"route":"{route.path if isinstance(route, Route) else "-"}",'
        f'"status":{status},"ms":{elapsed_ms:.2f},"request_id":"{request_id(scope)}"{who}}}'
    )


def _json(value: str | None) -> str:
    quoted = _quoted.get(value)
    if quoted is None:
        if len(_quoted) >= _MEMO_LIMIT:
            _quoted.clear()
        quoted = _quoted[value] = json.dumps(value)
    return quoted


def _timestamp() -> str:
    """The current second in UTC, formatted once per second."""
    now = int(time.time())
    second, text = _stamp[0]
    if second != now:
        text = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now))
        _stamp[0] = (now, text)
    return text
