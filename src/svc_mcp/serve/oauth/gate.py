"""The gateway as an OAuth 2.1 resource server (MCP authorization; README "A gateway for a team").

It serves the RFC 9728 protected resource metadata, answers a request without a valid token
with 401 and a `WWW-Authenticate` challenge pointing at that document, and a tool call whose
scope the token lacks with 403 `insufficient_scope` naming the scope, so a host can step up.
Each tool's scope follows from its row of the tool table: a read needs `svc:read`, a write
`svc:intel`; the 403 is a JSON-RPC error too, so a client shows its text. The caller (the token's
`sub` and client id, never the token) is put where the call's span reads it (`CALLER`) and on
one access line per request (svc_mcp.serve.oauth.access); refused tokens leave folded lines.
While the issuer cannot be read, a token whose key is not known yet is answered 503 with
`Retry-After`, never `invalid_token`: a host would start a new sign-in for nothing.
The token goes no further: the backends are called with the gateway's own credentials.

The SDK's `RequireAuthMiddleware` checks one fixed scope set per route; a scope per tool needs
the JSON-RPC body, which this gate reads (up to the SDK's own body limit) and hands on.
"""

from __future__ import annotations

import hmac
import json
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

import anyio
from mcp.server.auth.provider import AccessToken
from mcp.server.transport_security import DEFAULT_MAX_REQUEST_BODY_SIZE
from mcp.shared.auth import ProtectedResourceMetadata
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from svc_mcp.core.failures import FailureKind
from svc_mcp.core.telemetry import CURRENT_REQUEST, RequestNote
from svc_mcp.core.toolspec import ToolSpec
from svc_mcp.serve.caller import CALLER
from svc_mcp.serve.gateway.gates import UNAUTHORIZED_CODE
from svc_mcp.serve.oauth.access import RefusalLog, access_line
from svc_mcp.serve.oauth.keys import IssuerUnavailable
from svc_mcp.serve.oauth.settings import (
    METADATA_PATH,
    SCOPE_INTEL,
    SCOPE_READ,
    SCOPES,
    OAuthSettings,
    metadata_url,
)
from svc_mcp.serve.oauth.tokens import JwtVerifier

STATIC_CALLER = AccessToken(token="", client_id="static-token", scopes=list(SCOPES))
RETRY_AFTER_SECONDS = 5
UNAVAILABLE_CODE = -32002
"""JSON-RPC codes of the gate's own errors, in the implementation-defined server-error range
(`UNAUTHORIZED_CODE` for 401 and 403, as the static token's gate)."""


def required_scope(spec: ToolSpec) -> str:
    """The one rule: a read-only tool needs `svc:read`, any other `svc:intel`."""
    return SCOPE_READ if spec.hints.read_only else SCOPE_INTEL


def metadata_document(settings: OAuthSettings) -> bytes:
    # Validated by the model from the strings: its config keeps an issuer without a path as
    # it is (RFC 8414 compares issuers exactly; a trailing slash would be another issuer).
    document = ProtectedResourceMetadata.model_validate(
        {
            "resource": settings.public_url,
            "authorization_servers": [settings.issuer],
            "scopes_supported": list(SCOPES),
            "bearer_methods_supported": ["header"],
            "resource_name": "svc-mcp",
        }
    )
    return document.model_dump_json(exclude_none=True).encode()


