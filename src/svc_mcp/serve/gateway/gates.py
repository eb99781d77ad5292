"""The gateway's front layers, outermost first: `Host`/`Origin` checked before anything else,
the static bearer token, and no standalone SSE stream at the MCP path."""

from __future__ import annotations

import hmac
import re
from collections.abc import Sequence

from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from svc_mcp.core.failures import FailureKind
from svc_mcp.core.settings import GATEWAY_TOKEN_VARIABLE

HOST_VALUE = re.compile(r"(\[[0-9A-Fa-f:.]+\]|[^:\[\]/@\s]+)(:[0-9]{1,5})?")
ORIGIN_VALUE = re.compile(r"https?://(\[[0-9A-Fa-f:.]+\]|[^:\[\]/@\s]+)(:[0-9]{1,5})?")


class StrictHostAndOrigin:
    """The first thing a request meets: a `Host` that is missing, malformed or not one of
    `allowed_hosts` (any port) is answered 421, an `Origin` that is malformed 403. The SDK checks
    both as well, but only once a request has reached its route (after the token check, after
    routing), and its `name:*` patterns would match `localhost:evil.example` as a prefix."""

    def __init__(self, app: ASGIApp, allowed_hosts: Sequence[str]) -> None:
        self.app = app
        self.allowed_hosts = frozenset(host.lower() for host in allowed_hosts)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            headers = dict(scope["headers"])
            host, origin = headers.get(b"host"), headers.get(b"origin")
            found = HOST_VALUE.fullmatch(host.decode("latin-1")) if host is not None else None
            if found is None or found.group(1).lower() not in self.allowed_hosts:
                await Response("Invalid Host header", status_code=421)(scope, receive, send)
                return
            if origin is not None and not ORIGIN_VALUE.fullmatch(origin.decode("latin-1")):
                await Response("Invalid Origin header", status_code=403)(scope, receive, send)
                return
        await self.app(scope, receive, send)


class BearerGate:
    """Lets a request through only with `Authorization: Bearer <token>`."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self.token = token.encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"].startswith("/.well-known/oauth-"):
            # No OAuth here: a 401 would start a client's OAuth discovery that cannot succeed.
            await JSONResponse({"error": FailureKind.NOT_FOUND}, status_code=404)(
                scope, receive, send
            )
            return
        if scope["type"] == "lifespan" or self._authorized(scope):
            await self.app(scope, receive, send)
            return
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
            return
        await self._refusal(scope)(scope, receive, send)

    def _presented(self, scope: Scope) -> bytes | None:
        """The bearer token presented, or None when there is none."""
        supplied = dict(scope["headers"]).get(b"authorization", b"")
        scheme, _, token = supplied.strip().partition(b" ")
        return (token.strip() or None) if scheme.lower() == b"bearer" else None

    def _authorized(self, scope: Scope) -> bool:
        presented = self._presented(scope)
        # compare_digest's time does not depend on where the values differ.
        return presented is not None and hmac.compare_digest(presented, self.token)

    def _refusal(self, scope: Scope) -> Response:
        """RFC 6750: no token gets a bare challenge, a wrong one `invalid_token`; the body names
        the variable the client must set."""
        if self._presented(scope) is None:
            challenge = "Bearer"
            error: str = FailureKind.UNAUTHORIZED
            problem = "this gateway needs a bearer token"
        else:
            challenge = (
                'Bearer error="invalid_token", '
                'error_description="the gateway token is not the one this gateway expects"'
            )
            error, problem = (
                "invalid_token",
                "the gateway token is not the one this gateway expects",
            )
        message = (
            f"{problem}: set {GATEWAY_TOKEN_VARIABLE} in the client to the gateway's token and "
            "send it as Authorization: Bearer <token>"
        )
        # A JSON-RPC error as well: the MCP SDK's client shows a non-2xx answer's JSON-RPC error
        # as the exception's message (anything else as "Server returned an error response").
        rpc_error = {
            "code": UNAUTHORIZED_CODE,
            "message": f"{FailureKind.UNAUTHORIZED}: {message}",
            "data": {"kind": FailureKind.UNAUTHORIZED, "reason": error},
        }
        return JSONResponse(
            {"jsonrpc": "2.0", "id": None, "error": rpc_error, "message": message},
            status_code=401,
            headers={"WWW-Authenticate": challenge},
        )


UNAUTHORIZED_CODE = -32001
"""The JSON-RPC code of the 401's error: in the implementation-defined server-error range."""


class NoStandaloneStream:
    """Answers GET at the MCP path with 405, the spec's way to say "no SSE stream offered here",
    and any other path with 404.

    A stateless gateway could never send anything on such a stream (no session ties it to a
    client; every answer goes on the response to its own POST), so it would only hold a
    connection open through every proxy in between. The MCP path is the app's one route; another
    path never reaches it, where Starlette's router would answer `/mcp/` with a redirect built
    from the Host header.
    """

    def __init__(self, app: ASGIApp, path: str) -> None:
        self.app = app
        self.path = path

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"] != self.path:
            await PlainTextResponse("Not Found", status_code=404)(scope, receive, send)
            return
        if scope["type"] == "http" and scope["method"] == "GET":
            await Response(status_code=405, headers={"Allow": "POST"})(scope, receive, send)
            return
        await self.app(scope, receive, send)
