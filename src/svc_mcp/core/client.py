"""The pooled async transport: one httpx client per MCP server (and per `doctor` run).

A request is sent once and its answer read into `svc_mcp.core.connection.answer`. Nothing is
retried here: a 429 in particular must not be, or a wrong token would burn the lockout budget.
"""

from __future__ import annotations

import ssl
from typing import Any

import anyio
import httpx

from svc_mcp.core import give_back
from svc_mcp.core.answer_body import BodyReader, check_length
from svc_mcp.core.backends import total_slots
from svc_mcp.core.connection import (
    CONNECT_TIMEOUT_SECONDS,
    Connection,
    Payload,
    answer,
    request_body,
    request_headers,
    unreachable,
)
from svc_mcp.core.settings import TIMEOUT_SECONDS, ca_file, timeout_seconds
from svc_mcp.core.telemetry import BackendRequest


def new_http_client() -> httpx.AsyncClient:
    """One pooled client per server.

    `trust_env=False`: httpx would otherwise scan the whole environment for proxy settings, and
    that environment may hold SERVICE_INTEL_HMAC, which this package never reads. The backends
    are on loopback or behind an SSH tunnel; a private CA is taken from SSL_CERT_FILE by name.
    """
    private_ca = ca_file()
    verify: ssl.SSLContext | bool = (
        ssl.create_default_context(cafile=private_ca) if private_ca else True
    )
    # As many kept-alive connections as requests may be in flight (`Backend.slots`): no call
    # opens a new connection, and httpcore's pool bookkeeping, which grows with requests times
    # connections, stays small (with 50 calls in flight a profile of the gateway once put it at a
    # quarter of its CPU).
    slots = total_slots()
    return httpx.AsyncClient(
        timeout=httpx.Timeout(TIMEOUT_SECONDS, connect=CONNECT_TIMEOUT_SECONDS),
        limits=httpx.Limits(max_connections=slots + 8, max_keepalive_connections=slots),
        trust_env=False,
        verify=verify,
    )


class LazyClient:
    """The pooled client, made by the first call that needs one (`client()`): a stdio server that
    is only started, initialised and listed never builds it, and its TLS context, which loads the
    whole CA bundle, costs a tenth of a second and 4 MB."""

    def __init__(self) -> None:
        self._client: httpx.AsyncClient | None = None

    @property
    def made(self) -> bool:
        return self._client is not None

    def __call__(self) -> httpx.AsyncClient:
        if self._client is None:
            self._client = new_http_client()
        return self._client

    async def __aenter__(self) -> LazyClient:
        return self

    async def __aexit__(self, *_: object) -> None:
        if self._client is not None:
            await self._client.aclose()


async def fetch(
    http: httpx.AsyncClient,
    connection: Connection,
    method: str,
    path: str,
    *,
    query: dict[str, str],
    needs: str,
    json_body: Any = None,
    exchange: BackendRequest | None = None,
) -> Payload:
    """Sends one request; `needs` says who may call `path`, for the message of a 403.

    The whole exchange, body included, is bounded by `timeout_seconds()`: httpx's own timeouts
    bound each read, so a server trickling bytes would otherwise hold the call for ever."""
    limit = timeout_seconds()
    request = f"{method} {path}"
    body = request_body(json_body)
    try:
        with anyio.fail_after(limit):
            async with http.stream(
                method,
                connection.url(path, query),
                headers=request_headers(connection, body, exchange),
                content=body,
                timeout=httpx.Timeout(limit, connect=min(limit, CONNECT_TIMEOUT_SECONDS)),
            ) as response:
                if exchange is not None:
                    exchange.status = response.status_code
                check_length(connection, request, response.headers.get("Content-Length"))
                reader = BodyReader(connection, request, response.headers.get("Content-Encoding"))
                # Raw bytes: httpx would inflate a whole compressed chunk before we could count.
                async for chunk in response.aiter_raw():
                    reader.feed(chunk)
                answer_body = reader.body()
    except TimeoutError:
        raise unreachable(connection, f"no answer within {limit:g} s") from None
    except httpx.ConnectTimeout:
        raise unreachable(connection, "the connection timed out") from None
    except httpx.ConnectError as exc:
        raise unreachable(connection, str(exc) or type(exc).__name__, sent=False) from None
    except httpx.TimeoutException:
        raise unreachable(connection, f"no answer within {limit:g} s") from None
    except httpx.TransportError as exc:
        raise unreachable(connection, str(exc) or type(exc).__name__) from None
    give_back.answer_read(len(answer_body))
    retry_after = response.headers.get("Retry-After")
    return answer(connection, request, response.status_code, retry_after, answer_body, needs)
