"""Whether a gateway does OAuth, seen from outside as a host sees it (install and doctor).

A gateway with OAuth serves its RFC 9728 protected resource metadata; one with the static token
answers 404 there. Nothing secret is sent: the document is public.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import httpx

from svc_mcp.serve.oauth_discovery import (
    FETCH_TIMEOUT_SECONDS,
    DiscoveryFailed,
    discover,
    ssl_context,
)
from svc_mcp.serve.oauth_settings import metadata_url


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


def issuer_problem(issuer: str) -> str | None:
    """None when the issuer's discovery answers with its own name and a `jwks_uri` (what the
    gateway needs), else what went wrong at each discovery URL."""

    async def check() -> None:
        timeout = httpx.Timeout(FETCH_TIMEOUT_SECONDS)
        async with httpx.AsyncClient(
            timeout=timeout, trust_env=False, verify=ssl_context()
        ) as http:
            await discover(issuer, http)

    try:
        asyncio.run(check())
    except DiscoveryFailed as failed:
        return str(failed)
    return None
