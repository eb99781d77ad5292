"""Runs a stub app under uvicorn with the settings both stubs share."""

from __future__ import annotations

import ipaddress

import uvicorn
from starlette.types import ASGIApp


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


# Larger than HeaderLimitMiddleware's limit, so that oversized headers get its 431 envelope
# rather than h11's bare-text 400; still small enough to bound memory per connection.
H11_MAX_HEAD_BYTES = 64 * 1024


def serve(app: ASGIApp, host: str, port: int, *, log_level: str = "info") -> None:
    # proxy_headers=False: uvicorn must not rewrite the client address from X-Forwarded-For;
    # the data service decides that itself (SERVICE_TRUST_PROXY), the portal never trusts it.
    uvicorn.run(
        app,
        host=host,
        port=port,
        proxy_headers=False,
        server_header=False,
        # uvicorn's access line holds the raw target, query string included (a pasted token);
        # the app logs its own line without it (server_stub.access_log).
        access_log=False,
        log_level=log_level,
        timeout_graceful_shutdown=5,
        h11_max_incomplete_event_size=H11_MAX_HEAD_BYTES,
    )
