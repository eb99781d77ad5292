"""RFC 7662 introspection of opaque (non-JWT) access tokens, only when the operator gives the
gateway a client of its own at the authorization server (SVC_MCP_OAUTH_CLIENT_ID and _SECRET);
JWT access tokens are the default and need none of it.

The endpoint is the issuer's `introspection_endpoint`. A token is taken only when the answer says
`active`, names the issuer (when it names one), an audience containing the public URL, and an
`exp`. An answer is kept for at most `KEEP_SECONDS` (a revoked token stops working within that);
a refusal is kept `REFUSAL_SECONDS` (at most `REFUSALS` of them), so a made-up token sent again
and again is asked about once; at most `IN_FLIGHT` introspections run at once. An endpoint that
cannot be reached or answers 5xx raises `IssuerUnavailable` (503): not the token's fault.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import anyio
import httpx
from mcp.server.auth.provider import AccessToken

from svc_mcp.serve.oauth.access import shown_subject
from svc_mcp.serve.oauth.keys import IssuerUnavailable
from svc_mcp.serve.oauth.settings import OAuthSettings, scope_tokens

KEEP_SECONDS = 60
REFUSAL_SECONDS = 30.0
REFUSALS = 8192
IN_FLIGHT = 4


class Introspection:
    def __init__(
        self, settings: OAuthSettings, http: httpx.AsyncClient, clock: Callable[[], float]
    ) -> None:
        assert settings.introspection_client is not None
        self.settings = settings
        self.http = http
        self.clock = clock
        self.client = settings.introspection_client
        self.limit = anyio.Semaphore(IN_FLIGHT)
        self.refused: OrderedDict[bytes, float] = OrderedDict()

    async def check(self, token: str, endpoint: str) -> AccessToken | None:
        digest = hashlib.sha256(token.encode()).digest()
        if self._refused_lately(digest):
            return None
        async with self.limit:
            if self._refused_lately(digest):  # asked about while this one waited its turn
                return None
            try:
                answer = await self.http.post(
                    endpoint,
                    data={"token": token, "token_type_hint": "access_token"},
                    auth=self.client,
                    follow_redirects=False,
                )
            except httpx.HTTPError as exc:
                raise IssuerUnavailable(f"introspection: {type(exc).__name__}") from None
        if answer.status_code >= 500:
            raise IssuerUnavailable(f"introspection: HTTP {answer.status_code}")
        try:
            claims: Any = answer.json() if answer.status_code == 200 else None
        except ValueError:
            claims = None
        access = self._accepted(claims, self.clock())
        if access is None:
            self.refused[digest] = self.clock()
            self.refused.move_to_end(digest)
            while len(self.refused) > REFUSALS:
                self.refused.popitem(last=False)
        return access

    def _refused_lately(self, digest: bytes) -> bool:
        refused_at = self.refused.get(digest)
        return refused_at is not None and self.clock() - refused_at < REFUSAL_SECONDS

    def _accepted(self, claims: Any, now: float) -> AccessToken | None:
        if not isinstance(claims, dict) or claims.get("active") is not True:
            return None
        if claims.get("iss", self.settings.issuer) != self.settings.issuer:
            return None
        audience = claims.get("aud")
        audiences = audience if isinstance(audience, list) else [audience]
        exp = claims.get("exp")
        if self.settings.public_url not in audiences or not isinstance(exp, int) or exp <= now:
            return None
        scope = claims.get("scope", "")
        client_id = str(claims.get("client_id", ""))
        return AccessToken(
            token="",  # the token itself is never kept beside what it proves
            client_id=client_id,
            scopes=scope_tokens(scope) if isinstance(scope, str) else [],
            expires_at=min(exp, int(now) + KEEP_SECONDS),
            resource=self.settings.public_url,
            subject=shown_subject(str(claims.get("sub") or client_id), self.settings.subject_key),
            claims={"iss": self.settings.issuer},
        )
