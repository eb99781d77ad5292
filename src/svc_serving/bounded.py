"""uvicorn's httptools protocol, bounded in time, bytes and connections.

What a client can hold on a server is bounded here, the same for the stubs and the gateway:
- a request head over MAX_HEAD_BYTES is answered 431 and the connection closed;
- a request head not complete within `head_timeout` seconds of its connection or of its first
  byte is closed (uvicorn's keep-alive timer only runs between requests);
- at most `max_connections` connections are open, at most `max_per_address` from one client
  address (an IPv6 /64); the excess is answered 503 and closed at once, never queued;
- a repeated `Host` or `Authorization` header is answered 400 (which one counts would be a guess
  the next hop may make differently).

This is the one module that uses uvicorn's internals (its httptools protocol class): uvicorn has no
setting that bounds an httptools request head. tests/architecture/test_fences.py asserts what it
relies on, and pyproject.toml pins uvicorn to the releases those tests ran on.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import math
import os
import resource
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from starlette.types import Receive, Scope, Send
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

MAX_HEAD_BYTES = 64 * 1024
"""The most of a request head (request line and headers) a connection may send. Larger than the
stubs' header limit (server_stub.stack), so that a head between the two gets its 431 envelope from
the app; small enough to bound memory per connection."""
MAX_HEAD_TIMEOUT_SECONDS = 10.0
FILE_RESERVE = 128
"""Descriptors kept free below the file limit for everything that is not a client connection
(listening sockets, the database, log files, outgoing connections to backends)."""
UNIQUE_HEADERS = (b"host", b"authorization")
REFUSAL_LOG_SECONDS = 60.0

HEAD_TIMEOUT_VARIABLE = "SVC_HTTP_HEAD_TIMEOUT"
MAX_CONNECTIONS_VARIABLE = "SVC_HTTP_MAX_CONNECTIONS"
MAX_PER_ADDRESS_VARIABLE = "SVC_HTTP_MAX_CONNECTIONS_PER_ADDRESS"


@dataclass(frozen=True)
class ConnectionLimits:
    head_timeout: float = 5.0
    max_connections: int = 4096
    max_per_address: int = 256

    @classmethod
    def from_env(cls, environ: Mapping[str, str] = os.environ) -> ConnectionLimits:
        """The limits, from SVC_HTTP_* where set; ValueError names a variable that is wrong."""
        defaults = cls()
        timeout_text = environ.get(HEAD_TIMEOUT_VARIABLE, "").strip()
        try:
            head_timeout = float(timeout_text) if timeout_text else defaults.head_timeout
        except ValueError:
            head_timeout = -1.0
        if not 0 < head_timeout <= MAX_HEAD_TIMEOUT_SECONDS:
            raise ValueError(
                f"{HEAD_TIMEOUT_VARIABLE} must be seconds above 0, at most "
                f"{MAX_HEAD_TIMEOUT_SECONDS:g}"
            )
        return cls(
            head_timeout=head_timeout,
            max_connections=_count(environ, MAX_CONNECTIONS_VARIABLE, defaults.max_connections),
            max_per_address=_count(environ, MAX_PER_ADDRESS_VARIABLE, defaults.max_per_address),
        )

    def within_file_limit(self, open_files: int) -> ConnectionLimits:
        """These limits with the total kept FILE_RESERVE below `open_files`."""
        total = max(1, min(self.max_connections, open_files - FILE_RESERVE))
        return ConnectionLimits(self.head_timeout, total, min(self.max_per_address, total))


def _count(environ: Mapping[str, str], name: str, default: int) -> int:
    text = environ.get(name, "").strip()
    if not text:
        return default
    if not (text.isascii() and text.isdigit() and 0 < int(text) < 10**7):
        raise ValueError(f"{name} must be a whole number of connections above 0")
    return int(text)


def raise_file_limit() -> int:
    """Raises this process's soft limit of open files to its hard limit; returns the new soft
    limit. Servers call it at start, so the connection cap, not the file limit, is what a flood
    of connections meets first."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or soft == resource.RLIM_INFINITY:
        # Not every kernel takes "infinity" as a soft limit; a large finite one does.
        target = max(soft, 1 << 20) if hard == resource.RLIM_INFINITY else hard
    else:
        target = hard
    if soft != resource.RLIM_INFINITY and soft < target:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        except (ValueError, OSError):
            return soft
        return target
    return soft


