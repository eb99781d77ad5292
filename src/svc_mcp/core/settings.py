"""Every environment variable the client side reads, named once, and how each is read.

The backends' rows (`svc_mcp.core.backends`), the transports, the gateway, install, doctor and
every message take the names from here; no other client module writes one out.

Settings are read from the named variables only, at each call, with the standard library:
pydantic-settings would copy the whole environment, which on a signer's host holds the intel
signing key, a secret this package must never hold. A value that cannot be used raises
`Misconfigured` naming the variable, never quoting the value.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import urlsplit

from svc_mcp.core.errors import Misconfigured
from svc_serving.loopback import is_loopback

PORTAL_BASE_URL_VARIABLE = "PORTAL_API_BASE"
PORTAL_TOKEN_VARIABLES = ("PORTAL_SESSION_TOKEN",)
PORTAL_TOKEN_FILE_VARIABLE = "PORTAL_SESSION_TOKEN_FILE"  # noqa: S105 (a variable's name)
SERVICE_BASE_URL_VARIABLE = "SERVICE_API_BASE"
SERVICE_TOKEN_VARIABLES = ("SERVICE_API_TOKEN", "DASHBOARD_API_TOKEN")
"""The data service's token; the second name is the spec's older spelling, still honoured."""
SERVICE_TOKEN_FILE_VARIABLE = "SERVICE_API_TOKEN_FILE"  # noqa: S105 (a variable's name)
"""The `_FILE` variables name a file holding the token (the Docker secrets convention), read at
each call, so a renewed token written there (by rename) is used by the next call, no restart."""
MAX_TOKEN_FILE_BYTES = 16 * 1024

GATEWAY_TOKEN_VARIABLE = "SVC_MCP_GATEWAY_TOKEN"  # noqa: S105 (a variable's name)
"""Not a backend's: the bearer token `svc-mcp --http` demands, and host entries reference."""

OAUTH_ISSUER_VARIABLE = "SVC_MCP_OAUTH_ISSUER"
"""The authorization server whose access tokens `svc-mcp --http` accepts (OAuth on when set)."""
PUBLIC_URL_VARIABLE = "SVC_MCP_PUBLIC_URL"
"""The gateway's MCP URL as clients reach it: the OAuth resource and the tokens' audience."""

OAUTH_MAX_LIFETIME_VARIABLE = "SVC_MCP_OAUTH_MAX_TOKEN_LIFETIME"
"""Seconds an access token's `exp` may lie ahead of now (default 24 hours): one minted to last
longer, with a stolen key, is refused."""

INTROSPECTION_CLIENT_VARIABLES = ("SVC_MCP_OAUTH_CLIENT_ID", "SVC_MCP_OAUTH_CLIENT_SECRET")
"""The gateway's own client at the authorization server, for RFC 7662 introspection of opaque
access tokens (off unless both are set)."""

PORTAL_ACCESS_SECRET_VARIABLE = "PORTAL_ACCESS_JWT_SECRET"  # noqa: S105 (a variable's name)
PORTAL_ACCESS_ISSUER_VARIABLE = "PORTAL_ACCESS_JWT_ISSUER"
PORTAL_ACCESS_AUDIENCE_VARIABLE = "PORTAL_ACCESS_JWT_AUDIENCE"
PORTAL_ACCESS_HEADER_VARIABLE = "PORTAL_ACCESS_JWT_HEADER"
"""The portal's own access-proxy settings, given to an OAuth gateway too: it then presents each
person to the portal as an access proxy would (svc_mcp.serve.oauth.portal_identity)."""

PERSON_RATE_VARIABLE = "SVC_MCP_PERSON_CALLS_PER_SECOND"
"""An OAuth gateway's budget per person (svc_mcp.serve.caller_budget): calls a second, bursts of
four times that; 0 turns the budget off."""

TIMEOUT_VARIABLE = "SVC_MCP_TIMEOUT_SECONDS"
TIMEOUT_SECONDS = 10.0
MAX_TIMEOUT_SECONDS = 600.0

CA_FILE_VARIABLE = "SSL_CERT_FILE"
"""A private CA for an https backend, read by name (httpx's `trust_env` stays off)."""

STATE_HOME_VARIABLE = "XDG_STATE_HOME"
"""Where svc-mcp keeps the gateway's token and install's token-bearing backups."""
INSECURE_HOSTS_VARIABLE = "SVC_MCP_INSECURE_HOSTS"
"""Host names, comma-separated, to which a token may go over plain http (as pip's trusted
hosts); loopback needs no word."""


def timeout_seconds(environ: Mapping[str, str] | None = None) -> float:
    """How long one call may take in all (default 10 s); `Misconfigured` unless it is a number
    of seconds in (0, 600]."""
    text = (os.environ if environ is None else environ).get(TIMEOUT_VARIABLE, "").strip()
    if not text:
        return TIMEOUT_SECONDS
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and 0 < value <= MAX_TIMEOUT_SECONDS):
        raise Misconfigured(
            f"{TIMEOUT_VARIABLE} must be a number of seconds above 0 and at most "
            f"{MAX_TIMEOUT_SECONDS:g}"
        )
    return value


def ca_file(environ: Mapping[str, str] | None = None) -> str | None:
    return (os.environ if environ is None else environ).get(CA_FILE_VARIABLE) or None


def insecure_hosts(environ: Mapping[str, str] | None = None) -> frozenset[str]:
    """The host names the person allows a token to reach over plain http (lower case)."""
    text = (os.environ if environ is None else environ).get(INSECURE_HOSTS_VARIABLE, "")
    return frozenset(name.strip().strip("[]").lower() for name in text.split(",") if name.strip())


def cleartext_host(url: str, environ: Mapping[str, str] | None = None) -> str | None:
    """The host a token sent to `url` would reach in clear text, unless the person allowed it:
    plain http goes only to loopback or to a host named in SVC_MCP_INSECURE_HOSTS."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
    except ValueError:
        return None
    if parts.scheme != "http" or not host or is_loopback(host):
        return None
    return None if host in insecure_hosts(environ) else host


def state_directory(environ: Mapping[str, str] | None = None) -> Path:
    """svc-mcp's own folder in the user's state directory: `$XDG_STATE_HOME/svc-mcp`, else
    `~/.local/state/svc-mcp` (the XDG rule: a relative XDG_STATE_HOME is invalid and ignored)."""
    state = (os.environ if environ is None else environ).get(STATE_HOME_VARIABLE, "")
    base = Path(state) if os.path.isabs(state) else Path.home() / ".local" / "state"
    return base / "svc-mcp"
