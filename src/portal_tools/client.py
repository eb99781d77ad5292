"""The HTTP client of both backends: one request, the envelope unwrapped, failures typed.

Both APIs answer `{"ok": true, "data": ..., "next_cursor"?: ...}` or
`{"ok": false, "error": {"code": ..., "message": ...}}` (DESIGN section 4). Nothing is retried:
a 429 in particular must not be, or a wrong token would burn the lockout budget.
"""

from __future__ import annotations

import json
import math
import os
import re
import ssl
from dataclasses import dataclass, field
from typing import Any

import anyio
import httpx

from portal_tools.errors import (
    BadRequest,
    CallError,
    Forbidden,
    LockedOut,
    NotFound,
    RateLimited,
    ServerError,
    Unauthorized,
    Unreachable,
)

MAX_RESPONSE_BYTES = 16 * 1024 * 1024
TIMEOUT_SECONDS = 10.0
TIMEOUT_VARIABLE = "SVC_MCP_TIMEOUT_SECONDS"
MAX_TIMEOUT_SECONDS = 600.0
CONNECT_TIMEOUT_SECONDS = 5.0
_MAX_QUOTED_CHARS = 300


@dataclass(frozen=True)
class Connection:
    """Where one backend is and how to authenticate, as the environment says right now."""

    service: str
    """How messages name the backend, e.g. "the portal"."""
    base_url: str
    base_url_variable: str
    token: str | None = field(repr=False)
    credential_variable: str
    """What to set to change the token, as messages name it."""

    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"} if self.token else {}

    def scrub(self, text: str) -> str:
        """`text` as one bounded line, with the token (should a server echo it) removed."""
        if self.token:
            text = text.replace(self.token, "[redacted]")
        line = re.sub(r"\s+", " ", text).strip()
        return line[:_MAX_QUOTED_CHARS]


@dataclass(frozen=True)
class Payload:
    """A successful answer: the envelope's `data`, and `next_cursor` when more remain."""

    data: Any
    next_cursor: str | None = None


def new_http_client() -> httpx.AsyncClient:
    """One pooled client per process (CLI call) or per server (MCP).

    `trust_env=False`: httpx would otherwise scan the whole environment for proxy settings, and
    that environment may hold SERVICE_INTEL_HMAC, which this package never reads. The backends
    are on loopback or behind an SSH tunnel; a private CA is taken from SSL_CERT_FILE by name.
    """
    ca_file = os.environ.get("SSL_CERT_FILE")
    verify: ssl.SSLContext | bool = ssl.create_default_context(cafile=ca_file) if ca_file else True
    return httpx.AsyncClient(
        timeout=httpx.Timeout(TIMEOUT_SECONDS, connect=CONNECT_TIMEOUT_SECONDS),
        trust_env=False,
        verify=verify,
    )


def timeout_seconds() -> float:
    """How long one call may take in all: `SVC_MCP_TIMEOUT_SECONDS`, read at each call, when it
    holds a number in (0, 600]; otherwise 10 s."""
    try:
        value = float(os.environ.get(TIMEOUT_VARIABLE, ""))
    except ValueError:
        return TIMEOUT_SECONDS
    return value if math.isfinite(value) and 0 < value <= MAX_TIMEOUT_SECONDS else TIMEOUT_SECONDS


async def fetch(
    http: httpx.AsyncClient,
    connection: Connection,
    method: str,
    path: str,
    *,
    query: dict[str, str],
    needs: str,
    json_body: Any = None,
) -> Payload:
    """Sends one request; `needs` says who may call `path`, for the message of a 403.

    The whole exchange, body included, is bounded by `timeout_seconds()`: httpx's own timeouts
    bound each read, so a server trickling bytes would otherwise hold the call for ever."""
    limit = timeout_seconds()
    try:
        with anyio.fail_after(limit):
            async with http.stream(
                method,
                connection.base_url + path,
                params=query,
                headers=connection.headers(),
                json=json_body,
                timeout=httpx.Timeout(limit, connect=min(limit, CONNECT_TIMEOUT_SECONDS)),
            ) as response:
                body = await _read_bounded(response, connection, f"{method} {path}")
    except TimeoutError:
        raise _unreachable(connection, httpx.ReadTimeout("deadline"), limit) from None
    except httpx.TransportError as exc:
        raise _unreachable(connection, exc, limit) from None
    envelope = _envelope(body)
    if response.is_success and envelope is not None and envelope["ok"] and "data" in envelope:
        next_cursor = envelope.get("next_cursor")
        if next_cursor is None or isinstance(next_cursor, str):
            return Payload(envelope["data"], next_cursor)
    raise _failure(response, envelope, connection, f"{method} {path}", needs)


