"""An access log that cannot leak credentials."""

from __future__ import annotations

import json
import logging
import sys
import time

from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from server_stub.telemetry import request_id

access_log = logging.getLogger("server_stub.access")
"""Its level is the switch (INFO: on); the lines themselves bypass its handlers (see below)."""


def write_line(line: str) -> None:
    """`line` on stderr as is. stderr is line-buffered, so each line is one write, visible at once
    to `tail -f`; a log record, its handler lock and formatter cost ten times as much."""
    sys.stderr.write(line + "\n")


class AccessLogMiddleware:
    """One JSON line per request on stderr while `server_stub.access` is enabled for INFO.

    Logged: client peer, method, the matched route's path template (or `-` for unknown paths),
    status, duration and the request id (server_stub.telemetry.request_id). Never the query
    string, headers, cookies or bodies, and never a raw unknown path, since a mistyped URL may
    carry a pasted token.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not access_log.isEnabledFor(logging.INFO):
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500

        async def send_observed(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_observed)
        finally:
            route = scope.get("route")
            client = scope.get("client")
            elapsed_ms = (time.perf_counter() - started) * 1000
            # Hand-built JSON: the route template and the numbers need no escaping; the rest is
            # escaped by json.dumps (cheaper than dumping a whole dict per request).
            write_line(
                f'{{"ts":"{time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}",'
                f'"client":{json.dumps(client[0] if client else None)},'
                f'"method":{json.dumps(scope["method"])},'
                f'"route":"{route.path if isinstance(route, Route) else "-"}",'
                f'"status":{status},"ms":{elapsed_ms:.2f},"request_id":"{request_id(scope)}"}}'
            )
