"""One backend as a call sees it, and how its answers become values or typed errors.

Both APIs answer `{"ok": true, "data": ..., "next_cursor"?: ...}` or
`{"ok": false, "error": {"code": ..., "message": ...}}` (docs/api-portal.md, docs/api-service.md).
The two transports, `svc_mcp.core.client` (httpx, pooled, for the MCP server) and
`svc_mcp.core.oneshot` (the standard library, for one CLI call), both end in `answer` and
`unreachable` here, so a failure reads the same whichever way the call went. Only the standard
library is imported.
"""

from __future__ import annotations

import base64
import json
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

from svc_mcp.core.errors import (
    BadRequest,
    CallError,
    Forbidden,
    LockedOut,
    NotFound,
    RateLimited,
    ServerError,
    Unauthorized,
    Unavailable,
    Unreachable,
)
from svc_mcp.core.safe_text import visible
from svc_mcp.core.telemetry import BackendRequest
from svc_serving.contracts import MAX_TARGET_BYTES
from svc_serving.forwarded_by import HEADER, encoded

MAX_RESPONSE_BYTES = 16 * 1024 * 1024
CONNECT_TIMEOUT_SECONDS = 5.0
MAX_URL_CHARS = MAX_TARGET_BYTES
_MAX_QUOTED_CHARS = 300
REDACTED = "[redacted]"
LOCKOUT_HINT = "the lockout: wait retry_after seconds (the token was not checked)"
"""A lockout's hint names the lockout, never the token variable: nothing the caller sets helps."""


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
    token_scheme: str = "Bearer"  # noqa: S105 (a scheme name, not a secret)
    max_answer_bytes: int = MAX_RESPONSE_BYTES
    """The largest answer read from this backend (`Backend.max_answer_bytes`)."""
    identity: tuple[str, str] | None = field(default=None, repr=False)
    """An access proxy's header (name, signed assertion), sent in place of the token: the
    gateway's OAuth caller as the portal sees them (svc_mcp.serve.oauth.portal_identity)."""
    renewal: str | None = None
    """What renews a refused token (`Backend.renewal`), said by a 401."""
    forwarded_by: str | None = None
    """The person the gateway forwards this call for (svc_serving.forwarded_by), if any."""
    on_behalf: str | None = None
    """Set when the call is made for a person, not the token's holder: what a 401 or 403 then
    says in place of advice about the token."""

    def headers(self) -> dict[str, str]:
        person = {HEADER: encoded(self.forwarded_by)} if self.forwarded_by else {}
        if self.identity is not None:
            return {self.identity[0]: self.identity[1], **person}
        token = {"Authorization": f"{self.token_scheme} {self.token}"} if self.token else {}
        return {**token, **person}

    def url(self, path: str, query: dict[str, str]) -> str:
        """The request URL; `BadRequest` when the arguments make it longer than any server takes."""
        url = self.base_url + path + (f"?{urlencode(query)}" if query else "")
        if len(url) > MAX_URL_CHARS:
            raise BadRequest(
                f"the arguments make the request URL {len(url):,} characters long, over the "
                f"{MAX_URL_CHARS:,} a server accepts; shorten them"
            )
        return url

    def scrub(self, text: str) -> str:
        """`text` as one bounded line, with every spelling of the token removed (should a
        server or a library echo it)."""
        assertion = self.identity[1] if self.identity is not None else None
        line = re.sub(r"\s+", " ", redact(text, [self.token, assertion])).strip()
        return line[:_MAX_QUOTED_CHARS]


def redact(text: str, secrets: Iterable[str | None]) -> str:
    """`text` with every spelling of each secret (raw, escaped as Python would, base64)
    replaced by REDACTED."""
    for secret in secrets:
        if secret:
            for form in _spellings(secret):
                text = text.replace(form, REDACTED)
    return text


