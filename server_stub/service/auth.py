"""Token and session authentication in front of the guard (docs/api-service.md).

Every credential check goes through `Authenticator`, which decides in this order:
1. auth disabled (empty token): everyone is in, the guard is not consulted;
2. the client address is locked: 429 `locked_out`, and nothing presented is checked or counted;
3. a header token (`Authorization: Bearer` first, else `X-API-Token`) is compared in constant time;
   a wrong one is a counted failure (401, or 429 on the failure that locks); an `Authorization`
   header of another scheme (Basic) is not ours and is passed over;
4. else a `svc_session` cookie naming a live session authenticates; an unknown or expired one
   counts as no credential (a restarted server forgets its sessions; that is no attack);
5. no credential: 401 `unauthorized`, not counted.

A passkey login (server_stub/service/passkeys.py) calls `admit_login`, then `failed_credential`
or `complete_login` exactly like the token login does.
"""

from __future__ import annotations

import hashlib
import hmac
import time
from dataclasses import dataclass
from enum import StrEnum
from urllib.parse import urlsplit

from starlette.requests import HTTPConnection, Request
from starlette.responses import Response

from server_stub.http import ApiError, Clock, ok
from server_stub.service.client_ip import client_address, forwarded_for_values
from server_stub.service.guard import (
    BruteForceGuard,
    FailureOutcome,
    LoginFloodLimit,
    LoginRefused,
    SenderLimit,
)
from server_stub.service.security_log import SecurityLog
from server_stub.service.sessions import SESSION_COOKIE, SessionStore
from server_stub.service.settings import ServiceSettings
from server_stub.telemetry import child, count
from svc_serving.peer_owner import OWNER_SCOPE_KEY, loopback_owner

DEFAULT_PORTS = {"http": 80, "https": 443}
CLIENT_KEY = "svc.client_key"
"""Where a request's guard key is kept in its ASGI scope once worked out."""


class Via(StrEnum):
    DISABLED = "disabled"
    NONE = "none"
    SESSION = "session"
    AUTHORIZATION = "authorization"
    X_API_TOKEN = "x-api-token"  # noqa: S105 (a header name)
    LOGIN = "login"
    PASSKEY = "passkey"


@dataclass(frozen=True)
class Authentication:
    authenticated: bool
    via: Via


def _digest(value: str) -> bytes:
    return hashlib.sha256(value.encode("utf-8", "surrogatepass")).digest()


def unauthorized(message: str) -> ApiError:
    return ApiError(401, "unauthorized", message, {"WWW-Authenticate": 'Bearer realm="svc"'})


def locked_out(retry_after: int) -> ApiError:
    return ApiError(
        429,
        "locked_out",
        f"too many failed credentials from this address; retry after {retry_after} seconds",
        {"Retry-After": str(retry_after)},
    )


def rate_limited(refused: LoginRefused) -> ApiError:
    where = "from this address" if refused.by_address else "on this server"
    return ApiError(
        429,
        "rate_limited",
        f"too many login attempts {where}; retry after {refused.retry_after} seconds",
        {"Retry-After": str(refused.retry_after)},
    )


MISSING_CREDENTIAL = (
    "authentication required: send 'Authorization: Bearer <token>' or 'X-API-Token: <token>' "
    "(the value of SERVICE_API_TOKEN), or log in at POST /api/v1/auth/login"
)
WRONG_CREDENTIAL = "the presented token is not valid"
WRONG_PASSKEY = (
    "the passkey was not accepted (unknown passkey, expired or reused challenge, or a response "
    "that does not verify); try again or sign in with the token"
)