class OAuthGate:
    """Lets a request through only with a valid access token (and, with `static_token`, that
    token too); serves the metadata document at its well-known paths."""

    def __init__(
        self,
        app: ASGIApp,
        settings: OAuthSettings,
        verifier: JwtVerifier,
        specs: Sequence[ToolSpec],
        static_token: str | None = None,
    ) -> None:
        self.app = app
        self.verifier = verifier
        self.refusals = RefusalLog()
        self.static_token = static_token.encode() if static_token else None
        self.scopes = {spec.name: required_scope(spec) for spec in specs}
        self.document = metadata_document(settings)
        self.metadata_url = metadata_url(settings.public_url)
        self.issuer = settings.issuer
        self.metadata_paths = {METADATA_PATH, urlsplit(self.metadata_url).path}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            # The issuer's keys are read from the start, and kept fresh, beside the app.
            async with anyio.create_task_group() as group:
                group.start_soon(self.verifier.run)
                await self.app(scope, receive, send)
                group.cancel_scope.cancel()
            return
        if scope["type"] != "http":
            if scope["type"] == "websocket":
                await send({"type": "websocket.close", "code": 1008})
                return
            await self.app(scope, receive, send)
            return
        path = scope["path"]
        if path in self.metadata_paths:
            await self._metadata(scope, receive, send)
            return
        if path.startswith("/.well-known/"):
            # The gateway is no authorization server: its metadata is the issuer's to serve.
            await JSONResponse({"error": FailureKind.NOT_FOUND}, 404)(scope, receive, send)
            return
        presented = _presented(scope)
        if presented is None:
            await self._challenge(None)(scope, receive, send)
            return
        try:
            caller = await self._caller(presented)
        except IssuerUnavailable:
            await _unavailable()(scope, receive, send)
            return
        if caller is None:
            client = scope.get("client")
            self.refusals.refused(client[0] if client else "-", "invalid_token")
            await self._challenge("invalid_token")(scope, receive, send)
            return
        note = RequestNote()
        reset_note = CURRENT_REQUEST.set(note)
        try:
            await self._serve(scope, receive, send, caller, note)
        finally:
            CURRENT_REQUEST.reset(reset_note)

    async def _serve(
        self, scope: Scope, receive: Receive, send: Send, caller: AccessToken, note: RequestNote
    ) -> None:
        body, receive = await _buffered(receive)
        if body is None:
            too_large = {
                "error": FailureKind.BAD_REQUEST,
                "message": "the request body is too large",
            }
            await JSONResponse(too_large, status_code=413)(scope, receive, send)
            return
        method, tool, request_id = _call_of(body)
        needed = self.scopes.get(tool) if tool is not None else None
        if needed is not None and needed not in caller.scopes:
            access_line(scope, 403, caller, (method, tool), note.request_id)
            await self._insufficient(needed, request_id)(scope, receive, send)
            return
        started = False

        async def sent(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                # Written as the answer starts: whoever has the answer finds the line.
                started = True
                access_line(scope, message["status"], caller, (method, tool), note.request_id)
            await send(message)

        reset = CALLER.set(caller)
        try:
            await self.app(scope, receive, sent)
        finally:
            CALLER.reset(reset)
            if not started:
                access_line(scope, 0, caller, (method, tool), note.request_id)

    async def _caller(self, presented: bytes) -> AccessToken | None:
        if self.static_token is not None and hmac.compare_digest(presented, self.static_token):
            return STATIC_CALLER
        try:
            token = presented.decode("ascii")
        except UnicodeDecodeError:
            return None
        return await self.verifier.verify_token(token)

    async def _metadata(self, scope: Scope, receive: Receive, send: Send) -> None:
        """The public document, readable from a browser-based client too (CORS)."""
        cors = {"Access-Control-Allow-Origin": "*"}
        if scope["method"] == "OPTIONS":
            preflight = {
                **cors,
                "Access-Control-Allow-Methods": "GET",
                "Access-Control-Allow-Headers": "mcp-protocol-version",
            }
            await Response(status_code=204, headers=preflight)(scope, receive, send)
            return
        if scope["method"] not in ("GET", "HEAD"):
            await Response(status_code=405, headers={"Allow": "GET"})(scope, receive, send)
            return
        headers = {**cors, "Cache-Control": "public, max-age=3600"}
        response = Response(self.document, media_type="application/json", headers=headers)
        await response(scope, receive, send)

    def _challenge(self, error: str | None) -> Response:
        """RFC 6750 §3 with RFC 9728 §5.1: where the metadata is, and the scope to ask for."""
        parts = [f'resource_metadata="{self.metadata_url}"', f'scope="{SCOPE_READ}"']
        if error is not None:
            parts.insert(0, f'error="{error}"')
        message = (
            "this gateway needs an OAuth access token for it, from the authorization server its "
            "metadata names"
            if error is None
            else "the access token is not valid for this gateway"
        )
        return JSONResponse(
            {"error": error or FailureKind.UNAUTHORIZED, "message": message},
            status_code=401,
            headers={"WWW-Authenticate": "Bearer " + ", ".join(parts)},
        )

    def _insufficient(self, needed: str, request_id: object) -> Response:
        """403 with the challenge a host steps up by, and a JSON-RPC error whose text a client
        shows (the MCP SDK's client shows a non-2xx answer's JSON-RPC error, anything else as
        "Server returned an error response")."""
        challenge = (
            f'Bearer error="insufficient_scope", scope="{needed}", '
            f'resource_metadata="{self.metadata_url}"'
        )
        # Whom to ask: which people hold a scope is the authorization server's policy, not ours.
        message = (
            f"insufficient_scope: this call needs the scope {needed}, which your sign-in did not "
            f"grant: ask the administrator of the authorization server {self.issuer} to grant "
            f"you {needed}"
        )
        error = {
            "code": UNAUTHORIZED_CODE,
            "message": message,
            "data": {"kind": FailureKind.UNAUTHORIZED, "reason": "insufficient_scope"},
        }
        return JSONResponse(
            {"jsonrpc": "2.0", "id": request_id, "error": error},
            status_code=403,
            headers={"WWW-Authenticate": challenge},
        )


def _unavailable() -> Response:
    """503 while the issuer cannot be read: the token may be valid, so no `invalid_token` (which
    would send every host to sign in again)."""
    message = (
        "unavailable: the authorization server's signing keys cannot be read just now; "
        f"try again in {RETRY_AFTER_SECONDS} s"
    )
    error = {
        "code": UNAVAILABLE_CODE,
        "message": message,
        "data": {"kind": FailureKind.UNAVAILABLE, "retry_after": RETRY_AFTER_SECONDS},
    }
    return JSONResponse(
        {"jsonrpc": "2.0", "id": None, "error": error},
        status_code=503,
        headers={"Retry-After": str(RETRY_AFTER_SECONDS)},
    )


def _presented(scope: Scope) -> bytes | None:
    supplied = dict(scope["headers"]).get(b"authorization", b"")
    scheme, _, token = supplied.strip().partition(b" ")
    return (token.strip() or None) if scheme.lower() == b"bearer" else None


async def _buffered(receive: Receive) -> tuple[bytes | None, Receive]:
    """The whole request body (None past the SDK's own limit), and a `receive` that hands it on
    as one message."""
    chunks, size = [], 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return b"", _replay(message, receive)
        chunks.append(message.get("body", b""))
        size += len(chunks[-1])
        if size > DEFAULT_MAX_REQUEST_BODY_SIZE:
            return None, receive
        if not message.get("more_body", False):
            break
    body = b"".join(chunks)
    return body, _replay({"type": "http.request", "body": body, "more_body": False}, receive)


def _replay(first: Message, receive: Receive) -> Receive:
    pending: list[Message] = [first]

    async def replay() -> Message:
        return pending.pop() if pending else await receive()

    return replay


def _call_of(body: bytes) -> tuple[str | None, str | None, str | int | None]:
    """The JSON-RPC method, for `tools/call` the tool's name, and the request's id (None for
    anything else: the SDK answers a malformed body itself)."""
    if not body:
        return None, None, None
    try:
        message: Any = json.loads(body)
    except ValueError:
        return None, None, None
    if not isinstance(message, Mapping) or not isinstance(message.get("method"), str):
        return None, None, None
    params = message.get("params")
    name = params.get("name") if isinstance(params, Mapping) else None
    tool = name if message["method"] == "tools/call" and isinstance(name, str) else None
    request_id = message.get("id")
    valid_id = isinstance(request_id, str | int) and not isinstance(request_id, bool)
    return message["method"], tool, request_id if valid_id else None