def _spellings(token: str) -> list[str]:
    raw = token.encode()
    encoded = [base64.b64encode(raw), base64.urlsafe_b64encode(raw)]
    forms = {token, repr(token)[1:-1], repr(raw)[2:-1]}
    forms |= {form.decode() for form in encoded} | {form.decode().rstrip("=") for form in encoded}
    # Longest first, so that a longer spelling is not left half-replaced by a shorter one.
    return sorted(forms, key=len, reverse=True)


@dataclass(frozen=True)
class Payload:
    """A successful answer: the envelope's `data`, and `next_cursor` when more remain."""

    data: Any
    next_cursor: str | None = None


def request_headers(
    connection: Connection, body: bytes | None, exchange: BackendRequest | None = None
) -> dict[str, str]:
    """The headers of every request, whichever transport sends it. `identity`: a backend's
    answer is read as sent, so a small compressed answer cannot inflate in memory. `exchange`
    adds the request id and the trace context (svc_mcp.core.telemetry)."""
    headers = {"Accept": "application/json", "Accept-Encoding": "identity"}
    if body is not None:
        headers["Content-Type"] = "application/json"
    if exchange is not None:
        headers.update(exchange.headers)
    return {**headers, **connection.headers()}


def request_body(json_body: Any) -> bytes | None:
    """The JSON body as both transports send it (and as `submit_intel` measures it)."""
    if json_body is None:
        return None
    return json.dumps(json_body, ensure_ascii=False, separators=(",", ":")).encode()


def unreachable(connection: Connection, reason: str, *, sent: bool = True) -> Unreachable:
    """No HTTP answer; `reason` is scrubbed here, whatever the transport put into it. `sent`:
    whether the request may have reached the server (False only when no connection was made)."""
    return Unreachable(
        f"cannot reach {connection.service} at {connection.base_url} "
        f"({connection.scrub(reason) or 'no reason given'}); "
        f"{_which_mistake(connection.base_url, reason, sent=sent)}"
        f"{connection.base_url_variable} sets the address",
        base_url=connection.base_url,
        hint=connection.base_url_variable,
        sent=sent,
    )


# What OpenSSL says when the answer to a TLS hello is plain HTTP.
_PLAIN_HTTP_ANSWER = ("wrong version number", "record layer failure", "packet length too long")
# How an HTTPS server treats a plain HTTP request: it resets, closes, or answers a TLS alert.
_TLS_REFUSING_PLAIN = ("reset by peer", "disconnected without sending", "illegal status line")


def _which_mistake(base_url: str, reason: str, *, sent: bool) -> str:
    """The likely mistake: https:// to a server that speaks plain HTTP, http:// to one that
    speaks TLS, or nothing running there."""
    scheme, said = base_url.partition(":")[0].lower(), reason.lower()
    if scheme == "https" and any(sign in said for sign in _PLAIN_HTTP_ANSWER):
        return "it answered in plain HTTP, not TLS: is it http://, not https://? "
    if scheme == "http" and sent and any(sign in said for sign in _TLS_REFUSING_PLAIN):
        return "is it running, and does it speak https (use https://)? "
    return "is it running? "


def answer(
    connection: Connection,
    request: str,
    status: int,
    retry_after: str | None,
    body: bytes,
    needs: str,
) -> Payload:
    """The payload of an HTTP answer, or the `CallError` it means; `needs` says who may call
    `request`, for the message of a 403."""
    envelope = _envelope(body)
    if 200 <= status < 300 and envelope is not None and envelope["ok"] and "data" in envelope:
        next_cursor = envelope.get("next_cursor")
        if next_cursor is None or isinstance(next_cursor, str):
            return Payload(envelope["data"], next_cursor)
    raise _failure(connection, request, status, retry_after, envelope, needs)


def _envelope(raw: bytes) -> dict[str, Any] | None:
    try:
        body = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    if isinstance(body, dict) and isinstance(body.get("ok"), bool):
        return body
    return None


def _failure(
    connection: Connection,
    request: str,
    status: int,
    retry_after: str | None,
    envelope: dict[str, Any] | None,
    needs: str,
) -> CallError:
    error = envelope.get("error") if envelope else None
    code = error.get("code") if isinstance(error, dict) else None
    message = error.get("message") if isinstance(error, dict) else None
    said = connection.scrub(f"{code}: {message}") if code and message else None
    failure = _failure_for_status(connection, request, status, retry_after, code, said, needs)
    if said is not None and visible(said) in str(failure):
        failure.quoted = visible(said)
    return failure


