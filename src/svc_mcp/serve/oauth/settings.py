"""The gateway's OAuth settings: which authorization server's tokens it accepts, for which URL.

OAuth is on when `SVC_MCP_OAUTH_ISSUER` (or `--oauth-issuer`) is set; `SVC_MCP_PUBLIC_URL`
(or `--public-url`) must then say the gateway's MCP URL as clients reach it, the resource its
tokens must be issued for. A flag wins over its variable. Read by name, like every setting
(svc_mcp.core.settings).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from svc_mcp.core.errors import Misconfigured
from svc_mcp.core.settings import (
    GATEWAY_TOKEN_VARIABLE,
    INSECURE_HOSTS_VARIABLE,
    INTROSPECTION_CLIENT_VARIABLES,
    OAUTH_ISSUER_VARIABLE,
    OAUTH_MAX_LIFETIME_VARIABLE,
    PUBLIC_URL_VARIABLE,
    cleartext_host,
)

METADATA_PATH = "/.well-known/oauth-protected-resource"
SCOPE_READ = "svc:read"
SCOPE_INTEL = "svc:intel"
SCOPES = (SCOPE_READ, SCOPE_INTEL)
_DEFAULT_PORTS = {"http": 80, "https": 443}
MAX_TOKEN_LIFETIME_SECONDS = 24 * 60 * 60


@dataclass(frozen=True)
class OAuthSettings:
    issuer: str
    """Compared exactly with each token's `iss` and the discovered metadata's `issuer`."""
    public_url: str
    """The resource (RFC 8707/9728): each token's `aud` must contain it."""
    keep_static_token: bool = False
    """Also accept the static gateway token (`--keep-static-token`)."""
    introspection_client: tuple[str, str] | None = field(default=None, repr=False)
    """The gateway's client id and secret for RFC 7662 introspection of opaque tokens."""
    max_token_lifetime: int = MAX_TOKEN_LIFETIME_SECONDS
    """How far ahead of now a token's `exp` may lie (`SVC_MCP_OAUTH_MAX_TOKEN_LIFETIME`)."""
    subject_key: bytes = field(default_factory=lambda: os.urandom(32), repr=False)
    """Names e-mail subjects in logs and spans (svc_mcp.serve.oauth.access.shown_subject)."""

    @property
    def issuer_port(self) -> int:
        parts = urlsplit(self.issuer)
        return parts.port or _DEFAULT_PORTS[parts.scheme]

    @property
    def public_host(self) -> str:
        return urlsplit(self.public_url).hostname or ""


def scope_tokens(scope: str) -> list[str]:
    """RFC 6749 §3.3: scope tokens are separated by the space (%x20) only; any other white space
    (an EM SPACE, a unit separator, NBSP) is part of a token, so `svc:read\u2003svc:intel` is one
    unknown scope, never two."""
    return [token for token in scope.split(" ") if token]


def metadata_url(url: str) -> str:
    """RFC 9728 §3.1: the well-known path goes between the host and the resource's path."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}{METADATA_PATH}{parts.path.rstrip('/')}"


def oauth_settings(
    issuer: str | None = None,
    public_url: str | None = None,
    *,
    keep_static_token: bool = False,
    environ: Mapping[str, str] | None = None,
) -> OAuthSettings | None:
    """The settings from the flags, else the variables; None when OAuth is off. `Misconfigured`
    for one without the other, a URL that is not absolute http(s), or clear text beyond loopback."""
    env = os.environ if environ is None else environ
    issuer = (issuer or env.get(OAUTH_ISSUER_VARIABLE, "")).strip() or None
    public_url = (public_url or env.get(PUBLIC_URL_VARIABLE, "")).strip() or None
    if issuer is None and public_url is None:
        if keep_static_token:
            raise Misconfigured(f"--keep-static-token is for OAuth: set {OAUTH_ISSUER_VARIABLE}")
        return None
    if issuer is None or public_url is None:
        raise Misconfigured(
            f"OAuth needs both {OAUTH_ISSUER_VARIABLE} (the authorization server) and "
            f"{PUBLIC_URL_VARIABLE} (this gateway's MCP URL as clients reach it)"
        )
    _check_url(OAUTH_ISSUER_VARIABLE, issuer, env)
    _check_url(PUBLIC_URL_VARIABLE, public_url, env)
    client_id, secret = (env.get(name, "").strip() for name in INTROSPECTION_CLIENT_VARIABLES)
    if bool(client_id) != bool(secret):
        raise Misconfigured(
            f"introspection needs both {' and '.join(INTROSPECTION_CLIENT_VARIABLES)}"
        )
    client = (client_id, secret) if client_id else None
    lifetime = _lifetime(env.get(OAUTH_MAX_LIFETIME_VARIABLE, "").strip())
    return OAuthSettings(issuer, public_url, keep_static_token, client, lifetime)


def _lifetime(text: str) -> int:
    if not text:
        return MAX_TOKEN_LIFETIME_SECONDS
    if not text.isdigit() or not 60 <= int(text) <= 366 * 24 * 60 * 60:
        raise Misconfigured(
            f"{OAUTH_MAX_LIFETIME_VARIABLE} must be a whole number of seconds from 60 to a year"
        )
    return int(text)


def _check_url(name: str, url: str, env: Mapping[str, str]) -> None:
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 (raises ValueError for a port that is not a number)
    except ValueError:
        raise Misconfigured(f"{name} is not a URL") from None
    if parts.scheme not in _DEFAULT_PORTS or not parts.hostname:
        raise Misconfigured(f"{name} must be an absolute http(s) URL")
    if parts.query or parts.fragment or parts.username or parts.password:
        raise Misconfigured(f"{name} must have no query, fragment or user name")
    if host := cleartext_host(url, env):
        raise Misconfigured(
            f"{name} is plain http to {host}, beyond loopback: use https, or name the host in "
            f"{INSECURE_HOSTS_VARIABLE} if the network between is trusted"
        )


def start_notices(
    settings: OAuthSettings | None, static: str | None, *, unused_token: bool
) -> list[str]:
    """What the gateway tells the person at start (never a token): `static` is the static
    token's notice, if one is accepted; `unused_token` says SVC_MCP_GATEWAY_TOKEN is set."""
    if settings is None:
        return [static] if static is not None else []
    notices = [
        f"OAuth: every request needs an access token from {settings.issuer} for "
        f"{settings.public_url} (scopes {', '.join(SCOPES)})"
    ]
    if static is not None:
        # Either credential suffices: the static token's notice says "every request needs".
        where = static.replace("every request needs", "it is", 1)
        notices.append(
            "--keep-static-token: a request may carry the static gateway token instead of an "
            f"access token (either one suffices); {where}"
        )
    elif unused_token:
        notices.append(
            f"{GATEWAY_TOKEN_VARIABLE} is set and not accepted (OAuth is on; "
            "--keep-static-token would accept it as well)"
        )
    return notices
