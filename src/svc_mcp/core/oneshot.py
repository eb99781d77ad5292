"""The one-shot transport of a CLI call: one request over the standard library's `http.client`.

A CLI call sends one request and exits, so it skips what a long-lived server wants from httpx
(pooling, async) and what loading it costs: httpx, anyio and, for an `http://` backend, a parsed
CA bundle. The answer goes through the same `svc_mcp.core.connection.answer` as the MCP server's.
"""

from __future__ import annotations

import http.client
import socket
import ssl
import time
from typing import Any
from urllib.parse import urlsplit

from svc_mcp.core.connection import (
    CONNECT_TIMEOUT_SECONDS,
    BodyReader,
    Connection,
    Payload,
    answer,
    request_body,
    request_headers,
    unreachable,
)
from svc_mcp.core.settings import ca_file, timeout_seconds
from svc_mcp.core.telemetry import BackendRequest

_CHUNK_BYTES = 64 * 1024


def fetch_once(
    connection: Connection,
    method: str,
    path: str,
    *,
    query: dict[str, str],
    needs: str,
    json_body: Any = None,
    exchange: BackendRequest | None = None,
) -> Payload:
    """Sends one request; like `svc_mcp.core.client.fetch`, the whole exchange is bounded by
    `timeout_seconds()`."""
    limit = timeout_seconds()
    deadline = time.monotonic() + limit
    request = f"{method} {path}"
    url = urlsplit(connection.url(path, query))
    body = request_body(json_body)
    headers = request_headers(connection, body, exchange)
    target = url.path + (f"?{url.query}" if url.query else "")
    conn = _open(url.scheme, url.netloc, min(limit, CONNECT_TIMEOUT_SECONDS))
    try:
        conn.connect()
    except TimeoutError:
        conn.close()
        raise unreachable(connection, "the connection timed out") from None
    except OSError as exc:
        # Refused, no route, a name that does not resolve: nothing was sent.
        conn.close()
        raise unreachable(connection, str(exc) or type(exc).__name__, sent=False) from None
    try:
        conn.request(method, target, body=body, headers=headers)
        # Kept: the connection lets go of its socket once a response says it will close.
        sock = conn.sock
        sock.settimeout(max(deadline - time.monotonic(), 0.001))
        response = conn.getresponse()
        if exchange is not None:
            exchange.status = response.status
        raw = _read_bounded(
            response,
            sock,
            deadline,
            BodyReader(connection, request, response.getheader("Content-Encoding")),
        )
    except TimeoutError:
        raise unreachable(connection, f"no answer within {limit:g} s") from None
    except (OSError, http.client.HTTPException) as exc:
        raise unreachable(connection, str(exc) or type(exc).__name__) from None
    finally:
        conn.close()
    retry_after = response.getheader("Retry-After")
    return answer(connection, request, response.status, retry_after, raw, needs)


def _open(scheme: str, netloc: str, timeout: float) -> http.client.HTTPConnection:
    if scheme == "http":
        return http.client.HTTPConnection(netloc, timeout=timeout)
    # Only an https backend pays for loading CA certificates; a private CA is taken from
    # SSL_CERT_FILE by name, as the pooled client does.
    context = ssl.create_default_context(cafile=ca_file())
    return http.client.HTTPSConnection(netloc, timeout=timeout, context=context)


def _read_bounded(
    response: http.client.HTTPResponse, sock: socket.socket, deadline: float, reader: BodyReader
) -> bytes:
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError
        sock.settimeout(remaining)
        chunk = response.read1(_CHUNK_BYTES)
        if not chunk:
            return reader.body()
        reader.feed(chunk)
