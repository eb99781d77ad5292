"""`svc-mcp --http`: the MCP server over streamable HTTP, a small tool gateway.

By default it binds 127.0.0.1; reach it from elsewhere through an SSH tunnel
(`ssh -N -L 8765:127.0.0.1:8765 host`), or serve a Unix socket only its owner may open
(`--uds PATH`, mode 0600; `ssh -N -L 8765:PATH host`). A missing or foreign `Host` is answered
421 before anything else is looked at (token, path), a malformed `Origin` 403; the SDK's
DNS-rebinding protection then answers a foreign `Origin` with 403. No path is ever redirected
(a redirect would be built from `Host`).
Every request must carry `Authorization: Bearer <token>` (401 otherwise, compared in constant
time): `SVC_MCP_GATEWAY_TOKEN`, or when that is unset the token kept for the person in their state
directory (`gateway.token`). `--no-auth` serves without a token, on loopback or a Unix socket
only. A bind beyond loopback is refused unless `--allow-remote` is given and
`SVC_MCP_GATEWAY_TOKEN` is set. OAuth (SVC_MCP_OAUTH_ISSUER) instead: `oauth.gate`.
It keeps no session: every POST is answered on its own, as JSON, in both protocol eras
(initialize and 2026-07-28), so instances scale out behind a load balancer.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import uvicorn
from mcp.server.transport_security import TransportSecuritySettings
from starlette.types import ASGIApp

from svc_mcp.core.client import new_http_client
from svc_mcp.core.errors import Misconfigured
from svc_mcp.core.settings import GATEWAY_TOKEN_VARIABLE, timeout_seconds
from svc_mcp.core.telemetry import GATEWAY_ROOT_SAMPLE_RATIO
from svc_mcp.core.telemetry import setup as setup_telemetry
from svc_mcp.core.toolspec import ToolSpec
from svc_mcp.serve.caller_budget import person_budgets
from svc_mcp.serve.confinement import confine_gateway
from svc_mcp.serve.gateway.activation import activated_sockets, beyond_loopback
from svc_mcp.serve.gateway.gates import BearerGate, NoStandaloneStream, StrictHostAndOrigin
from svc_mcp.serve.gateway.sockets import listening
from svc_mcp.serve.gateway.stop import GatewayServer, graceful_seconds
from svc_mcp.serve.gateway.token import (
    MIN_TOKEN_CHARS,
    GatewayTokenFileError,
    ensure_gateway_token,
    gateway_token_path,
)
from svc_mcp.serve.oauth.access import with_subject_key
from svc_mcp.serve.oauth.gate import OAuthGate
from svc_mcp.serve.oauth.portal_identity import OnBehalf, identity_notice, portal_identity
from svc_mcp.serve.oauth.settings import OAuthSettings, oauth_settings, start_notices
from svc_mcp.serve.oauth.tokens import JwtVerifier
from svc_mcp.serve.request_selection import narrowing
from svc_mcp.serve.server import build_server
from svc_serving.bounded import BoundedHttpTools, bounded_protocol
from svc_serving.limits import serving_limits
from svc_serving.loopback import is_loopback
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
    oauth_issuer: str | None = None
    public_url: str | None = None
    keep_static_token: bool = False
    """OAuth's flags, over its variables (svc_mcp.serve.oauth.settings)."""


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


def oauth_and_token(
    options: GatewayOptions, token: str | None
) -> tuple[OAuthSettings | None, GatewayAuth | None]:
    """OAuth's settings (None: off) and the static token requests may carry (None: none)."""
    keep = options.keep_static_token
    oauth = oauth_settings(options.oauth_issuer, options.public_url, keep_static_token=keep)
    if oauth is None:
        return None, required_token(options, token)
    if options.no_auth:
        raise GatewayRefused("--no-auth and OAuth together: drop one")
    if oauth.keep_static_token:
        return oauth, required_token(options, token)
    if not (options.uds or is_loopback(options.host) or options.allow_remote):
        raise GatewayRefused(f"refusing to bind {options.host}: pass --allow-remote, {TUNNEL_HINT}")
    return oauth, None


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


