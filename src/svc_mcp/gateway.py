"""`svc-mcp --http`: the MCP server over streamable HTTP, a small tool gateway.

By default it binds 127.0.0.1; reach it from elsewhere through an SSH tunnel
(`ssh -N -L 8765:127.0.0.1:8765 host`). The SDK's DNS-rebinding protection answers a foreign
`Host` with 421 and a foreign `Origin` with 403. A bind beyond loopback is refused unless
`--allow-remote` is given and `SVC_MCP_GATEWAY_TOKEN` is set; whenever that token is set, every
request must carry `Authorization: Bearer <token>` (401 otherwise, compared in constant time).
It keeps no session: every POST is answered on its own, as JSON, in both protocol eras
(initialize and 2026-07-28), so instances scale out behind a load balancer.
"""

from __future__ import annotations

import hmac
import ipaddress
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass

import uvicorn
from mcp.server.transport_security import TransportSecuritySettings
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from svc_client.client import new_http_client
from svc_client.failures import FailureKind
from svc_client.settings import GATEWAY_TOKEN_VARIABLE
from svc_client.telemetry import setup as setup_telemetry
from svc_client.toolspec import ToolSpec
from svc_mcp.confinement import confine_gateway
from svc_mcp.server import build_server
from svc_serving.bounded import HeadLimitedHttpTools, is_loopback

MIN_TOKEN_CHARS = 32
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


def gateway_token() -> str | None:
    """`SVC_MCP_GATEWAY_TOKEN` without surrounding white space; None when unset or empty."""
    return os.environ.get(GATEWAY_TOKEN_VARIABLE, "").strip() or None


def required_token(options: GatewayOptions, token: str | None) -> str | None:
    """The token requests must carry (None: none), or GatewayRefused for an unsafe setup."""
    if token is not None and len(token) < MIN_TOKEN_CHARS:
        raise GatewayRefused(
            f"SVC_MCP_GATEWAY_TOKEN must be at least {MIN_TOKEN_CHARS} characters of random text"
        )
    if is_loopback(options.host):
        return token
    if not options.allow_remote:
        raise GatewayRefused(
            f"refusing to bind {options.host}, which is not a loopback address: pass "
            f"--allow-remote and set SVC_MCP_GATEWAY_TOKEN, {TUNNEL_HINT}"
        )
    if token is None:
        raise GatewayRefused(
            f"--allow-remote needs SVC_MCP_GATEWAY_TOKEN (at least {MIN_TOKEN_CHARS} characters), "
            f"which every request must then carry as a bearer token; {TUNNEL_HINT}"
        )
    return token


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
        response = JSONResponse(
            {
                "error": FailureKind.UNAUTHORIZED,
                "message": "send Authorization: Bearer <gateway token>",
            },
            status_code=401,
            headers={"WWW-Authenticate": "Bearer"},
        )
        await response(scope, receive, send)

    def _authorized(self, scope: Scope) -> bool:
        supplied = dict(scope["headers"]).get(b"authorization", b"")
        scheme, _, token = supplied.partition(b" ")
        # compare_digest's time does not depend on where the values differ.
        return hmac.compare_digest(token.strip(), self.token) and scheme.lower() == b"bearer"


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
    token = required_token(options, gateway_token())
    confine_gateway(options.port)
    # After confinement, which must find one thread: the exporters start some.
    setup_telemetry("svc-mcp --http")
    async with new_http_client() as http:
        # Stateless with JSON answers: no session lives in this process, so any number of
        # instances with the same token can sit behind any load balancer (README "Scale out").
        app: ASGIApp = build_server(specs, http, transport="tcp").streamable_http_app(
            streamable_http_path=options.path,
            transport_security=transport_security(options),
            host=options.host,
            stateless_http=True,
            json_response=True,
        )
        app = NoStandaloneStream(app, options.path)
        if token is not None:
            app = BearerGate(app, token)
        config = uvicorn.Config(
            app,
            host=options.host,
            port=options.port,
            proxy_headers=False,
            server_header=False,
            log_level="warning",
            timeout_graceful_shutdown=5,
            # httptools, bounded; the event loop is the one the caller runs this coroutine in.
            http=HeadLimitedHttpTools,
        )
        guard = "every request needs the gateway token" if token else "loopback only"
        url = f"http://{_url_host(options.host)}:{options.port}{options.path}"
        print(f"svc-mcp: serving MCP at {url} ({guard})", file=sys.stderr)
        await uvicorn.Server(config).serve()
