"""The one-shot transport of a CLI call: one request over the standard library's `http.client`.

A CLI call sends one request and exits, so it skips what a long-lived server wants from httpx
(pooling, async) and what loading it costs: httpx, anyio and, for an `http://` backend, a parsed
CA bundle. The answer goes through the same `svc_mcp.core.connection.answer` as the MCP server's.
"""

from __future__ import annotations

import http.client
import socket
import ssl
import threading
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from svc_mcp.core.answer_body import BodyReader, check_length
from svc_mcp.core.connection import (
    CONNECT_TIMEOUT_SECONDS,
    Connection,
    Payload,
    answer,
    request_body,
    request_headers,
    unreachable,
)
from svc_mcp.core.settings import ca_file, timeout_seconds
from svc_mcp.core.telemetry import BackendRequest
from svc_serving.fence import connect_with

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
    # The name is resolved within the call's deadline too: the resolver has no timeout of its
    # own that we set, and a silent DNS server would hold the call for its retries (10 s).
    connect_with(conn, _connector(deadline, limit))
    try:
        conn.connect()
    except _NameTimeout as exc:
        conn.close()
        raise unreachable(connection, str(exc), sent=False) from None
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
        check_length(connection, request, response.getheader("Content-Length"))
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


class _NameTimeout(TimeoutError):
    """The name did not resolve in time: nothing was sent."""


def _connector(deadline: float, limit: float) -> Callable[..., socket.socket]:
    """`socket.create_connection` with the name resolved within `deadline`."""

    def connect(
        address: tuple[str, int], timeout: float | None = None, source: Any = None
    ) -> socket.socket:
        host, port = address
        addresses = _resolve(host, port, deadline, limit)
        error: OSError = OSError(f"{host} has no address")
        for family, kind, proto, _, where in addresses:
            sock = socket.socket(family, kind, proto)
            try:
                sock.settimeout(min(timeout or limit, max(deadline - time.monotonic(), 0.001)))
                sock.connect(where)
                return sock
            except OSError as exc:
                sock.close()
                error = exc
        raise error

    return connect


def _resolve(host: str, port: int, deadline: float, limit: float) -> list[Any]:
    """`getaddrinfo` in a thread of its own, given up on at `deadline` (the thread, a daemon,
    ends with the process)."""
    found: list[Any] = []
    failed: list[OSError] = []

    def lookup() -> None:
        try:
            found.extend(socket.getaddrinfo(host, port, type=socket.SOCK_STREAM))
        except OSError as exc:
            failed.append(exc)

    worker = threading.Thread(target=lookup, daemon=True)
    worker.start()
    worker.join(max(deadline - time.monotonic(), 0))
    if worker.is_alive():
        raise _NameTimeout(f"the name {host} did not resolve within {limit:g} s")
    if failed:
        raise failed[0]
    return found


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
