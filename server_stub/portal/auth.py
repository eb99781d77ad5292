"""Who is calling: a session bearer token, a verified access-proxy JWT, or nobody.

A credential that is present but does not verify is refused (401), never treated as anonymous, so
a typo in a token cannot silently show a caller less than they expect.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeGuard

import jwt
from starlette.requests import Request

from server_stub.http import ApiError, Clock
from server_stub.portal.models import Principal
from server_stub.portal.store import Snapshot, token_hash
from svc_serving.secrets_check import guessable

MAX_CREDENTIAL_CHARS = 4096
JWT_ALGORITHMS_SECRET = ["HS256"]
JWT_ALGORITHMS_KEYS = ["RS256", "ES256", "EdDSA"]
MAX_IAT_AGE_SECONDS = 24 * 60 * 60
MAX_LIFETIME_WITHOUT_IAT = 24 * 60 * 60
"""Without `iat` nothing says when an assertion was made: one valid for longer than this from now
(a forged or leaked one made to last) is refused. PORTAL_ACCESS_JWT_MAX_LIFETIME changes it."""
CLOCK_LEEWAY_SECONDS = 60


@dataclass(frozen=True)
class Caller:
    principal: Principal | None

    @property
    def role(self) -> str:
        return self.principal.role if self.principal else "anonymous"

    @property
    def kind(self) -> str:
        return self.principal.kind if self.principal else "anonymous"

    @property
    def is_human_auditor(self) -> bool:
        return (
            self.principal is not None
            and self.principal.role == "auditor"
            and (self.principal.kind == "human")
        )


ANONYMOUS = Caller(principal=None)


@dataclass(frozen=True)
class AccessProxyConfig:
    """How to verify the access proxy's signed assertion (HS256 secret or a JWKS file)."""

    header: str
    issuer: str
    audience: str
    secret: str | None = None
    jwks: jwt.PyJWKSet | None = None
    max_lifetime: float = MAX_LIFETIME_WITHOUT_IAT

    @classmethod
    def from_settings(
        cls,
        *,
        header: str,
        issuer: str | None,
        audience: str | None,
        secret: str | None,
        jwks_file: Path | None,
        max_lifetime: float = MAX_LIFETIME_WITHOUT_IAT,
    ) -> AccessProxyConfig | None:
        if not secret and jwks_file is None:
            return None
        if not issuer or not audience:
            raise ValueError("access-proxy JWTs need both an issuer and an audience to check")
        if secret and len(secret) < 32:
            raise ValueError("the access-proxy HS256 secret must be at least 32 characters")
        if secret and (guess := guessable(secret)):
            raise ValueError(f"the access-proxy HS256 secret {guess}")
        jwks = None
        if jwks_file is not None:
            try:
                jwks = jwt.PyJWKSet.from_dict(json.loads(jwks_file.read_text()))
            except (OSError, ValueError, jwt.PyJWKSetError) as exc:
                raise ValueError(f"cannot read the JWKS file {jwks_file}: {exc}") from None
        return cls(
            header=header,
            issuer=issuer,
            audience=audience,
            secret=secret or None,
            jwks=jwks,
            max_lifetime=max_lifetime,
        )

    def verify(self, assertion: str, now: float) -> dict[str, Any]:
        """The verified claims, or ApiError(401). Expiry is checked against the injected clock."""
        try:
            header = jwt.get_unverified_header(assertion)
            key: Any
            if self.jwks is not None and header.get("alg") in JWT_ALGORITHMS_KEYS:
                key = self._key_for(header.get("kid"))
                algorithms = JWT_ALGORITHMS_KEYS
            elif self.secret is not None:
                key, algorithms = self.secret, JWT_ALGORITHMS_SECRET
            else:
                raise jwt.InvalidAlgorithmError("algorithm not accepted")
            claims: dict[str, Any] = jwt.decode(
                assertion,
                key=key,
                algorithms=algorithms,
                audience=self.audience,
                issuer=self.issuer,
                options={
                    "require": ["exp", "iss", "aud"],
                    "verify_exp": False,
                    "verify_nbf": False,
                    "verify_iat": False,
                },
            )
        except (jwt.PyJWTError, ValueError, TypeError):
            raise _unauthorized("the access-proxy assertion does not verify") from None
        if not _time_valid(claims, now, self.max_lifetime):
            raise _unauthorized("the access-proxy assertion is expired or not yet valid")
        return claims

    def _key_for(self, kid: object) -> Any:
        assert self.jwks is not None
        for candidate in self.jwks.keys:
            if candidate.key_id == kid:
                return candidate
        raise jwt.InvalidKeyError("no key with that id")


def _time_valid(claims: dict[str, Any], now: float, max_lifetime: float) -> bool:
    """`exp` required, `nbf` and `iat` honoured when present; every one a finite number (JSON
    allows `Infinity`, which would never expire). `iat` may be at most MAX_IAT_AGE_SECONDS old and
    CLOCK_LEEWAY_SECONDS ahead of this clock; without it, `exp` at most `max_lifetime` ahead."""
    exp, nbf, iat = claims.get("exp"), claims.get("nbf"), claims.get("iat")
    if not _is_finite_time(exp) or now >= exp:
        return False
    if nbf is not None and (not _is_finite_time(nbf) or now < nbf):
        return False
    if iat is None:
        return exp - now <= max_lifetime
    return _is_finite_time(iat) and now - MAX_IAT_AGE_SECONDS <= iat <= now + CLOCK_LEEWAY_SECONDS


def _is_finite_time(value: object) -> TypeGuard[float]:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _unauthorized(message: str) -> ApiError:
    return ApiError(401, "unauthorized", message)


def identify(
    request: Request, snapshot: Snapshot, clock: Clock, proxy: AccessProxyConfig | None
) -> Caller:
    authorization = request.headers.get("authorization")
    if authorization is not None:
        return _from_bearer(authorization, snapshot, clock)
    if proxy is not None:
        assertion = request.headers.get(proxy.header)
        if assertion is not None:
            return _from_assertion(assertion, snapshot, clock, proxy)
    return ANONYMOUS


def _from_bearer(authorization: str, snapshot: Snapshot, clock: Clock) -> Caller:
    scheme, _, token = authorization.strip().partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token or len(token) > MAX_CREDENTIAL_CHARS:
        raise _unauthorized("the Authorization header must be 'Bearer <session token>'")
    session = snapshot.session_by_hash.get(token_hash(token))
    if session is None or session.id in snapshot.session_revoked_at:
        raise _unauthorized("the session token is unknown or revoked")
    if clock() >= session.expiresAt.timestamp():
        raise _unauthorized("the session has expired")
    principal = snapshot.principals.get(session.subject)
    if principal is None:
        raise _unauthorized("the session's subject is no longer a principal")
    return Caller(principal)


def _from_assertion(
    assertion: str, snapshot: Snapshot, clock: Clock, proxy: AccessProxyConfig
) -> Caller:
    if len(assertion) > MAX_CREDENTIAL_CHARS:
        raise _unauthorized("the access-proxy assertion is too long")
    claims = proxy.verify(assertion.strip(), clock())
    email = claims.get("email")
    principal = snapshot.principal_by_email.get(email.lower()) if isinstance(email, str) else None
    if principal is None:
        raise _unauthorized("the access-proxy identity is not mapped to a principal")
    return Caller(principal)
