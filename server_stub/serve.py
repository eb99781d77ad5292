"""Runs a stub app under uvicorn with the settings both stubs share."""

from __future__ import annotations

import asyncio
import logging
import sys
from typing import Any

import uvicorn
from starlette.types import ASGIApp

from server_stub.http import MAX_HEADER_BYTES
from svc_serving.bounded import BoundedHttpTools, bounded_protocol
from svc_serving.limits import serving_limits


def envelope_error(code: str, message: str) -> dict[str, Any]:
    return {"ok": False, "error": {"code": code, "message": message}}


class HeadWithBody:
    """A transport for one response that sends its head with the first piece of its body: one
    write, so one system call and one packet, where uvicorn writes them one by one. Whatever
    else the response does (close, or completing without a body, as HEAD does) sends the held
    head first. The stubs answer with whole bodies, never a stream, so nothing waits on a head."""

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


class StubHttp(BoundedHttpTools):
    """The fast HTTP stack, bounded, answering what it refuses with the stubs' envelope, each
    response in one write (HeadWithBody)."""

    error_body = staticmethod(envelope_error)
    # The same words as RequestGate's 431 (server_stub.stack), whichever of the two answers.
    head_too_large = f"request headers exceed {MAX_HEADER_BYTES} bytes"

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


def stub_protocol() -> type[BoundedHttpTools]:
    """StubHttp with this process's connection limits (the file limit raised first); ValueError
    names a SVC_HTTP_* variable that is wrong."""
    return bounded_protocol(StubHttp, serving_limits())


def plain_log_lines(logger: logging.Logger) -> None:
    """`logger` writes each message as it is, on stderr (the stubs' events are one JSON object
    each), and records skip the fields nobody prints (the logging docs' "Optimization"), so an
    access line per request costs little. The process owns its logging."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(message)s"))
    logger.handlers[:] = [handler]
    logger.setLevel(logging.INFO)
    logging._srcfile = None  # no caller frame lookup per record
    logging.logThreads = False
    logging.logProcesses = False
    logging.logMultiprocessing = False


def serve(
    app: ASGIApp, host: str, port: int, http: type[BoundedHttpTools], *, log_level: str = "info"
) -> None:
    # The app writes its own access line (server_stub.access_log: route template, status, time);
    # uvicorn's would hold the raw target, query string included (a pasted token).
    access = logging.getLogger("server_stub.access")
    plain_log_lines(access)
    access.propagate = False
    uvicorn.run(
        app,
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
        http=http,
        loop="auto",
    )