def serving_limits(environ: Mapping[str, str] = os.environ) -> ConnectionLimits:
    """What a server starts with: the file limit raised, the SVC_HTTP_* limits below it.
    ValueError for a bad SVC_HTTP_* value."""
    limits = ConnectionLimits.from_env(environ)
    return limits.within_file_limit(raise_file_limit())


def address_key(client: tuple[str, int] | None) -> str:
    """The key connections are counted under: the IPv4 address, the IPv6 /64 (one subscriber
    is given a whole /64), or "local" for a Unix socket."""
    if not client:
        return "local"
    try:
        address = ipaddress.ip_address(client[0])
    except ValueError:
        return client[0]
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return str(address.ipv4_mapped)
        return str(ipaddress.IPv6Network((address, 64), strict=False))
    return str(address)


def raw_response(status: int, reason: str, body: dict[str, Any]) -> bytes:
    """A complete response carrying `body` as JSON, closing the connection."""
    content = json.dumps(body, separators=(",", ":")).encode()
    return (
        f"HTTP/1.1 {status} {reason}\r\n".encode() + b"content-type: application/json\r\n"
        b"cache-control: no-store\r\n"
        b"x-content-type-options: nosniff\r\n"
        b"content-length: " + str(len(content)).encode() + b"\r\n"
        b"connection: close\r\n\r\n" + content
    )


def error_body(code: str, message: str) -> dict[str, Any]:
    """The gateway's error body; the stubs override it with their envelope."""
    return {"error": code, "message": message}


class BoundedHttpTools(HttpToolsProtocol):
    """uvicorn's httptools protocol with the bounds of the module docstring, and whitespace
    around header values trimmed as h11 does. A server subclasses it with its own `limits`
    (`bounded_protocol`) and its own `error_body`.

    httptools keeps whatever head a client sends (h11 had a limit, httptools has none), so the
    bytes of a head still incomplete after each read are counted here, and past the bound the
    connection is answered and closed. The count can exceed the real head by at most one read
    when a pipelined request starts in the same read as the previous body ends.

    httptools also keeps the whitespace after a header value, which RFC 9110 (5.5) excludes from
    the value: `X-API-Token: <token> ` would otherwise be a wrong token.
    """

    limits = ConnectionLimits()
    error_body = staticmethod(error_body)
    head_too_large = f"request head exceeds {MAX_HEAD_BYTES} bytes"
    # Refused connections, logged at most once per REFUSAL_LOG_SECONDS whatever a flood sends.
    _refused_since_log = 0
    _refusal_logged_at = -math.inf

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._head_bytes = 0
        self._reading_head = False
        self._head_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        refusal = self._over_connection_limit()
        if refusal is not None:
            self._log_refusal(refusal)
            self._answer_and_close(503, "Service Unavailable", "too_many_connections", refusal)
            return
        self._start_head_timer()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_head_timer()
        super().connection_lost(exc)

    def _over_connection_limit(self) -> str | None:
        if len(self.connections) > self.limits.max_connections:
            return "the server has as many connections open as it takes; retry shortly"
        key = address_key(self.client)
        same = sum(1 for other in self.connections if address_key(_client(other)) == key)
        if same > self.limits.max_per_address:
            return "this address has as many connections open as it may; close some first"
        return None

    def _log_refusal(self, reason: str) -> None:
        counts = type(self)
        counts._refused_since_log += 1
        now = self.loop.time()
        if now - counts._refusal_logged_at >= REFUSAL_LOG_SECONDS:
            self.logger.warning(
                "refused %d connection(s) since the last such line; the latest: %s",
                counts._refused_since_log,
                reason,
            )
            counts._refused_since_log = 0
            counts._refusal_logged_at = now

    def _answer_and_close(self, status: int, reason: str, code: str, message: str) -> None:
        self.transport.write(raw_response(status, reason, self.error_body(code, message)))
        self.transport.close()

    def _start_head_timer(self) -> None:
        if self._head_timer is None:
            self._head_timer = self.loop.call_later(self.limits.head_timeout, self._head_too_slow)

    def _stop_head_timer(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_too_slow(self) -> None:
        self._head_timer = None
        if not self.transport.is_closing() and (self.cycle is None or self.cycle.response_complete):
            # No request is being answered: nothing is lost by closing, and a half-sent head
            # must not keep its connection (and a file) forever.
            self.transport.close()

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._reading_head = True
        self._head_bytes = 0
        self._start_head_timer()

    def on_header(self, name: bytes, value: bytes) -> None:
        super().on_header(name, value.strip(b" \t"))

    def on_headers_complete(self) -> None:
        self._reading_head = False
        self._stop_head_timer()
        repeated = _repeated(self.headers)
        if repeated is None:
            super().on_headers_complete()
            return
        # The request is answered 400 by uvicorn's own cycle, so pipelining and the body that
        # may follow are handled as for any other request.
        app = self.app
        self.app = _refusing(self.error_body("bad_request", f"the {repeated} header is repeated"))
        try:
            super().on_headers_complete()
        finally:
            self.app = app

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._stop_head_timer()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if not self._reading_head or self.transport.is_closing():
            return
        self._head_bytes += len(data)
        if self._head_bytes > MAX_HEAD_BYTES:
            self.logger.warning("refused a request head over %d bytes", MAX_HEAD_BYTES)
            self._answer_and_close(
                431,
                "Request Header Fields Too Large",
                "headers_too_large",
                self.head_too_large,
            )


def _client(protocol: object) -> tuple[str, int] | None:
    client = getattr(protocol, "client", None)
    return client if isinstance(client, tuple) else None


def _repeated(headers: list[tuple[bytes, bytes]]) -> str | None:
    """The first of UNIQUE_HEADERS seen twice, in one pass over the headers."""
    seen: set[bytes] = set()
    for key, _ in headers:
        if key in UNIQUE_HEADERS:
            if key in seen:
                return key.decode().title()
            seen.add(key)
    return None


def _refusing(body: dict[str, Any]) -> Any:
    content = json.dumps(body, separators=(",", ":")).encode()

    async def refuse(scope: Scope, receive: Receive, send: Send) -> None:
        await send(
            {
                "type": "http.response.start",
                "status": 400,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(content)).encode()),
                    (b"connection", b"close"),
                ],
            }
        )
        await send({"type": "http.response.body", "body": content})

    return refuse


