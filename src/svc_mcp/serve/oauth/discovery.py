"""The authorization server's metadata, by RFC 8414 and then OpenID discovery (the gateway's
verifier, and doctor's check of an OAuth gateway). Imports nothing of `mcp`: install and doctor
never load it."""

from __future__ import annotations

import json
import ssl
from typing import Any

import anyio
import httpx

from svc_mcp.core.settings import ca_file

FETCH_TIMEOUT_SECONDS = 5.0
FETCH_DEADLINE_SECONDS = 5.0
"""All one document may take, answered a byte at a time or not at all."""
MAX_DOCUMENT_BYTES = 256 * 1024
"""The largest metadata document or key set read; a key set of a dozen RSA keys is 10 kB."""
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
            metadata = await fetch_json(http, url)
        except DiscoveryFailed as exc:
            problems.append(f"{url}: {exc}")
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


async def fetch_json(http: httpx.AsyncClient, url: str) -> Any:
    """The JSON document at `url`, read within `FETCH_DEADLINE_SECONDS` in all and refused past
    `MAX_DOCUMENT_BYTES` (read no further); `DiscoveryFailed` says why not."""
    try:
        with anyio.fail_after(FETCH_DEADLINE_SECONDS):
            # Not compressed: the cap counts the bytes that are kept.
            identity = {"Accept-Encoding": "identity"}
            async with http.stream("GET", url, headers=identity, follow_redirects=False) as answer:
                if answer.status_code != 200:
                    raise DiscoveryFailed(f"HTTP {answer.status_code}")
                if answer.headers.get("content-encoding", "identity").lower() != "identity":
                    raise DiscoveryFailed("compressed")
                body = bytearray()
                async for chunk in answer.aiter_raw():
                    body += chunk
                    if len(body) > MAX_DOCUMENT_BYTES:
                        raise DiscoveryFailed(f"larger than {MAX_DOCUMENT_BYTES} bytes")
    except TimeoutError:
        raise DiscoveryFailed(f"no whole answer within {FETCH_DEADLINE_SECONDS:g} s") from None
    except httpx.HTTPError as exc:
        raise DiscoveryFailed(type(exc).__name__) from None
    try:
        return json.loads(body)
    except ValueError:
        raise DiscoveryFailed("not JSON") from None
