"""What the bounded protocol (`svc_serving.bounded`) answers by itself, outside any app: a whole
response written straight to the transport, and the ASGI app that refuses a request whose `Host`
or `Authorization` header is repeated."""

from __future__ import annotations

import json
from typing import Any

from starlette.types import Receive, Scope, Send

from svc_serving.contracts import SAFE_HEADERS

UNIQUE_HEADERS = (b"host", b"authorization")
_SAFE_HEAD = "".join(f"{k.lower()}: {v}\r\n" for k, v in SAFE_HEADERS.items()).encode()


def raw_response(status: int, reason: str, body: dict[str, Any]) -> bytes:
    """A complete response carrying `body` as JSON, closing the connection."""
    content = json.dumps(body, separators=(",", ":")).encode()
    return (
        f"HTTP/1.1 {status} {reason}\r\n".encode()
        + b"content-type: application/json\r\n"
        + _SAFE_HEAD
        + b"content-length: "
        + str(len(content)).encode()
        + b"\r\n"
        b"connection: close\r\n\r\n" + content
    )


def error_body(code: str, message: str) -> dict[str, Any]:
    """The gateway's error body; the stubs override it with their envelope."""
    return {"error": code, "message": message}


def repeated_header(headers: list[tuple[bytes, bytes]]) -> str | None:
    """The first of UNIQUE_HEADERS seen twice, in one pass over the headers."""
    seen: set[bytes] = set()
    for key, _ in headers:
        if key in UNIQUE_HEADERS:
            if key in seen:
                return key.decode().title()
            seen.add(key)
    return None


def refusing(body: dict[str, Any]) -> Any:
    content = json.dumps(body, separators=(",", ":")).encode()

    async def refuse(scope: Scope, receive: Receive, send: Send) -> None:
        await send(
            {
                "type": "http.response.start",
                "status": 400,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(content)).encode()),
                    (b"connection", b"close"),
                ],
            }
        )
        await send({"type": "http.response.body", "body": content})

    return refuse