def bounded_protocol(
    base: type[BoundedHttpTools], limits: ConnectionLimits
) -> type[BoundedHttpTools]:
    """`base` with these limits: what a server passes to uvicorn as its `http` class."""
    return type(base.__name__, (base,), {"limits": limits})


class HeadWithBody:
    """A transport for one response that sends its head with the first piece of its body: one
    write, so one system call and one packet, where uvicorn writes them one by one. Whatever
    else the response does (close, or completing without a body, as HEAD does) sends the held
    head first. For servers that answer with whole bodies, never a stream, so nothing waits on
    a head."""

    def __init__(self, transport: asyncio.Transport) -> None:
        self._transport = transport
        self._held: bytes | None = None
        self._sent_head = False

    def write(self, data: bytes) -> None:
        if not self._sent_head and self._held is None:
            self._held = data
            return
        if self._held is not None:
            data, self._held = self._held + data, None
        self._sent_head = True
        self._transport.write(data)

    def flush(self) -> None:
        if self._held is not None:
            held, self._held = self._held, None
            self._sent_head = True
            self._transport.write(held)

    def close(self) -> None:
        self.flush()
        self._transport.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


class OneWriteHttpTools(BoundedHttpTools):
    """BoundedHttpTools writing each response's head with its body (HeadWithBody), by giving
    uvicorn's request cycle that transport and flushing it when the response completes."""

    def on_headers_complete(self) -> None:
        super().on_headers_complete()
        cycle = self.cycle
        if cycle is None:
            return
        # Per cycle: with pipelining, self.cycle is already the next request's when this one
        # completes.
        one_write = HeadWithBody(self.transport)
        cycle.transport = one_write  # type: ignore[assignment]
        completed = cycle.on_response

        def on_response() -> None:
            one_write.flush()
            completed()

        cycle.on_response = on_response
