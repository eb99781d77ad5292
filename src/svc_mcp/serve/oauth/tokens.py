"""Validates the RFC 9068 JWT access tokens of the gateway's authorization server.

The issuer's keys are held by svc_mcp.serve.oauth.keys (read at start, when due, and when a
token names a key id the set lacks). A token is accepted only when its `typ` is `at+jwt`
(RFC 9068 §4), it is signed by one of those keys with an asymmetric algorithm (never `none`,
never HMAC: an HMAC "signature" keyed with the public key is the classic forgery), `iss` is the
issuer exactly, `aud` contains the public URL (RFC 8707: a token for another resource is never
taken), `sub` is not empty, `exp`/`nbf`/`iat` hold with `LEEWAY_SECONDS` of clock skew, and
`exp` is at most the settings' `max_token_lifetime` ahead (a token minted with a stolen key to
last for years is refused).

A validated token is remembered until its `exp`, with the key id that signed it: a request costs
no signature check and no network call, and a token whose key left the issuer's set (withdrawn)
stops working with the next read of the set.
"""

from __future__ import annotations

import hashlib
import time
from collections import OrderedDict
from typing import Any

import httpx
import jwt
from mcp.server.auth.provider import AccessToken

from svc_mcp.serve.oauth.access import shown_subject
from svc_mcp.serve.oauth.introspection import Introspection
from svc_mcp.serve.oauth.keys import Clock, IssuerUnavailable, KeySet
from svc_mcp.serve.oauth.settings import OAuthSettings, scope_tokens

LEEWAY_SECONDS = 30
"""Clock skew allowed between the authorization server and the gateway, on `exp` and `nbf`."""
CACHED_TOKENS = 4096
ASYMMETRIC = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512")
ASYMMETRIC_ALGORITHMS = (*ASYMMETRIC, "EdDSA")
ACCESS_TOKEN_TYPES = frozenset({"at+jwt", "application/at+jwt"})


class JwtVerifier:
    """The SDK's `TokenVerifier`: the `AccessToken` of a valid token, None for any other;
    `IssuerUnavailable` when the issuer cannot be read to tell."""

    def __init__(
        self,
        settings: OAuthSettings,
        http: httpx.AsyncClient,
        clock: Clock = time.time,
        keys: KeySet | None = None,
    ) -> None:
        self.settings = settings
        self.clock = clock
        self.keys = keys if keys is not None else KeySet(settings.issuer, http, clock)
        self._valid: OrderedDict[bytes, tuple[AccessToken, str | None]] = OrderedDict()
        self._introspection = (
            Introspection(settings, http, clock) if settings.introspection_client else None
        )

    async def run(self) -> None:
        """The key set's reader, for as long as the gateway serves."""
        await self.keys.run()

    async def verify_token(self, token: str) -> AccessToken | None:
        digest = hashlib.sha256(token.encode()).digest()
        now = self.clock()
        known = self._valid.get(digest)
        if known is not None:
            kept, kept_kid = known
            fresh = kept.expires_at is not None and now < kept.expires_at
            if fresh and (kept_kid is None or self.keys.held(kept_kid) is not None):
                return kept
            del self._valid[digest]  # expired, or its key withdrawn
        if token.count(".") != 2:
            access = await self._introspected(token)
            if access is not None:
                self._remember(digest, access, None)
            return access
        try:
            header = jwt.get_unverified_header(token)
        except jwt.InvalidTokenError:
            return None
        algorithm, kid, typ = header.get("alg"), header.get("kid"), header.get("typ")
        if algorithm not in ASYMMETRIC_ALGORITHMS or not isinstance(kid, str):
            return None
        if not isinstance(typ, str) or typ.lower() not in ACCESS_TOKEN_TYPES:
            return None
        key = await self.keys.key(kid)
        if key is None:
            return None
        access = self._decode(token, key, algorithm)
        if access is not None:
            self._remember(digest, access, kid)
        return access

    def _decode(self, token: str, key: jwt.PyJWK, algorithm: str) -> AccessToken | None:
        try:
            claims = jwt.decode(
                token,
                key,
                algorithms=[algorithm],
                audience=self.settings.public_url,
                issuer=self.settings.issuer,
                leeway=LEEWAY_SECONDS,
                options={"require": ["exp", "iss", "aud", "sub"], "verify_iat": False},
            )
        except (jwt.InvalidTokenError, jwt.PyJWKError):
            return None
        if not self._times_hold(claims) or not isinstance(claims["sub"], str) or not claims["sub"]:
            return None
        client_id = claims.get("client_id", claims.get("azp"))
        return AccessToken(
            token="",  # the token itself is never kept beside what it proves
            client_id=str(client_id) if client_id is not None else "",
            scopes=granted_scopes(claims),
            expires_at=int(claims["exp"]) + LEEWAY_SECONDS,
            resource=self.settings.public_url,
            subject=shown_subject(claims["sub"], self.settings.subject_key),
            # In memory only: the person's budget is kept by `sub` (caller_budget), the portal is
            # told who calls by the e-mail (portal_identity).
            claims={"iss": claims["iss"], "sub": str(claims["sub"]), **_email(claims)},
        )

    def _times_hold(self, claims: dict[str, Any]) -> bool:
        """PyJWT reads the time itself; the injected clock has the last word (tests, skew)."""
        now = self.clock()
        expires, not_before, issued = claims["exp"], claims.get("nbf", now), claims.get("iat", now)
        if not all(isinstance(value, int | float) for value in (expires, not_before, issued)):
            return False
        return bool(
            now <= expires + LEEWAY_SECONDS
            and expires - now <= self.settings.max_token_lifetime + LEEWAY_SECONDS
            and not_before <= now + LEEWAY_SECONDS
            and issued <= now + LEEWAY_SECONDS
        )

    def _remember(self, digest: bytes, access: AccessToken, kid: str | None) -> None:
        self._valid[digest] = (access, kid)
        while len(self._valid) > CACHED_TOKENS:
            self._valid.popitem(last=False)

    async def _introspected(self, token: str) -> AccessToken | None:
        """An opaque token, by introspection when configured (None otherwise)."""
        if self._introspection is None:
            return None
        if self.keys.metadata is None and not await self.keys.next_read():
            raise IssuerUnavailable(f"no metadata from {self.settings.issuer} within the wait")
        if self.keys.metadata is None:
            raise IssuerUnavailable(self.keys.problem or "no metadata")
        endpoint = self.keys.metadata.get("introspection_endpoint")
        if not isinstance(endpoint, str) or not endpoint.startswith(("https://", "http://")):
            return None
        return await self._introspection.check(token, endpoint)


def _email(claims: dict[str, Any]) -> dict[str, str]:
    email = claims.get("email")
    return {"email": email} if isinstance(email, str) else {}


def granted_scopes(claims: dict[str, Any]) -> list[str]:
    """RFC 9068's `scope` (space-separated); `scp` as some servers spell it (string or list)."""
    granted = claims.get("scope", claims.get("scp", ""))
    if isinstance(granted, str):
        return scope_tokens(granted)
    if isinstance(granted, list):
        return [item for item in granted if isinstance(item, str)]
    return []