class Authenticator:
    def __init__(
        self,
        settings: ServiceSettings,
        *,
        clock: Clock = time.monotonic,
        guard: BruteForceGuard | None = None,
        flood: LoginFloodLimit | None = None,
        sessions: SessionStore | None = None,
    ) -> None:
        self.settings = settings
        token = settings.api_token.get_secret_value()
        self.auth_required = bool(token)
        self._token_digest = _digest(token) if token else b""
        self.log = SecurityLog(clock)
        self.guard = guard if guard is not None else BruteForceGuard(clock, log=self.log)
        self.flood = flood if flood is not None else LoginFloodLimit(clock, log=self.log)
        self.options_limit = SenderLimit(clock, log=self.log)
        self.sessions = sessions if sessions is not None else SessionStore(clock)
        self._configured_origin = origin_key(settings.webauthn_origin or "")
        self._trusted_proxies = settings.trusted_proxies

    def client_address(self, connection: HTTPConnection, *, lock_check: bool = False) -> str:
        """The guard's key for the caller (client_ip.py); worked out once per request, since a
        loopback peer's key asks the kernel who owns its socket. With `lock_check` (the key is
        only looked up among the locked ones), a loopback peer's owner is not asked while no
        loopback key is locked: it is unlocked whoever it is."""
        scope = connection.scope
        key = scope.get(CLIENT_KEY)
        if isinstance(key, str):
            return key
        peer, local = scope.get("client"), scope.get("server")
        skipped = False

        def owner() -> int | None:
            nonlocal skipped
            if lock_check and not self.guard.has_loopback_locks:
                skipped = True
                return None
            if OWNER_SCOPE_KEY in scope:  # asked when the connection was accepted
                known = scope[OWNER_SCOPE_KEY]
                return known if isinstance(known, int) else None
            if not peer or not local or local[1] is None:
                return None
            return loopback_owner((peer[0], peer[1]), (local[0], local[1]))

        key = client_address(
            peer[0] if peer else None,
            forwarded_for_values(scope.get("headers", [])),
            trust_proxy=self.settings.trust_proxy,
            hops=self.settings.trusted_proxy_hops,
            trusted_proxies=self._trusted_proxies,
            loopback_owner=owner,
        )
        if not skipped:
            scope[CLIENT_KEY] = key
        return key

    def token_matches(self, presented: str) -> bool:
        # Digests have equal length whatever was presented, so the comparison time reveals nothing.
        return hmac.compare_digest(_digest(presented), self._token_digest)

    def authenticate(
        self, request: Request, *, credential_optional: bool = False
    ) -> Authentication:
        """Who is calling; raises 401/429 as described in the module docstring.

        With `credential_optional` (the auth status route), a request that presents nothing is
        answered as unauthenticated instead of refused, even from a locked address.
        """
        if not self.auth_required:
            return Authentication(True, Via.DISABLED)
        header_credential = _header_credential(request)
        session_id = None if header_credential else request.cookies.get(SESSION_COOKIE)
        if header_credential is None and not session_id and credential_optional:
            return Authentication(False, Via.NONE)
        if self.guard.has_locks:
            self.refuse_if_locked(self.client_address(request, lock_check=True))
        if header_credential is not None:
            via, presented = header_credential
            if presented is not None and self.token_matches(presented):
                return Authentication(True, via)
            raise self.failed_credential(self.client_address(request), via)
        if session_id and self.sessions.is_valid(session_id):
            return Authentication(True, Via.SESSION)
        if credential_optional:
            return Authentication(False, Via.NONE)
        raise unauthorized(MISSING_CREDENTIAL)

    def authenticate_write(self, request: Request) -> Authentication:
        """`authenticate` for a state-changing route: a cookie-authenticated call needs a
        same-origin `Origin`, so another site cannot ride the browser's session."""
        authentication = self.authenticate(request)
        if authentication.via is Via.SESSION:
            self.require_same_origin(request)
        return authentication

    def refuse_if_locked(self, client: str) -> None:
        with child("guard.check"):
            retry_after = self.guard.retry_after(client)
        if retry_after is not None:
            count("svc_stub.guard.refused", reason="locked_out")
            raise locked_out(retry_after)

    def admit_login(self, client: str) -> None:
        """Lockout first (a locked address spends none of the shared budget), then the flood
        limit."""
        self.refuse_if_locked(client)
        with child("guard.admit_login"):
            refused = self.flood.admit(client)
        if refused is not None:
            count("svc_stub.guard.refused", reason="rate_limited")
            raise rate_limited(refused)

    def admit_login_options(self, client: str) -> None:
        """For a request that starts a login but presents no credential (passkey options): the
        lockout, then the sender's own allowance; the shared login budget is not touched."""
        self.refuse_if_locked(client)
        refused = self.options_limit.admit(client)
        if refused is not None:
            raise rate_limited(refused)

    def failed_credential(self, client: str, via: Via) -> ApiError:
        """Counts a wrong credential and returns the error to answer with."""
        outcome = self._failure(client, via, "wrong_credential")
        if outcome.retry_after is not None:
            return locked_out(outcome.retry_after)
        return unauthorized(WRONG_PASSKEY if via is Via.PASSKEY else WRONG_CREDENTIAL)

    def malformed_login(self, client: str, via: Via, error: ApiError) -> ApiError:
        """A login body that is not what the route takes, after `admit_login`: counted like a wrong
        credential, so garbage cannot spend the shared login budget for free. Answered with
        `error` (400), or 429 on the failure that locks."""
        outcome = self._failure(client, via, "malformed_body")
        return locked_out(outcome.retry_after) if outcome.retry_after is not None else error

    def _failure(self, client: str, via: Via, reason: str) -> FailureOutcome:
        with child("guard.record_failure"):
            outcome = self.guard.record_failure(client, via=via.value, reason=reason)
        count("svc_stub.guard.failures", via=via.value)
        if outcome.retry_after is not None:
            count("svc_stub.guard.lockouts", via=via.value)
        return outcome

    def successful_login(self, client: str, via: Via) -> None:
        self.guard.record_success(client)
        self.log.event("login", client, "credential_accepted", via=via.value)

    def complete_login(self, request: Request, client: str, via: Via) -> Response:
        """A login that succeeded: clears the address's counter and answers with a new session."""
        self.successful_login(client, via)
        response = ok(
            {
                "auth_required": True,
                "authenticated": True,
                "session_expires_in": int(self.sessions.lifetime_seconds),
            }
        )
        self.start_session(request, response)
        return response

    def start_session(self, request: Request, response: Response) -> None:
        """Sets a fresh `svc_session`; a session the browser already had is ended (no fixation)."""
        previous = request.cookies.get(SESSION_COOKIE)
        if previous:
            self.sessions.end(previous)
        self.set_private_cookie(
            request,
            response,
            SESSION_COOKIE,
            self.sessions.create(),
            max_age=int(self.sessions.lifetime_seconds),
        )

    def set_private_cookie(
        self,
        request: Request,
        response: Response,
        name: str,
        value: str,
        *,
        max_age: int,
        path: str = "/",
    ) -> None:
        """A cookie scripts cannot read and other sites cannot send: HttpOnly, SameSite=Strict,
        Secure on https."""
        response.set_cookie(
            name,
            value,
            max_age=max_age,
            path=path,
            secure=self._is_secure(request),
            httponly=True,
            samesite="strict",
        )

    def clear_private_cookie(
        self, request: Request, response: Response, name: str, *, path: str = "/"
    ) -> None:
        response.delete_cookie(
            name, path=path, secure=self._is_secure(request), httponly=True, samesite="strict"
        )

    def end_session(self, request: Request, response: Response) -> bool:
        session_id = request.cookies.get(SESSION_COOKIE)
        ended = bool(session_id) and self.sessions.end(session_id or "")
        self.clear_private_cookie(request, response, SESSION_COOKIE)
        if ended:
            self.log.event("logout", self.client_address(request), "session_ended")
        return ended

    def require_same_origin(self, request: Request) -> None:
        origin = request.headers.get("origin")
        if origin is None or not self.is_allowed_origin(request, origin):
            self.log.event("origin_refused", self.client_address(request), "cross_origin_post")
            raise ApiError(
                403,
                "forbidden",
                "a cookie-authenticated request must come from this site (same-origin Origin)",
            )

    def refuse_foreign_origin(self, request: Request) -> None:
        """For login: browsers always send Origin on POST, so a foreign one is another site's
        page trying to spend this visitor's failure budget. Scripts send none and pass."""
        origin = request.headers.get("origin")
        if origin is not None and not self.is_allowed_origin(request, origin):
            self.log.event("origin_refused", self.client_address(request), "cross_origin_login")
            raise ApiError(403, "forbidden", "login must come from this site's own pages")

    def is_allowed_origin(self, request: Request, origin: str) -> bool:
        presented = origin_key(origin)
        if presented is None:
            return False
        if presented == self._configured_origin:
            return True
        host = request.headers.get("host")
        return host is not None and presented == origin_key(f"{request.url.scheme}://{host}")

    def _is_secure(self, request: Request) -> bool:
        if request.url.scheme == "https":
            return True
        # Behind a TLS edge the connection is plain http, but the browser is on the configured
        # https origin; the cookie must then be Secure too.
        configured = self._configured_origin
        origin = request.headers.get("origin")
        return (
            configured is not None
            and configured[0] == "https"
            and origin is not None
            and origin_key(origin) == configured
        )


def _header_credential(request: Request) -> tuple[Via, str | None] | None:
    """The presented header token: (where, value), value None when the header is malformed."""
    authorization = request.headers.get("authorization", "").strip()
    scheme, _, value = authorization.partition(" ")
    if scheme.lower() == "bearer":
        # Another scheme (Basic from a Basic-auth edge in front of the browser) is no credential
        # of ours: it neither overrides the token header or the cookie nor counts as a failure.
        value = value.strip()
        return Via.AUTHORIZATION, value or None
    api_token = request.headers.get("x-api-token", "").strip()
    if api_token:
        return Via.X_API_TOKEN, api_token
    return None


def origin_key(origin: str) -> tuple[str, str, int] | None:
    """(scheme, host, port) with default ports filled in, or None when not an http(s) origin."""
    try:
        parts = urlsplit(origin.strip().lower())
        port = parts.port
    except ValueError:
        return None
    if parts.scheme not in DEFAULT_PORTS or not parts.hostname:
        return None
    if parts.path not in ("", "/") or parts.query or parts.fragment or parts.username:
        return None
    return parts.scheme, parts.hostname, port or DEFAULT_PORTS[parts.scheme]
