"""Runs a stub app under uvicorn with the settings both stubs share."""

from __future__ import annotations

import logging
import sys

import uvicorn
from starlette.types import ASGIApp

from server_stub.http import MAX_HEADER_BYTES
from svc_serving.bounded import HeadLimitedHttpTools, head_refusal


class StubHttp(HeadLimitedHttpTools):
    """The fast HTTP stack, answering an oversized request head with the stubs' envelope."""

    refusal = head_refusal(
        {
            "ok": False,
            "error": {
                "code": "headers_too_large",
                "message": f"request headers exceed {MAX_HEADER_BYTES} bytes",
            },
        }
    )


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


def serve(app: ASGIApp, host: str, port: int, *, log_level: str = "info") -> None:
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
        http=StubHttp,
        loop="auto",
    )
