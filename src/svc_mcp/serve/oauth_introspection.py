"""RFC 7662 introspection of opaque (non-JWT) access tokens, only when the operator gives the
gateway a client of its own at the authorization server (SVC_MCP_OAUTH_CLIENT_ID and _SECRET);
JWT access tokens are the default and need none of it.

The endpoint is the issuer's `introspection_endpoint`. A token is taken only when the answer says
`active`, names the issuer (when it names one), an audience containing the public URL, and an
`exp`. An answer is kept for at most `KEEP_SECONDS` (a revoked token stops working within that),
and at most `IN_FLIGHT` introspections run at once, so made-up tokens cannot flood the server.
"""

from __future__ import annotations

from typing import Any

import anyio
import httpx
from mcp.server.auth.provider import AccessToken

from svc_mcp.serve.oauth_settings import OAuthSettings, shown_subject

KEEP_SECONDS = 60
IN_FLIGHT = 4


class Introspection:
    def __init__(self, settings: OAuthSettings, http: httpx.AsyncClient) -> None:
        assert settings.introspection_client is not None
        self.settings = settings
        self.http = http
        self.client = settings.introspection_client
        self.limit = anyio.Semaphore(IN_FLIGHT)

    async def check(self, token: str, endpoint: str, now: float) -> AccessToken | None:
        async with self.limit:
            try:
                answer = await self.http.post(
                    endpoint,
                    data={"token": token, "token_type_hint": "access_token"},
                    auth=self.client,
                    follow_redirects=False,
                )
                claims: Any = answer.json() if answer.status_code == 200 else None
            except (httpx.HTTPError, ValueError):
                return None
        return self._accepted(claims, now)

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
            scopes=scope.split() if isinstance(scope, str) else [],
            expires_at=min(exp, int(now) + KEEP_SECONDS),
            resource=self.settings.public_url,
            subject=shown_subject(str(claims.get("sub") or client_id)),
            claims={"iss": self.settings.issuer},
        )
