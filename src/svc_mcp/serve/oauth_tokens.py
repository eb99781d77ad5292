"""Validates the RFC 9068 JWT access tokens of the gateway's authorization server.

The issuer's metadata is discovered once (svc_mcp.serve.oauth_discovery), its keys read from
its `jwks_uri` with PyJWT's `PyJWKClient` and kept. A token is accepted only when signed by one
of those keys with an asymmetric algorithm (never `none`, never HMAC: an HMAC "signature" keyed
with the public key is the classic forgery), `iss` is the issuer exactly, `aud` contains the
public URL (RFC 8707: a token for another resource is never taken), `exp`/`nbf` hold with
`LEEWAY_SECONDS` of clock skew, and `typ`, when present, is `at+jwt`.

A `kid` not among the kept keys refetches the key set, at most once per `REFETCH_SECONDS`, so a
key rotation needs no restart and a stream of made-up kids costs the authorization server
nothing; the set is also refetched after `KEYS_MAX_AGE_SECONDS`, so a key it withdrew stops
working. A validated token is remembered until its `exp`: a request costs no signature check
and no network call.
"""

from __future__ import annotations

import hashlib
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import anyio
import anyio.to_thread
import httpx
import jwt
from mcp.server.auth.provider import AccessToken

from svc_mcp.serve.oauth_discovery import (
    FETCH_TIMEOUT_SECONDS,
    DiscoveryFailed,
    discover,
    ssl_context,
)
from svc_mcp.serve.oauth_introspection import Introspection
from svc_mcp.serve.oauth_settings import OAuthSettings, shown_subject

LEEWAY_SECONDS = 30
"""Clock skew allowed between the authorization server and the gateway, on `exp` and `nbf`."""
REFETCH_SECONDS = 30.0
KEYS_MAX_AGE_SECONDS = 600.0
DISCOVERY_RETRY_SECONDS = 10.0
CACHED_TOKENS = 4096
ASYMMETRIC = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512")
ASYMMETRIC_ALGORITHMS = (*ASYMMETRIC, "EdDSA")
ACCESS_TOKEN_TYPES = frozenset({"at+jwt", "application/at+jwt"})

Clock = Callable[[], float]


