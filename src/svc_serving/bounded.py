"""uvicorn's httptools protocol with the request head bounded, and the loopback check.

This is the one module that uses uvicorn's internals (its httptools protocol class): uvicorn has no
setting that bounds an httptools request head. tests/architecture/test_fences.py asserts what it
relies on, and pyproject.toml pins uvicorn to the releases those tests ran on.
"""

from __future__ import annotations

import ipaddress
import json
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

MAX_HEAD_BYTES = 64 * 1024
"""The most of a request head (request line and headers) a connection may send. Larger than the
stubs' HeaderLimitMiddleware limit, so that a head between the two gets its 431 envelope from the
app; small enough to bound memory per connection."""


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


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
    trimming whitespace around header values as h11 does. A server sets `refusal` to its own
    431 body.

    httptools keeps whatever head a client sends (h11 had a limit, httptools has none), so the
    bytes of a head still incomplete after each read are counted here, and past the bound the
    connection is answered and closed. The count can exceed the real head by at most one read
    when a pipelined request starts in the same read as the previous body ends.

    httptools also keeps the whitespace after a header value, which RFC 9110 (5.5) excludes from
    the value: `X-API-Token: <token> ` would otherwise be a wrong token.
    """

    refusal = head_refusal(
        {"error": "headers_too_large", "message": f"request head exceeds {MAX_HEAD_BYTES} bytes"}
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
