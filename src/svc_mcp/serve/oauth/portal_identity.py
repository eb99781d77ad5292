"""The gateway's OAuth caller presented to the portal as an access proxy would (issue 42.7).

With OAuth on and the portal's own access-proxy settings given to the gateway too
(`PORTAL_ACCESS_JWT_SECRET`, `_ISSUER`, `_AUDIENCE`; `_HEADER` when the portal reads another
header than its default), every portal call of a person signed in by OAuth carries a short-lived
HS256 assertion naming them by their access token's `email` claim, in the header the portal
reads, and no `Authorization`: the portal maps the e-mail to its principal, so its role gates and
its audit trail apply per person, and the gateway's own portal session token is not used for
them. The access token itself never leaves the gateway. A token without an `email` claim reaches
the portal as anonymous, and the call's result says so. The static token's caller
(`--keep-static-token`) is the gateway itself and keeps its session.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace

import jwt

from svc_mcp.core.backends import PORTAL, SERVICE
from svc_mcp.core.connection import Connection
from svc_mcp.core.errors import Misconfigured
from svc_mcp.core.settings import (
    PORTAL_ACCESS_AUDIENCE_VARIABLE,
    PORTAL_ACCESS_HEADER_VARIABLE,
    PORTAL_ACCESS_ISSUER_VARIABLE,
    PORTAL_ACCESS_SECRET_VARIABLE,
    PORTAL_TOKEN_VARIABLES,
)
from svc_mcp.core.toolspec import ToolSpec
from svc_mcp.serve.caller import CALLER
from svc_mcp.serve.oauth.gate import STATIC_CALLER
from svc_serving.secrets_check import guessable

ASSERTION_SECONDS = 60
"""How long one assertion is valid: a call's deadline is at most 600 s, but each request of it
gets a fresh one, so a minute covers the clocks' skew and no more."""
DEFAULT_HEADER = "Cf-Access-Jwt-Assertion"
"""The portal's default `PORTAL_ACCESS_JWT_HEADER`."""
MIN_SECRET_CHARS = 32
MAX_EMAIL_CHARS = 320

BY_EMAIL = (
    "the gateway presented you to the portal by your sign-in's e-mail, and the portal's role for "
    "it decides (its administrator grants roles; a 401 means your e-mail is no principal there, "
    f"or the gateway's {PORTAL_ACCESS_SECRET_VARIABLE} and the portal's differ)"
)
NO_EMAIL = (
    "your access token carries no email claim, so the portal saw this call as anonymous: ask "
    "the administrator of the authorization server to put email in access tokens"
)

Clock = Callable[[], float]


@dataclass(frozen=True)
class PortalIdentity:
    """Signs the assertions; `delegate` and `notice` are what a call asks of it."""

    header: str
    issuer: str
    audience: str
    secret: str = field(repr=False)
    clock: Clock = time.time

    def assertion(self, email: str) -> str:
        now = int(self.clock())
        claims = {
            "iss": self.issuer,
            "aud": self.audience,
            "email": email,
            "iat": now,
            "exp": now + ASSERTION_SECONDS,
        }
        return jwt.encode(claims, self.secret, algorithm="HS256")

    def delegate(self, spec: ToolSpec, connection: Connection) -> Connection:
        """The portal connection for the OAuth caller being served; any other as it is."""
        if not _for_a_person(spec):
            return connection
        email = caller_email()
        if email is None:
            return replace(connection, token=None, on_behalf=NO_EMAIL)
        identity = (self.header, self.assertion(email))
        return replace(connection, token=None, identity=identity, on_behalf=BY_EMAIL)

    def notice(self, spec: ToolSpec) -> str | None:
        """What a successful result adds: that the portal answered an anonymous caller."""
        if _for_a_person(spec) and caller_email() is None:
            return f"Note: {NO_EMAIL}."
        return None


@dataclass(frozen=True)
class OnBehalf:
    """What the gateway tells the backends about the OAuth caller it serves: the data service
    who forwards (svc_serving.forwarded_by), the portal who calls (`portal`, when configured)."""

    portal: PortalIdentity | None = None

    def delegate(self, spec: ToolSpec, connection: Connection) -> Connection:
        caller = CALLER.get()
        if caller is None or caller is STATIC_CALLER:
            return connection
        if spec.backend is SERVICE:
            return replace(connection, forwarded_by=caller.subject or caller.client_id or None)
        return self.portal.delegate(spec, connection) if self.portal is not None else connection

    def notice(self, spec: ToolSpec) -> str | None:
        return self.portal.notice(spec) if self.portal is not None else None


def _for_a_person(spec: ToolSpec) -> bool:
    caller = CALLER.get()
    return spec.backend is PORTAL and caller is not None and caller is not STATIC_CALLER


def caller_email() -> str | None:
    """The `email` claim of the access token being served, when it looks like one."""
    caller = CALLER.get()
    email = (caller.claims or {}).get("email") if caller is not None else None
    if not isinstance(email, str) or len(email) > MAX_EMAIL_CHARS:
        return None
    local, at, domain = email.rpartition("@")
    return email if at and local and domain and email.isprintable() else None


def portal_identity(environ: Mapping[str, str] | None = None) -> PortalIdentity | None:
    """The settings, or None when `PORTAL_ACCESS_JWT_SECRET` is unset; `Misconfigured` for a
    secret the portal would refuse or a missing issuer or audience."""
    env = os.environ if environ is None else environ
    secret = env.get(PORTAL_ACCESS_SECRET_VARIABLE, "").strip()
    if not secret:
        return None
    issuer = env.get(PORTAL_ACCESS_ISSUER_VARIABLE, "").strip()
    audience = env.get(PORTAL_ACCESS_AUDIENCE_VARIABLE, "").strip()
    if not issuer or not audience:
        raise Misconfigured(
            f"{PORTAL_ACCESS_SECRET_VARIABLE} needs {PORTAL_ACCESS_ISSUER_VARIABLE} and "
            f"{PORTAL_ACCESS_AUDIENCE_VARIABLE} too: the portal's own values"
        )
    if len(secret) < MIN_SECRET_CHARS:
        raise Misconfigured(
            f"{PORTAL_ACCESS_SECRET_VARIABLE} must be at least {MIN_SECRET_CHARS} characters "
            "(the portal refuses a shorter one)"
        )
    if reason := guessable(secret):
        raise Misconfigured(f"{PORTAL_ACCESS_SECRET_VARIABLE} {reason}")
    header = env.get(PORTAL_ACCESS_HEADER_VARIABLE, "").strip() or DEFAULT_HEADER
    return PortalIdentity(header, issuer, audience, secret)


def identity_notice(identity: PortalIdentity | None) -> str:
    """The gateway's start line about whom the portal sees (never a secret)."""
    if identity is None:
        return (
            f"the portal sees every OAuth caller as this gateway's {PORTAL_TOKEN_VARIABLES[0]}; "
            "set "
            f"{PORTAL_ACCESS_SECRET_VARIABLE}, {PORTAL_ACCESS_ISSUER_VARIABLE} and "
            f"{PORTAL_ACCESS_AUDIENCE_VARIABLE} (the portal's own) to present each person"
        )
    return (
        f"the portal sees each OAuth caller by their e-mail, in {identity.header} (signed for "
        f"{identity.audience}); {PORTAL_TOKEN_VARIABLES[0]} is not used for them"
    )