class JwtVerifier:
    """The SDK's `TokenVerifier`: the `AccessToken` of a valid token, None for any other."""

    def __init__(
        self, settings: OAuthSettings, http: httpx.AsyncClient, clock: Clock = time.time
    ) -> None:
        self.settings = settings
        self.http = http
        self.clock = clock
        self._client: jwt.PyJWKClient | None = None
        self._keys: dict[str, jwt.PyJWK] = {}
        self._fetched_at = -float("inf")
        self._refetched_at = -float("inf")
        self._discovery_failed_at = -float("inf")
        self._lock = anyio.Lock()
        self._valid: OrderedDict[bytes, AccessToken] = OrderedDict()
        self._metadata: dict[str, Any] = {}
        self._introspection = (
            Introspection(settings, http) if settings.introspection_client is not None else None
        )

    async def verify_token(self, token: str) -> AccessToken | None:
        digest = hashlib.sha256(token.encode()).digest()
        now = self.clock()
        known = self._valid.get(digest)
        if known is not None and known.expires_at is not None and now < known.expires_at:
            return known
        if token.count(".") != 2:
            access = await self._introspected(token, now)
            if access is not None:
                self._remember(digest, access)
            return access
        try:
            header = jwt.get_unverified_header(token)
        except jwt.InvalidTokenError:
            return None
        algorithm, kid = header.get("alg"), header.get("kid")
        if algorithm not in ASYMMETRIC_ALGORITHMS or not isinstance(kid, str):
            return None
        typ = header.get("typ")
        if typ is not None and (not isinstance(typ, str) or typ.lower() not in ACCESS_TOKEN_TYPES):
            return None
        key = await self._key(kid)
        if key is None:
            return None
        access = self._decode(token, key, algorithm)
        if access is not None:
            self._remember(digest, access)
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
        # PyJWT reads the time itself; the injected clock has the last word (tests, skew).
        now = self.clock()
        expires = int(claims["exp"])
        if now > expires + LEEWAY_SECONDS or now + LEEWAY_SECONDS < claims.get("nbf", now):
            return None
        client_id = claims.get("client_id", claims.get("azp"))
        return AccessToken(
            token="",  # the token itself is never kept beside what it proves
            client_id=str(client_id) if client_id is not None else "",
            scopes=granted_scopes(claims),
            expires_at=expires + LEEWAY_SECONDS,
            resource=self.settings.public_url,
            subject=shown_subject(str(claims["sub"])),
            # In memory only: the person's budget is kept by `sub` (caller_budget), the portal is
            # told who calls by the e-mail (portal_identity).
            claims={"iss": claims["iss"], "sub": str(claims["sub"]), **_email(claims)},
        )

    def _remember(self, digest: bytes, access: AccessToken) -> None:
        self._valid[digest] = access
        while len(self._valid) > CACHED_TOKENS:
            self._valid.popitem(last=False)

    async def _key(self, kid: str) -> jwt.PyJWK | None:
        if kid in self._keys and self.clock() - self._fetched_at < KEYS_MAX_AGE_SECONDS:
            return self._keys[kid]
        async with self._lock:
            now = self.clock()
            if now - self._fetched_at >= KEYS_MAX_AGE_SECONDS:
                await self._refetch()
            elif kid not in self._keys and now - self._refetched_at >= REFETCH_SECONDS:
                # A kid the kept set lacks: perhaps a rotation, perhaps made up; once per period.
                self._refetched_at = now
                await self._refetch()
            return self._keys.get(kid)

    async def _refetch(self) -> None:
        """Reads the key set again; on a failure the kept keys stay (an outage of the
        authorization server does not lock out the tokens already issued) and the next attempt
        waits `REFETCH_SECONDS`."""
        try:
            client = await self._jwks_client()
            keys = await anyio.to_thread.run_sync(lambda: client.get_signing_keys(refresh=True))
        except (DiscoveryFailed, jwt.PyJWKClientError, jwt.PyJWKSetError):
            self._fetched_at = self.clock() - KEYS_MAX_AGE_SECONDS + REFETCH_SECONDS
            return
        self._keys = {key.key_id: key for key in keys if key.key_id}
        self._fetched_at = self.clock()

    async def _introspected(self, token: str, now: float) -> AccessToken | None:
        """An opaque token, by introspection when configured (None otherwise)."""
        if self._introspection is None:
            return None
        await self._jwks_client()  # the issuer's metadata, which names the endpoint
        endpoint = self._metadata.get("introspection_endpoint")
        if not isinstance(endpoint, str) or not endpoint.startswith(("https://", "http://")):
            return None
        return await self._introspection.check(token, endpoint, now)

    async def _jwks_client(self) -> jwt.PyJWKClient:
        if self._client is not None:
            return self._client
        if self.clock() - self._discovery_failed_at < DISCOVERY_RETRY_SECONDS:
            raise DiscoveryFailed("discovery failed a moment ago")
        try:
            metadata = await discover(self.settings.issuer, self.http)
        except DiscoveryFailed:
            self._discovery_failed_at = self.clock()
            raise
        self._metadata = metadata
        self._client = jwt.PyJWKClient(
            metadata["jwks_uri"],
            cache_jwk_set=False,
            timeout=FETCH_TIMEOUT_SECONDS,
            ssl_context=ssl_context(),
        )
        return self._client


def _email(claims: dict[str, Any]) -> dict[str, str]:
    email = claims.get("email")
    return {"email": email} if isinstance(email, str) else {}


def granted_scopes(claims: dict[str, Any]) -> list[str]:
    """RFC 9068's `scope` (space-separated); `scp` as some servers spell it (string or list)."""
    granted = claims.get("scope", claims.get("scp", ""))
    if isinstance(granted, str):
        return granted.split()
    if isinstance(granted, list):
        return [item for item in granted if isinstance(item, str)]
    return []
