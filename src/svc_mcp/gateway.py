"""`svc-mcp --http`: the MCP server over streamable HTTP, a small tool gateway.

By default it binds 127.0.0.1; reach it from elsewhere through an SSH tunnel
(`ssh -N -L 8765:127.0.0.1:8765 host`), or serve a Unix socket only its owner may open
(`--uds PATH`, mode 0600; `ssh -N -L 8765:PATH host`). The SDK's DNS-rebinding protection answers
a foreign `Host` with 421 and a foreign `Origin` with 403 (a port in either must be digits).
Every request must carry `Authorization: Bearer <token>` (401 otherwise, compared in constant
time): `SVC_MCP_GATEWAY_TOKEN`, or when that is unset the token kept for the person in their state
directory (svc_client/gateway_token.py). `--no-auth` serves without a token, on loopback or a Unix
socket only. A bind beyond loopback is refused unless `--allow-remote` is given and
`SVC_MCP_GATEWAY_TOKEN` is set.
It keeps no session: every POST is answered on its own, as JSON, in both protocol eras
(initialize and 2026-07-28), so instances scale out behind a load balancer.
"""

from __future__ import annotations

import hmac
import ipaddress
import os
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import uvicorn
from mcp.server.transport_security import TransportSecuritySettings
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from svc_client.client import new_http_client
from svc_client.failures import FailureKind
from svc_client.gateway_token import (
    MIN_TOKEN_CHARS,
    GatewayTokenFileError,
    ensure_gateway_token,
    gateway_token_path,
)
from svc_client.settings import GATEWAY_TOKEN_VARIABLE
from svc_client.telemetry import GATEWAY_ROOT_SAMPLE_RATIO
from svc_client.telemetry import setup as setup_telemetry
from svc_client.toolspec import ToolSpec
from svc_mcp.confinement import confine_gateway
from svc_mcp.gateway_sockets import listening
from svc_mcp.request_selection import narrowing
from svc_mcp.server import build_server
from svc_serving.bounded import BoundedHttpTools, bounded_protocol, is_loopback, serving_limits
from svc_serving.secrets_check import guessable

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
TUNNEL_HINT = "or keep the loopback default and tunnel: ssh -N -L 8765:127.0.0.1:8765 <host>"


class GatewayRefused(Exception):
    """The gateway will not start with these options; the message says why and what to do."""


@dataclass(frozen=True)
class GatewayOptions:
    host: str = "127.0.0.1"
    port: int = 8765
    path: str = "/mcp"
    allow_remote: bool = False
    allowed_hosts: tuple[str, ...] = ()
    """Extra Host names (besides loopback and the bound address) clients may use."""
    no_auth: bool = False
    """Serve without a token (loopback or a Unix socket only)."""
    uds: Path | None = None
    """Serve on this Unix socket (mode 0600) instead of host and port."""


@dataclass(frozen=True)
class GatewayAuth:
    token: str | None
    """What every request must carry; None with --no-auth."""
    notice: str
    """One line for the person at start: where the token comes from (never the token)."""


def gateway_token() -> str | None:
    """`SVC_MCP_GATEWAY_TOKEN` without surrounding white space; None when unset or empty."""
    return os.environ.get(GATEWAY_TOKEN_VARIABLE, "").strip() or None


def required_token(options: GatewayOptions, token: str | None) -> GatewayAuth:
    """The token requests must carry, or GatewayRefused for an unsafe setup."""
    if token is not None and len(token) < MIN_TOKEN_CHARS:
        raise GatewayRefused(
            f"{GATEWAY_TOKEN_VARIABLE} must be at least {MIN_TOKEN_CHARS} characters of random text"
        )
    if token is not None and (reason := guessable(token)):
        raise GatewayRefused(f"{GATEWAY_TOKEN_VARIABLE} {reason}")
    local = options.uds is not None or is_loopback(options.host)
    if options.no_auth and token is not None:
        raise GatewayRefused(
            f"--no-auth and {GATEWAY_TOKEN_VARIABLE} together: unset the variable or drop --no-auth"
        )
    if options.no_auth and not local:
        raise GatewayRefused(
            f"--no-auth serves on loopback or a Unix socket only, not on {options.host}"
        )
    if not local and not options.allow_remote:
        raise GatewayRefused(
            f"refusing to bind {options.host}, which is not a loopback address: pass "
            f"--allow-remote and set {GATEWAY_TOKEN_VARIABLE}, {TUNNEL_HINT}"
        )
    if not local and token is None:
        raise GatewayRefused(
            f"--allow-remote needs {GATEWAY_TOKEN_VARIABLE} (at least {MIN_TOKEN_CHARS} "
            f"characters), which every request must then carry as a bearer token; {TUNNEL_HINT}"
        )
    if options.no_auth:
        return GatewayAuth(None, NO_AUTH_WARNING)
    if token is not None:
        return GatewayAuth(token, f"every request needs {GATEWAY_TOKEN_VARIABLE}'s token")
    return _kept_token()


NO_AUTH_WARNING = (
    "warning: --no-auth: any local user or process that can reach this address may call every "
    "tool, with this process's backend credentials; drop --no-auth on a machine you share"
)