async def _read_bounded(response: httpx.Response, connection: Connection, request: str) -> bytes:
    """The body, refused past MAX_RESPONSE_BYTES: a hostile or broken backend cannot make the
    MCP server hold an unbounded answer in memory."""
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        size += len(chunk)
        if size > MAX_RESPONSE_BYTES:
            raise ServerError(
                f"{connection.service} answered {request} with more than "
                f"{MAX_RESPONSE_BYTES // (1024 * 1024)} MiB; refused"
            )
        chunks.append(chunk)
    return b"".join(chunks)


def _envelope(raw: bytes) -> dict[str, Any] | None:
    try:
        body = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    if isinstance(body, dict) and isinstance(body.get("ok"), bool):
        return body
    return None


def _unreachable(
    connection: Connection, exc: httpx.TransportError, read_timeout: float | None
) -> Unreachable:
    if isinstance(exc, httpx.ConnectTimeout):
        reason = "the connection timed out"
    elif isinstance(exc, httpx.TimeoutException) and read_timeout is not None:
        reason = f"no answer within {read_timeout:g} s"
    else:
        reason = connection.scrub(str(exc)) or type(exc).__name__
    return Unreachable(
        f"cannot reach {connection.service} at {connection.base_url} ({reason}); is it running? "
        f"{connection.base_url_variable} sets the address",
        base_url=connection.base_url,
    )


def _failure(
    response: httpx.Response,
    envelope: dict[str, Any] | None,
    connection: Connection,
    request: str,
    needs: str,
) -> CallError:
    status = response.status_code
    error = envelope.get("error") if envelope else None
    code = error.get("code") if isinstance(error, dict) else None
    message = error.get("message") if isinstance(error, dict) else None
    said = connection.scrub(f"{code}: {message}") if code and message else "no error envelope"
    service, variable = connection.service, connection.credential_variable
    if status == 401:
        if connection.token:
            return Unauthorized(
                f"{service} refused the token in {variable} for {request} ({said}); "
                f"set {variable} to a valid, unexpired token"
            )
        return Unauthorized(f"{service} needs a token for {request} ({said}); set {variable}")
    if status == 403:
        whose = (
            f"the token in {variable} belongs to an identity without it"
            if connection.token
            else f"no token is set: set {variable} to a session of such an identity"
        )
        return Forbidden(f"{request} needs {needs}; {whose} ({service} said {said})")
    if status == 404:
        return NotFound(
            f"{service} at {connection.base_url} has no {request} ({said}); "
            f"check that {connection.base_url_variable} points at {service}"
        )
    if status == 429:
        return _too_many(response, code, connection)
    if 400 <= status < 500:
        return BadRequest(f"{service} refused {request}: HTTP {status} ({said})")
    if response.is_success:
        return ServerError(f"{service} answered {request} without the documented envelope")
    return ServerError(f"{service} failed to answer {request}: HTTP {status} ({said})")


def _too_many(response: httpx.Response, code: object, connection: Connection) -> CallError:
    raw = response.headers.get("Retry-After", "")
    retry_after = int(raw) if raw.isdigit() else None
    when = f"retry after {retry_after} seconds" if retry_after is not None else "retry later"
    if code == "rate_limited":
        return RateLimited(
            f"{connection.service} is rate limiting requests: {when}; not retried automatically",
            retry_after,
        )
    return LockedOut(
        f"locked out by {connection.service} after repeated failed credentials: {when}; "
        f"not retried automatically, so check {connection.credential_variable} first",
        retry_after,
    )
