"""The HTTP conventions both stub servers share: the envelope, error codes, paging, limits.

Every response is `{"ok": true, "data": ...}` (plus `next_cursor` when a list has more) or
`{"ok": false, "error": {"code": ..., "message": ...}}`. Handlers raise `ApiError`; the exception
handlers installed by `envelope_exception_handlers()` turn everything, including Starlette's own
404/405/413 and any unexpected exception, into that envelope. No traceback ever reaches a client.
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from svc_serving.contracts import DEFAULT_LIMIT, MAX_BODY_BYTES, MAX_LIMIT, SAFE_HEADERS

log = logging.getLogger("server_stub")

MAX_HEADER_BYTES = 8 * 1024

Clock = Callable[[], float]
"""Seconds since the epoch. Injected wherever time matters so tests never sleep."""

T = TypeVar("T")

_STATUS_CODES = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    409: "conflict",
    413: "payload_too_large",
    414: "uri_too_long",
    415: "unsupported_media_type",
    429: "rate_limited",
    431: "headers_too_large",
    503: "unavailable",
}


class ApiError(Exception):
    """A refusal that becomes a failure envelope with a stable snake_case code."""

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.headers = dict(headers or {})


STORAGE_RETRY_AFTER_SECONDS = 2
"""What a temporary storage failure (a lock held too long, a full disk) tells a client to wait."""


def storage_unavailable(message: str) -> ApiError:
    """503 for storage that may work again soon, with `Retry-After` so a client knows when."""
    return ApiError(503, "unavailable", message, {"Retry-After": str(STORAGE_RETRY_AFTER_SECONDS)})


def ok(data: Any, *, next_cursor: str | None = None, status: int = 200) -> Response:
    body: dict[str, Any] = {"ok": True, "data": data}
    if next_cursor is not None:
        body["next_cursor"] = next_cursor
    return JSONResponse(body, status_code=status, headers=SAFE_HEADERS)


class RenderedEnvelopes:
    """Success responses for results a cache keeps, rendered once each: a result seen again (the
    same object) is answered with the response made for it. A response is only ever read when
    sent (its status, headers and body), so one serves every request for its result. At most
    `capacity` responses of at most `max_body_bytes` each are kept."""

    def __init__(self, capacity: int = 64, max_body_bytes: int = 128 * 1024) -> None:
        self.capacity = capacity
        self.max_body_bytes = max_body_bytes
        # By id, with the result itself held so that its id is not reused while kept.
        self._kept: dict[int, tuple[object, Response]] = {}

    def response(self, result: object, render: Callable[[], Response]) -> Response:
        kept = self._kept.get(id(result))
        if kept is not None and kept[0] is result:
            return kept[1]
        if len(self._kept) >= self.capacity:
            self._kept.clear()
        rendered = render()
        if len(rendered.body) <= self.max_body_bytes:
            self._kept[id(result)] = (result, rendered)
        return rendered


def failure(
    status: int, code: str, message: str, headers: Mapping[str, str] | None = None
) -> Response:
    body = {"ok": False, "error": {"code": code, "message": message}}
    return JSONResponse(body, status_code=status, headers={**SAFE_HEADERS, **(headers or {})})


async def _api_error(_: Request, exc: Exception) -> Response:
    assert isinstance(exc, ApiError)
    return failure(exc.status, exc.code, exc.message, exc.headers)


async def _http_exception(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    headers = dict(exc.headers or {})
    if exc.status_code == 405:
        allowed = {m.strip() for m in headers.get("Allow", "").split(",") if m.strip()}
        order = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"]
        headers["Allow"] = ", ".join(m for m in order if m in allowed)
        message = f"{request.method} is not allowed here; allowed: {headers['Allow']}"
    elif exc.status_code == 404:
        message = "no resource at this path; see the API reference for the routes"
    elif exc.status_code == 413:
        message = f"request body exceeds {MAX_BODY_BYTES} bytes"
    else:
        message = str(exc.detail)
    code = _STATUS_CODES.get(exc.status_code, "error")
    return failure(exc.status_code, code, message, headers)


async def _unexpected(request: Request, exc: Exception) -> Response:
    # Logged without request headers or body: they may carry credentials.
    log.error("unhandled error on %s %s: %s", request.method, request.url.path, type(exc).__name__)
    return failure(500, "internal_error", "the server failed to answer this request")


def envelope_exception_handlers() -> dict[Any, Callable[..., Any]]:
    return {ApiError: _api_error, HTTPException: _http_exception, Exception: _unexpected}


@dataclass(frozen=True)
class PageRequest:
    limit: int
    offset: int


def encode_cursor(offset: int) -> str:
    return base64.urlsafe_b64encode(f"o:{offset}".encode()).decode().rstrip("=")


def parse_page(request: Request) -> PageRequest:
    """Reads `limit` (1..MAX_LIMIT, default DEFAULT_LIMIT) and an opaque `cursor`."""
    raw_limit = request.query_params.get("limit")
    limit = DEFAULT_LIMIT
    if raw_limit is not None:
        # isascii: "²".isdigit() is True but int("²") raises; the length cap keeps int() cheap.
        if not (raw_limit.isascii() and raw_limit.isdigit() and len(raw_limit) <= 9) or not (
            1 <= int(raw_limit) <= MAX_LIMIT
        ):
            raise ApiError(
                400, "bad_request", f"limit must be a whole number from 1 to {MAX_LIMIT}"
            )
        limit = int(raw_limit)
    offset = 0
    raw_cursor = request.query_params.get("cursor")
    if raw_cursor is not None:
        offset = _decode_cursor(raw_cursor)
    return PageRequest(limit=limit, offset=offset)


def _decode_cursor(cursor: str) -> int:
    invalid = ApiError(400, "bad_request", "cursor is not one this server issued")
    if len(cursor) > 64:
        raise invalid
    try:
        text = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode("ascii")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        raise invalid from None
    prefix, _, number = text.partition(":")
    if prefix != "o" or not number.isdigit() or len(number) > 12:
        raise invalid
    return int(number)


def paged(items: Sequence[T], page: PageRequest) -> tuple[list[T], str | None]:
    chunk = list(items[page.offset : page.offset + page.limit])
    end = page.offset + len(chunk)
    return chunk, encode_cursor(end) if end < len(items) else None


def ok_page(items: Sequence[Any], request: Request) -> Response:
    chunk, next_cursor = paged(items, parse_page(request))
    return ok(chunk, next_cursor=next_cursor)


JSON_MEDIA_TYPES = ("application/json",)


def require_json(request: Request) -> None:
    media_type = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if media_type not in JSON_MEDIA_TYPES:
        raise ApiError(
            415, "unsupported_media_type", "send the body as JSON (Content-Type: application/json)"
        )


async def read_json_object(request: Request, *, required: set[str]) -> dict[str, Any]:
    """The body as a JSON object with exactly the `required` keys, or a 400."""
    raw = await request.body()
    try:
        body = json.loads(raw)
    except (ValueError, RecursionError):
        raise ApiError(400, "bad_request", "the body is not valid JSON") from None
    if not isinstance(body, dict):
        raise ApiError(400, "bad_request", "the body must be a JSON object")
    if body.keys() != required:
        expected = ", ".join(sorted(required))
        raise ApiError(400, "bad_request", f"the body must be an object with exactly: {expected}")
    return body