def _failure_for_status(
    connection: Connection,
    request: str,
    status: int,
    retry_after: str | None,
    code: object,
    said: str | None,
    needs: str,
) -> CallError:
    said = said or "no error envelope"
    service, variable = connection.service, connection.credential_variable
    if status in (401, 403) and connection.on_behalf is not None:
        refused = Unauthorized if status == 401 else Forbidden
        return refused(
            f"{service} refused {request}, which needs {needs} ({service} said {said}); "
            f"{connection.on_behalf}",
            hint=needs,
        )
    if status == 401:
        if connection.token:
            renew = f" ({connection.renewal})" if connection.renewal else ""
            return Unauthorized(
                f"{service} refused the token in {variable} for {request} ({said}); "
                f"set {variable} to a valid, unexpired token{renew}",
                hint=variable,
            )
        return Unauthorized(
            f"{service} needs a token for {request} ({said}); set {variable}", hint=variable
        )
    if status == 403:
        whose = (
            f"the token in {variable} belongs to an identity without it"
            if connection.token
            else f"no token is set: set {variable} to a session of such an identity"
        )
        return Forbidden(f"{request} needs {needs}; {whose} ({service} said {said})", hint=needs)
    if status == 404:
        return NotFound(
            f"{service} at {connection.base_url} has no {request} ({said}); "
            f"check that {connection.base_url_variable} points at {service}",
            hint=connection.base_url_variable,
        )
    if status == 429:
        return _too_many(connection, code, retry_after)
    if status in UNAVAILABLE_STATUSES:
        seconds = retry_after_seconds(retry_after)
        return Unavailable(
            f"{service} is unavailable for {request}: HTTP {status} ({said}); {_when(seconds)}",
            retry_after=seconds,
        )
    if 400 <= status < 500:
        return BadRequest(f"{service} refused {request}: HTTP {status} ({said})")
    if 200 <= status < 300:
        return ServerError(f"{service} answered {request} without the documented envelope")
    return ServerError(f"{service} failed to answer {request}: HTTP {status} ({said})")


UNAVAILABLE_STATUSES = frozenset({502, 503, 504})
"""A gateway or the backend itself says it cannot answer now: a later retry may succeed."""
MAX_RETRY_AFTER_SECONDS = 24 * 3600


def retry_after_seconds(raw: str | None) -> int | None:
    """A `Retry-After` value (seconds or an HTTP date) as whole seconds from now, at most a day;
    None when absent or unreadable."""
    if not raw:
        return None
    text = raw.strip()
    if text.isdigit():
        return min(int(text), MAX_RETRY_AFTER_SECONDS)
    from email.utils import parsedate_to_datetime

    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        return None
    from datetime import UTC, datetime

    seconds = math.ceil((when - datetime.now(UTC)).total_seconds())
    return min(max(seconds, 0), MAX_RETRY_AFTER_SECONDS)


def _when(seconds: int | None) -> str:
    return f"retry after {seconds} seconds" if seconds is not None else "retry later"


def _too_many(connection: Connection, code: object, raw: str | None) -> CallError:
    retry_after = retry_after_seconds(raw)
    when = _when(retry_after)
    if code == "rate_limited":
        return RateLimited(
            f"{connection.service} is rate limiting requests: {when}; not retried automatically",
            retry_after=retry_after,
        )
    # A locked caller's token is refused unchecked, and the failures that locked it may be anyone's
    # at its address (every local user shares 127.0.0.1): the token is no suspect.
    return LockedOut(
        f"locked out by {connection.service} after repeated failed credentials from this "
        f"caller's address (on the same machine: its local user), not necessarily with "
        f"{connection.credential_variable}, which was not checked: {when}; "
        "not retried automatically",
        retry_after=retry_after,
        hint=LOCKOUT_HINT,
    )
