"""The ASGI stack both stubs share, built so that a request pays only for what it needs.

- `RequestGate`, the one middleware in front of the routes: in one pass over the request's
  headers it applies the target and header limits (414, 431), the `Host` allow-list (421,
  server_stub.hosts) and the declared body limit (400, 413); it bounds a streamed body, puts the
  request in a span when it is traced (server_stub.telemetry), and writes the access line
  (server_stub.access_log), refusals included.
- the routes behind it in `server_stub.routing`'s router (a lookup for fixed paths).
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.responses import Response
from starlette.routing import BaseRoute
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from server_stub import access_log, telemetry
from server_stub.hosts import HostAllowList
from server_stub.http import (
    MAX_HEADER_BYTES,
    ApiError,
    envelope_exception_handlers,
    failure,
)
from server_stub.routing import direct_app
from svc_serving.contracts import MAX_TARGET_BYTES


def stub_app(
    routes: Sequence[BaseRoute], hosts: HostAllowList, *, max_body_bytes: int | None
) -> Starlette:
    """A stub's app: its routes behind the gate, every failure an envelope. `max_body_bytes`
    None: the server takes no request bodies worth bounding (all its routes are GET)."""
    return direct_app(
        routes,
        middleware=[Middleware(RequestGate, hosts=hosts, max_body_bytes=max_body_bytes)],
        exception_handlers=envelope_exception_handlers(),
    )


class RequestGate:
    def __init__(self, app: ASGIApp, hosts: HostAllowList, max_body_bytes: int | None) -> None:
        self.app = app
        self.hosts = hosts
        self.max_body_bytes = max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if not access_log.enabled():
            await self._pass(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500

        async def observed(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self._pass(scope, receive, observed)
        finally:
            access_log.write_access_line(scope, status, (time.perf_counter() - started) * 1000)

    async def _pass(self, scope: Scope, receive: Receive, send: Send) -> None:
        """The request on to the routes, or its refusal; inside a span when traced."""
        size = 0
        host: bytes | None = None
        lengths: list[bytes] = []
        streamed = False
        traceparent: bytes | None = None
        tracestate: bytes | None = None
        for key, value in scope["headers"]:
            size += len(key) + len(value) + 4
            if key == b"host":
                if host is None:
                    host = value
            elif key == b"content-length":
                lengths.append(value)
            elif key == b"transfer-encoding":
                streamed = True
            elif key == b"traceparent":
                traceparent = value
            elif key == b"tracestate":
                tracestate = value
        target = len(scope.get("raw_path") or scope["path"].encode()) + len(
            scope.get("query_string", b"")
        )
        handler: ASGIApp = self.app
        if target > MAX_TARGET_BYTES:
            handler = failure(
                414, "uri_too_long", f"the request target exceeds {MAX_TARGET_BYTES} bytes"
            )
        elif size > MAX_HEADER_BYTES:
            handler = failure(
                431, "headers_too_large", f"request headers exceed {MAX_HEADER_BYTES} bytes"
            )
        elif self.hosts.refuses(scope["path"], host):
            handler = self.hosts.refusal()
        elif self.max_body_bytes is not None:
            refusal = _declared_refusal(lengths, self.max_body_bytes)
            if refusal is not None:
                handler = refusal
            elif streamed:
                # A declared length needs no watch: the parser reads no more than declared.
                receive = _bounded(receive, self.max_body_bytes)
        if telemetry.records(traceparent):
            await telemetry.request_span(handler, scope, receive, send, traceparent, tracestate)
        else:
            await handler(scope, receive, send)


def _too_large(max_bytes: int) -> str:
    return f"request body exceeds {max_bytes} bytes"


def _declared_refusal(lengths: list[bytes], max_bytes: int) -> Response | None:
    for value in lengths:
        try:
            declared = int(value)
        except ValueError:
            return failure(400, "bad_request", "invalid Content-Length")
        if declared > max_bytes:
            return failure(413, "payload_too_large", _too_large(max_bytes))
    return None


def _bounded(receive: Receive, max_bytes: int) -> Receive:
    """`receive` that refuses a streamed body once it passes `max_bytes` (413)."""
    received = 0

    async def bounded_receive() -> Message:
        nonlocal received
        message = await receive()
        if message["type"] == "http.request":
            received += len(message.get("body", b""))
            if received > max_bytes:
                raise ApiError(413, "payload_too_large", _too_large(max_bytes))
        return message

    return bounded_receive
