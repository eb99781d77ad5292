"""Runs a stub app under uvicorn with the settings both stubs share."""

from __future__ import annotations

import ipaddress
import json
import logging
import sys
from typing import Any

import uvicorn
from starlette.types import ASGIApp
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from server_stub.http import MAX_HEADER_BYTES
from server_stub.service.middleware import AccessLogMiddleware


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


MAX_HEAD_BYTES = 64 * 1024
"""The most of a request head (request line and headers) a connection may send. Larger than
HeaderLimitMiddleware's limit, so that a head between the two gets its 431 envelope from the app;
small enough to bound memory per connection."""


def head_refusal(body: dict[str, Any]) -> bytes:
    """A complete 431 response carrying `body` as JSON, closing the connection."""
    content = json.dumps(body, separators=(",", ":")).encode()
    return (
        b"HTTP/1.1 431 Request Header Fields Too Large\r\n"
        b"content-type: application/json\r\n"
        b"cache-control: no-store\r\n"
        b"x-content-type-options: nosniff\r\n"
        b"content-length: " + str(len(content)).encode() + b"\r\n"
        b"connection: close\r\n\r\n" + content
    )


class HeadLimitedHttpTools(HttpToolsProtocol):
    """uvicorn's httptools protocol, refusing a request head over MAX_HEAD_BYTES with 431, and
    trimming whitespace around header values as h11 does.

    httptools keeps whatever head a client sends (h11 had a limit, httptools has none), so the
    bytes of a head still incomplete after each read are counted here, and past the bound the
    connection is answered and closed. The count can exceed the real head by at most one read
    when a pipelined request starts in the same read as the previous body ends.

    httptools also keeps the whitespace after a header value, which RFC 9110 (5.5) excludes from
    the value: `X-API-Token: <token> ` would otherwise be a wrong token.
    """

    refusal = head_refusal(
        {
            "ok": False,
            "error": {
                "code": "headers_too_large",
                "message": f"request headers exceed {MAX_HEADER_BYTES} bytes",
            },
        }
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._head_bytes = 0
        self._reading_head = False

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._reading_head = True
        self._head_bytes = 0

    def on_header(self, name: bytes, value: bytes) -> None:
        super().on_header(name, value.strip(b" \t"))

    def on_headers_complete(self) -> None:
        self._reading_head = False
        super().on_headers_complete()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if not self._reading_head or self.transport.is_closing():
            return
        self._head_bytes += len(data)
        if self._head_bytes > MAX_HEAD_BYTES:
            self.logger.warning("refused a request head over %d bytes", MAX_HEAD_BYTES)
            self.transport.write(self.refusal)
            self.transport.close()


def cheap_access_log() -> None:
    """`server_stub.access` prints its JSON lines as they are, on stderr, and records skip the
    caller lookup nothing here prints (the logging docs' "Optimization"): an access line per
    request then costs little."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(message)s"))
    access = logging.getLogger("server_stub.access")
    access.handlers[:] = [handler]
    access.propagate = False
    access.setLevel(logging.INFO)
    logging._srcfile = None
    logging.logThreads = False
    logging.logProcesses = False
    logging.logMultiprocessing = False


def serve(app: ASGIApp, host: str, port: int, *, log_level: str = "info") -> None:
    # The stub's own access line (route template, status, time; never the query string, which
    # uvicorn's access line prints) on `server_stub.access`, one JSON object per request.
    cheap_access_log()
    uvicorn.run(
        AccessLogMiddleware(app),
        host=host,
        port=port,
        # uvicorn must not rewrite the client address from X-Forwarded-For; the data service
        # decides that itself (SERVICE_TRUST_PROXY), the portal never trusts it.
        proxy_headers=False,
        server_header=False,
        access_log=False,
        log_level=log_level,
        timeout_graceful_shutdown=5,
        # The fast stack: httptools (bounded as above) and uvloop where installed.
        http=HeadLimitedHttpTools,
        loop="auto",
    )
