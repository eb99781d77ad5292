"""The authorization server's metadata, by RFC 8414 and then OpenID discovery (the gateway's
verifier, and doctor's check of an OAuth gateway). Imports nothing of `mcp`: install and doctor
never load it."""

from __future__ import annotations

import ssl
from typing import Any

import httpx

from svc_mcp.core.settings import ca_file

FETCH_TIMEOUT_SECONDS = 5.0
DISCOVERY_PATHS = ("/.well-known/oauth-authorization-server", "/.well-known/openid-configuration")


class DiscoveryFailed(Exception):
    """The issuer's metadata or keys could not be read; a later attempt may succeed."""


def discovery_urls(issuer: str) -> list[str]:
    """RFC 8414 §3.1 inserts the well-known path before the issuer's path; OpenID discovery
    appends it; the MCP spec asks clients to try both, and so does the gateway."""
    parts = httpx.URL(issuer)
    path = parts.path.rstrip("/")
    origin = f"{parts.scheme}://{parts.netloc.decode()}"
    urls = [f"{origin}{well_known}{path}" for well_known in DISCOVERY_PATHS]
    if path:
        urls.append(f"{origin}{path}{DISCOVERY_PATHS[1]}")
    return list(dict.fromkeys(urls))


def ssl_context() -> ssl.SSLContext:
    private_ca = ca_file()
    return (
        ssl.create_default_context(cafile=private_ca)
        if private_ca
        else ssl.create_default_context()
    )


async def discover(issuer: str, http: httpx.AsyncClient) -> dict[str, Any]:
    """The issuer's metadata; `DiscoveryFailed` unless a document names this issuer exactly
    (RFC 8414 §3.3) and an http(s) `jwks_uri`."""
    problems = []
    for url in discovery_urls(issuer):
        try:
            answer = await http.get(url, follow_redirects=False)
        except httpx.HTTPError as exc:
            problems.append(f"{url}: {type(exc).__name__}")
            continue
        if answer.status_code != 200:
            problems.append(f"{url}: HTTP {answer.status_code}")
            continue
        try:
            metadata = answer.json()
        except ValueError:
            problems.append(f"{url}: not JSON")
            continue
        if not isinstance(metadata, dict) or metadata.get("issuer") != issuer:
            problems.append(f"{url}: names another issuer")
            continue
        jwks_uri = metadata.get("jwks_uri")
        if not isinstance(jwks_uri, str) or not jwks_uri.startswith(("https://", "http://")):
            problems.append(f"{url}: no jwks_uri")
            continue
        return metadata
    raise DiscoveryFailed("; ".join(problems))
