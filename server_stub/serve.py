"""Runs a stub app under uvicorn with the settings both stubs share."""

from __future__ import annotations

import logging
import sys
from typing import Any

import uvicorn
from starlette.types import ASGIApp

from server_stub.http import MAX_HEADER_BYTES
from svc_serving.bounded import BoundedHttpTools, OneWriteHttpTools, bounded_protocol
from svc_serving.fence import skip_caller_lookup
from svc_serving.limits import serving_limits


def envelope_error(code: str, message: str) -> dict[str, Any]:
    return {"ok": False, "error": {"code": code, "message": message}}


class StubHttp(OneWriteHttpTools):
    """The fast HTTP stack, bounded, answering what it refuses with the stubs' envelope, each
    response in one write (svc_serving.one_write.HeadWithBody)."""

    error_body = staticmethod(envelope_error)
    # The same words as RequestGate's 431 (server_stub.stack), whichever of the two answers.
    head_too_large = f"request headers exceed {MAX_HEADER_BYTES} bytes"


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
    skip_caller_lookup()
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