def allowed_host_names(options: GatewayOptions, oauth: OAuthSettings | None = None) -> list[str]:
    """Loopback names, the bound address, `allowed_hosts` and the public URL's host, as each
    appears in a Host header."""
    names = [*LOOPBACK_NAMES, *options.allowed_hosts]
    if oauth is not None:
        names.append(oauth.public_host)
    if not _is_wildcard(options.host):
        names.append(options.host)
    return list(dict.fromkeys(_url_host(name) for name in names))


def transport_security(
    options: GatewayOptions, oauth: OAuthSettings | None = None
) -> TransportSecuritySettings:
    """Accepts the allowed host names, each with any port."""
    hosts = allowed_host_names(options, oauth)
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


async def serve_http(specs: Sequence[ToolSpec], options: GatewayOptions) -> None:
    inherited = activated_sockets()
    if inherited and (remote := beyond_loopback(inherited)):
        # A systemd socket on another address is a bind there: the same rule as --host.
        options = replace(options, host=remote)
    oauth, auth = oauth_and_token(options, gateway_token())
    if oauth is not None:
        oauth = with_subject_key(oauth)  # read before confinement
    try:
        http_protocol = bounded_protocol(BoundedHttpTools, serving_limits())
        call_timeout = timeout_seconds()
        identity = portal_identity() if oauth is not None else None
        budgets = person_budgets() if oauth is not None else None
    except (ValueError, Misconfigured) as exc:
        raise GatewayRefused(str(exc)) from None
    bound = (
        contextlib.nullcontext(inherited)
        if inherited
        else listening(options.host, options.port, options.uds)
    )
    with bound as sockets:
        # Before any thread starts (Landlock confines the calling thread's descendants only) and
        # after the listening socket exists: the confined gateway binds nothing.
        confine_gateway(oauth)
        # After confinement, which must find one thread: the exporters start some.
        setup_telemetry("svc-mcp --http", root_ratio=GATEWAY_ROOT_SAMPLE_RATIO)
        async with new_http_client() as http:
            # Stateless with JSON answers: no session lives in this process, so any number of
            # instances with the same token can sit behind any load balancer (README "Scale out").
            server = build_server(
                specs,
                http,
                transport="tcp",
                narrow=narrowing(specs),
                on_behalf=OnBehalf(identity) if oauth is not None else None,
                budgets=budgets,
            )
            mcp_app = server.streamable_http_app(
                streamable_http_path=options.path,
                transport_security=transport_security(options, oauth),
                host=options.host,
                stateless_http=True,
                json_response=True,
            )
            app: ASGIApp = NoStandaloneStream(mcp_app, options.path)
            if oauth is not None:
                kept = auth.token if auth is not None else None
                app = OAuthGate(app, oauth, JwtVerifier(oauth, http), specs, static_token=kept)
            elif auth is not None and auth.token is not None:
                app = BearerGate(app, auth.token)
            app = StrictHostAndOrigin(app, allowed_host_names(options, oauth))
            config = uvicorn.Config(
                app,
                host=options.host,
                port=options.port,
                proxy_headers=False,
                server_header=False,
                log_level="warning",
                timeout_graceful_shutdown=graceful_seconds(call_timeout),
                # httptools, bounded; the event loop is the one the caller runs this coroutine in.
                http=http_protocol,
            )
            where = (
                "the sockets systemd passed"
                if inherited
                else f"the Unix socket {options.uds} (mode 0600)"
                if options.uds is not None
                else f"http://{_url_host(options.host)}:{options.port}{options.path}"
            )
            print(f"svc-mcp: serving MCP at {where}", file=sys.stderr)
            static = auth.notice if auth is not None else None
            for notice in start_notices(oauth, static, unused_token=gateway_token() is not None):
                print(f"svc-mcp: {notice}", file=sys.stderr)
            if oauth is not None:
                print(f"svc-mcp: {identity_notice(identity)}", file=sys.stderr)
            await GatewayServer(config).serve(sockets=sockets)
