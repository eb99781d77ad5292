"""Whether a gateway does OAuth, seen from outside as a host sees it (install and doctor).

A gateway with OAuth serves its RFC 9728 protected resource metadata; one with the static token
answers 404 there. Nothing secret is sent: the document is public.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import httpx

from svc_mcp.serve.oauth.discovery import (
    FETCH_TIMEOUT_SECONDS,
    DiscoveryFailed,
    discover,
    ssl_context,
)
from svc_mcp.serve.oauth.settings import metadata_url


@dataclass(frozen=True)
class OAuthGateway:
    resource: str
    issuer: str
    scopes: tuple[str, ...]


def oauth_gateway(url: str) -> OAuthGateway | None:
    """The gateway's OAuth setup from its metadata document; None when it serves none (a
    static-token gateway) or cannot be reached (then the entry's own check says so)."""
    try:
        with httpx.Client(
            timeout=FETCH_TIMEOUT_SECONDS, trust_env=False, verify=ssl_context()
        ) as http:
            answer = http.get(metadata_url(url), follow_redirects=False)
        document = answer.json() if answer.status_code == 200 else None
    except (httpx.HTTPError, ValueError):
        return None
    if not isinstance(document, dict):
        return None
    servers, scopes = document.get("authorization_servers"), document.get("scopes_supported")
    if not isinstance(servers, list) or not servers or not isinstance(servers[0], str):
        return None
    return OAuthGateway(
        resource=str(document.get("resource", "")),
        issuer=servers[0],
        scopes=tuple(s for s in scopes if isinstance(s, str)) if isinstance(scopes, list) else (),
    )


def issuer_metadata(issuer: str) -> dict[str, Any] | str:
    """The issuer's metadata when its discovery answers with its own name and a `jwks_uri` (what
    the gateway needs), else what went wrong at each discovery URL."""

    async def check() -> dict[str, Any]:
        timeout = httpx.Timeout(FETCH_TIMEOUT_SECONDS)
        async with httpx.AsyncClient(
            timeout=timeout, trust_env=False, verify=ssl_context()
        ) as http:
            return await discover(issuer, http)

    try:
        return asyncio.run(check())
    except DiscoveryFailed as failed:
        return str(failed)


def sign_in_problem(
    metadata: dict[str, Any], asks_for: tuple[str, ...], preregistered: bool
) -> str | None:
    """Why a host's sign-in at this authorization server cannot succeed, or None: a host that
    registers itself needs dynamic registration (or client ID metadata documents), the server
    must offer the authorization code with PKCE S256 (the MCP SDKs refuse it otherwise, before
    any browser opens), and every scope the host asks for must be one the server offers (else
    `invalid_scope`)."""
    registers = metadata.get("registration_endpoint") or metadata.get(
        "client_id_metadata_document_supported"
    )
    if not registers and not preregistered:
        return (
            "it offers no dynamic client registration, so the host cannot register itself: "
            "give the entry a client registered there by hand (where the host takes one)"
        )
    if (refused := _flow_refused(metadata)) is not None:
        return f"{refused}, so MCP hosts refuse it (`Incompatible auth server`)"
    offered = metadata.get("scopes_supported")
    if isinstance(offered, list):
        missing = [scope for scope in asks_for if scope not in offered]
        if missing:
            return (
                f"the host asks for {' '.join(asks_for)} and the server offers no "
                f"{', '.join(missing)}: its sign-in ends in invalid_scope"
            )
    return None


def _flow_refused(metadata: dict[str, Any]) -> str | None:
    """What the server's metadata lacks of the authorization code flow with PKCE S256."""
    response_types = metadata.get("response_types_supported")
    if isinstance(response_types, list) and "code" not in response_types:
        return "its metadata offers no response type `code`"
    methods = metadata.get("code_challenge_methods_supported")
    if isinstance(methods, list) and "S256" not in methods:
        return "its metadata offers no PKCE method S256"
    return None