def _kept_token() -> GatewayAuth:
    path = gateway_token_path()
    try:
        token, created = ensure_gateway_token(path)
    except (GatewayTokenFileError, OSError) as exc:
        raise GatewayRefused(f"{exc}; or set {GATEWAY_TOKEN_VARIABLE}") from None
    kept = "made now" if created else "kept"
    return GatewayAuth(
        token,
        f"{GATEWAY_TOKEN_VARIABLE} is unset, so every request needs the token {kept} in {path} "
        "(mode 0600); `svc-mcp install --http URL` and `svc-mcp doctor` read it there; another "
        f'client: export {GATEWAY_TOKEN_VARIABLE}="$(cat {path})"',
    )


def transport_security(options: GatewayOptions) -> TransportSecuritySettings:
    """Accepts loopback names, the bound address and `allowed_hosts`, each with any port."""
    names = [*LOOPBACK_NAMES, *options.allowed_hosts]
    if not _is_wildcard(options.host):
        names.append(options.host)
    hosts = list(dict.fromkeys(_url_host(name) for name in names))
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[allowed for host in hosts for allowed in (host, f"{host}:*")],
        allowed_origins=[
            f"{scheme}://{host}{port}"
            for host in hosts
            for scheme in ("http", "https")
            for port in ("", ":*")
        ],
    )


HOST_VALUE = re.compile(r"(\[[0-9A-Fa-f:.]+\]|[^:\[\]/@\s]+)(:[0-9]{1,5})?")
ORIGIN_VALUE = re.compile(r"https?://(\[[0-9A-Fa-f:.]+\]|[^:\[\]/@\s]+)(:[0-9]{1,5})?")


class StrictHostAndOrigin:
    """Refuses a `Host` or `Origin` whose port is not digits before the SDK's check, whose
    `name:*` patterns would match `localhost:evil.example` as a prefix."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            headers = dict(scope["headers"])
            host, origin = headers.get(b"host"), headers.get(b"origin")
            if host is not None and not HOST_VALUE.fullmatch(host.decode("latin-1")):
                await Response("Invalid Host header", status_code=421)(scope, receive, send)
                return
            if origin is not None and not ORIGIN_VALUE.fullmatch(origin.decode("latin-1")):
                await Response("Invalid Origin header", status_code=403)(scope, receive, send)
                return
        await self.app(scope, receive, send)


def _is_wildcard(host: str) -> bool:
    try:
        return ipaddress.ip_address(host.strip("[]")).is_unspecified
    except ValueError:
        return False


def _url_host(host: str) -> str:
    """How a host appears in a URL or Host header: IPv6 addresses in brackets."""
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


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
    """Answers GET at the MCP path with 405, the spec's way to say "no SSE stream offered here".

    A stateless gateway could never send anything on such a stream (no session ties it to a
    client; every answer goes on the response to its own POST), so it would only hold a
    connection open through every proxy in between.
    """

    def __init__(self, app: ASGIApp, path: str) -> None:
        self.app = app
        self.path = path

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "GET" and scope["path"] == self.path:
            await Response(status_code=405, headers={"Allow": "POST"})(scope, receive, send)
            return
        await self.app(scope, receive, send)


async def serve_http(specs: Sequence[ToolSpec], options: GatewayOptions) -> None:
    auth = required_token(options, gateway_token())
    try:
        http_protocol = bounded_protocol(BoundedHttpTools, serving_limits())
    except ValueError as exc:
        raise GatewayRefused(str(exc)) from None
    with listening(options.host, options.port, options.uds) as sockets:
        # Before any thread starts (Landlock confines the calling thread's descendants only) and
        # after the listening socket exists: the confined gateway binds nothing.
        confine_gateway()
        # After confinement, which must find one thread: the exporters start some.
        setup_telemetry("svc-mcp --http", root_ratio=GATEWAY_ROOT_SAMPLE_RATIO)
        async with new_http_client() as http:
            # Stateless with JSON answers: no session lives in this process, so any number of
            # instances with the same token can sit behind any load balancer (README "Scale out").
            server = build_server(specs, http, transport="tcp", narrow=narrowing(specs))
            app: ASGIApp = server.streamable_http_app(
                streamable_http_path=options.path,
                transport_security=transport_security(options),
                host=options.host,
                stateless_http=True,
                json_response=True,
            )
            app = StrictHostAndOrigin(NoStandaloneStream(app, options.path))
            if auth.token is not None:
                app = BearerGate(app, auth.token)
            config = uvicorn.Config(
                app,
                host=options.host,
                port=options.port,
                proxy_headers=False,
                server_header=False,
                log_level="warning",
                timeout_graceful_shutdown=5,
                # httptools, bounded; the event loop is the one the caller runs this coroutine in.
                http=http_protocol,
            )
            where = (
                f"the Unix socket {options.uds} (mode 0600)"
                if options.uds is not None
                else f"http://{_url_host(options.host)}:{options.port}{options.path}"
            )
            print(f"svc-mcp: serving MCP at {where}", file=sys.stderr)
            print(f"svc-mcp: {auth.notice}", file=sys.stderr)
            await uvicorn.Server(config).serve(sockets=sockets)
