"""Passkey registration, login and management with py_webauthn (docs/api-service.md).

Routes, all under PREFIX:
- `POST register/options`, `POST register`: a new passkey; needs a browser session (sign in with the
  token first), and like every cookie-authenticated write a same-origin `Origin`;
- `POST login/options`, `POST login`: a session from a passkey assertion. The options pass the
  lockout and the sender's own allowance (`Authenticator.admit_login_options`), the login the
  lockout and the login flood limit (`Authenticator.admit_login`); a bad assertion is a counted
  failure (`failed_credential`), a good one clears the address's counter and sets `svc_session`
  exactly like the token login (`complete_login`). An assertion over a challenge that is unknown,
  expired or used is a 400 and no failure: it could not have verified, and the challenge may
  have been lost to a flood;
- `GET credentials`, `DELETE credentials/{id}`: the registered passkeys, without key material.

The relying party comes from `RelyingPartyResolver`, the challenges from `ChallengeStore` (single
use, expiring, bound to the browser that asked: a registration's to its session, a login's to a
random nonce in the `svc_passkey_login` cookie set with the options), the passkeys from
`PasskeyStore` (`<db_path>.webauthn`). User presence is always required; user
verification is preferred, not required (the token alone is one factor too). The
sign counter follows the WebAuthn rule as py_webauthn applies it: 0 stays allowed for authenticators
that keep no counter, otherwise it must grow.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, TypeVar

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route
from webauthn import (
    generate_authentication_options,
    generate_registration_options,
    verify_authentication_response,
    verify_registration_response,
)
from webauthn.helpers import (
    base64url_to_bytes,
    bytes_to_base64url,
    options_to_json_dict,
    parse_authentication_credential_json,
    parse_client_data_json,
    parse_registration_credential_json,
)
from webauthn.helpers.exceptions import WebAuthnException
from webauthn.helpers.structs import (
    AuthenticatorSelectionCriteria,
    PublicKeyCredentialDescriptor,
    ResidentKeyRequirement,
    UserVerificationRequirement,
)

from server_stub.http import (
    ApiError,
    Clock,
    ok,
    read_json_object,
    require_json,
    storage_unavailable,
)
from server_stub.service.auth import Authenticator, Via, rate_limited
from server_stub.service.challenges import Ceremony, ChallengeStore, ChallengeTableFull, Redeemed
from server_stub.service.guard import LoginRefused
from server_stub.service.passkey_store import (
    MAX_LABEL_LENGTH,
    MAX_PASSKEYS,
    Passkey,
    PasskeyStore,
    open_passkey_store,
)
from server_stub.service.query import QueryReader, bad_request
from server_stub.service.relying_party import RelyingParty, RelyingPartyResolver
from server_stub.service.schema import format_timestamp
from server_stub.service.security_log import security_event
from server_stub.service.sessions import SESSION_COOKIE
from server_stub.service.settings import ServiceSettings

PREFIX = "/api/v1/auth/passkey"
LOGIN_PATH = f"{PREFIX}/login"
LOGIN_NONCE_COOKIE = "svc_passkey_login"
RP_NAME = "svc dashboard"
USER_NAME = "operator"
# py_webauthn reports bad input as its own exceptions, or as ValueError (base64, JSON, CBOR).
BAD_INPUT = (WebAuthnException, ValueError)

T = TypeVar("T")


class PasskeyRoutes:
    def __init__(
        self,
        authenticator: Authenticator,
        store: PasskeyStore | None,
        resolver: RelyingPartyResolver,
        challenges: ChallengeStore,
        wall_clock: Clock,
    ) -> None:
        self.auth = authenticator
        self.store = store
        self.resolver = resolver
        self.challenges = challenges
        self._wall_clock = wall_clock

    @classmethod
    def from_settings(
        cls,
        settings: ServiceSettings,
        authenticator: Authenticator,
        *,
        clock: Clock,
        wall_clock: Clock,
    ) -> PasskeyRoutes:
        """Loads the passkey file; raises StartupRefused for an unusable file or setting."""
        return cls(
            authenticator,
            open_passkey_store(settings.db_path) if settings.db_path else None,
            RelyingPartyResolver(settings.webauthn_rp_id, settings.webauthn_origin),
            ChallengeStore(clock, log=authenticator.log),
            wall_clock,
        )

    def routes(self) -> list[BaseRoute]:
        post = ["POST"]
        return [
            Route(f"{PREFIX}/login/options", self.login_options, methods=post),
            Route(LOGIN_PATH, self.login, methods=post),
            Route(f"{PREFIX}/register/options", self.register_options, methods=post),
            Route(f"{PREFIX}/register", self.register, methods=post),
            Route(f"{PREFIX}/credentials", self.credentials, methods=["GET"]),
            Route(f"{PREFIX}/credentials/{{credential_id}}", self.delete, methods=["DELETE"]),
        ]

    # --- login ---------------------------------------------------------------------------------

    async def login_options(self, request: Request) -> Response:
        QueryReader(request, ())
        self._require_auth_enabled()
        self.auth.refuse_foreign_origin(request)
        # The Host is checked (it names the relying party) before anything is charged, and the
        # options are charged to the sender alone: they carry no credential, so they must not
        # spend the login budget everyone shares.
        party = self._party(request)
        client = self.auth.client_address(request)
        self.auth.admit_login_options(client)
        # The challenge belongs to this browser: the login must come with the same nonce cookie,
        # so a challenge handed to (or phished from) one browser is useless in another.
        nonce = secrets.token_urlsafe(32)
        try:
            challenge = self.challenges.issue_login(nonce, client)
        except ChallengeTableFull as full:
            raise rate_limited(LoginRefused(full.retry_after, by_address=False)) from None
        options = generate_authentication_options(
            rp_id=party.rp_id,
            challenge=challenge,
            timeout=self._timeout_ms,
            # Discoverable credentials: the browser offers the passkeys it holds for this RP, so
            # strangers learn nothing about which ones are registered.
            allow_credentials=[],
            user_verification=UserVerificationRequirement.PREFERRED,
        )
        response = ok(options_to_json_dict(options))
        self.auth.set_private_cookie(
            request,
            response,
            LOGIN_NONCE_COOKIE,
            nonce,
            max_age=int(self.challenges.ttl_seconds),
            path=LOGIN_PATH,
        )
        return response

    async def login(self, request: Request) -> Response:
        client = self._admit_login(request, json_body=True)
        party = self._party(request)
        store = self._store()
        try:
            body = await read_json_object(request, required={"credential"})
            credential = _parse(parse_authentication_credential_json, body["credential"])
        except ApiError as error:
            raise self.auth.malformed_login(client, Via.PASSKEY, error) from None
        challenge, redeemed = self._redeem(
            credential.response.client_data_json,
            Ceremony.LOGIN,
            request.cookies.get(LOGIN_NONCE_COOKIE),
        )
        if redeemed is Redeemed.MISSING:
            # Nothing presented could have verified (and a stranger may have made it so): no
            # failed credential.
            raise bad_request(
                "this login's challenge is unknown, expired or already used; start the passkey "
                "login again"
            )
        passkey = store.find(bytes_to_base64url(credential.raw_id))
        if redeemed is not Redeemed.VALID or passkey is None:
            raise self.auth.failed_credential(client, Via.PASSKEY)
        try:
            verified = verify_authentication_response(
                credential=credential,
                expected_challenge=challenge,
                expected_rp_id=party.rp_id,
                expected_origin=party.origin,
                credential_public_key=base64url_to_bytes(passkey.public_key),
                credential_current_sign_count=passkey.sign_count,
            )
        except BAD_INPUT:
            raise self.auth.failed_credential(client, Via.PASSKEY) from None
        _storing(lambda: store.record_use(passkey, verified.new_sign_count, self._now()))
        response = self.auth.complete_login(request, client, Via.PASSKEY)
        self.auth.clear_private_cookie(request, response, LOGIN_NONCE_COOKIE, path=LOGIN_PATH)
        return response

    def _admit_login(self, request: Request, *, json_body: bool) -> str:
        """The token login's checks, in its order; returns the client address."""
        QueryReader(request, ())
        self._require_auth_enabled()
        self.auth.refuse_foreign_origin(request)
        if json_body:
            require_json(request)
        client = self.auth.client_address(request)
        self.auth.admit_login(client)
        return client

    # --- registration --------------------------------------------------------------------------

    async def register_options(self, request: Request) -> Response:
        self._require_session(request)
        party = self._party(request)
        store = self._store()
        if store.is_full:
            raise _full()
        options = generate_registration_options(
            rp_id=party.rp_id,
            rp_name=RP_NAME,
            user_name=USER_NAME,
            user_id=store.user_handle,
            challenge=self.challenges.issue_registration(_session_id(request)),
            timeout=self._timeout_ms,
            authenticator_selection=AuthenticatorSelectionCriteria(
                resident_key=ResidentKeyRequirement.REQUIRED,
                user_verification=UserVerificationRequirement.PREFERRED,
            ),
            exclude_credentials=[
                PublicKeyCredentialDescriptor(id=base64url_to_bytes(passkey.id))
                for passkey in store.passkeys()
                if passkey.rp_id == party.rp_id
            ],
        )
        return ok(options_to_json_dict(options))

    async def register(self, request: Request) -> Response:
        self._require_session(request)
        require_json(request)
        party = self._party(request)
        store = self._store()
        body = await read_json_object(request, required={"credential", "label"})
        label = _label(body["label"], default=f"Passkey {len(store) + 1}")
        credential = _parse(parse_registration_credential_json, body["credential"])
        challenge, redeemed = self._redeem(
            credential.response.client_data_json, Ceremony.REGISTER, _session_id(request)
        )
        if redeemed is not Redeemed.VALID:
            raise bad_request(
                "this registration's challenge is unknown, expired or already used; start again"
            )
        try:
            verified = verify_registration_response(
                credential=credential,
                expected_challenge=challenge,
                expected_rp_id=party.rp_id,
                expected_origin=party.origin,
                require_user_presence=True,
            )
        except BAD_INPUT as exc:
            raise bad_request(f"the passkey registration did not verify: {exc}") from None
        if store.find(bytes_to_base64url(verified.credential_id)) is not None:
            raise ApiError(409, "conflict", "this passkey is already registered")
        if store.is_full:
            raise _full()
        passkey = Passkey(
            id=bytes_to_base64url(verified.credential_id),
            public_key=bytes_to_base64url(verified.credential_public_key),
            sign_count=verified.sign_count,
            rp_id=party.rp_id,
            label=label,
            created_at=self._now(),
        )
        _storing(lambda: store.add(passkey))
        security_event("passkey_registered", self.auth.client_address(request), "credential_added")
        return ok(passkey.listing(), status=201)

    # --- management ----------------------------------------------------------------------------

    async def credentials(self, request: Request) -> Response:
        self._require_auth_enabled()
        self.auth.authenticate(request)
        QueryReader(request, ())
        return ok([passkey.listing() for passkey in self._store().passkeys()])

    async def delete(self, request: Request) -> Response:
        self._require_auth_enabled()
        self.auth.authenticate_write(request)
        QueryReader(request, ())
        store = self._store()
        passkey = store.find(request.path_params["credential_id"])
        if passkey is None:
            raise ApiError(404, "not_found", "no registered passkey has this id")
        _storing(lambda: store.remove(passkey))
        security_event("passkey_deleted", self.auth.client_address(request), "credential_removed")
        return ok({"deleted": passkey.id})

    # --- shared --------------------------------------------------------------------------------

    @property
    def _timeout_ms(self) -> int:
        return int(self.challenges.ttl_seconds * 1000)

    def _require_auth_enabled(self) -> None:
        if not self.auth.auth_required:
            raise ApiError(
                409,
                "conflict",
                "auth is disabled (SERVICE_API_TOKEN is empty), so there is nothing to sign in to",
            )

    def _require_session(self, request: Request) -> None:
        self._require_auth_enabled()
        if self.auth.authenticate_write(request).via is not Via.SESSION:
            raise ApiError(
                403,
                "forbidden",
                "registering a passkey needs a browser session: sign in with the token first",
            )

    def _party(self, request: Request) -> RelyingParty:
        return self.resolver.resolve(request.url.scheme, request.headers.get("host"))

    def _store(self) -> PasskeyStore:
        if self.store is None:
            raise ApiError(503, "unavailable", "passkeys are kept beside the database: pass --db")
        return self.store

    def _redeem(
        self, client_data_json: bytes, ceremony: Ceremony, holder: str | None
    ) -> tuple[bytes, Redeemed]:
        """The challenge the client data names, and whether it was issued for `ceremony` to
        `holder` and is live."""
        try:
            challenge = parse_client_data_json(client_data_json).challenge
        except BAD_INPUT:
            return b"", Redeemed.MISSING
        return challenge, self.challenges.redeem(challenge, ceremony, holder)

    def _now(self) -> str:
        return format_timestamp(datetime.fromtimestamp(self._wall_clock(), UTC))


def _session_id(request: Request) -> str:
    """The browser session a registration belongs to (`_require_session` has checked it)."""
    return request.cookies.get(SESSION_COOKIE, "")


def _parse(parser: Callable[[Any], T], value: Any) -> T:
    if not isinstance(value, dict):
        raise bad_request("credential must be the PublicKeyCredential as a JSON object")
    try:
        return parser(value)
    except BAD_INPUT as exc:
        raise bad_request(f"credential is not a WebAuthn response: {exc}") from None


def _label(value: Any, *, default: str) -> str:
    if not isinstance(value, str):
        raise bad_request("label must be a string (empty for a default name)")
    label = value.strip()
    if len(label) > MAX_LABEL_LENGTH or not label.isprintable():
        raise bad_request(f"label must be at most {MAX_LABEL_LENGTH} printable characters")
    return label or default


def _full() -> ApiError:
    return ApiError(
        409, "conflict", f"{MAX_PASSKEYS} passkeys are registered already; delete one first"
    )


def _storing(change: Callable[[], T]) -> T:
    try:
        return change()
    except OSError:
        raise storage_unavailable(
            "the passkey file cannot be written right now; nothing was changed"
        ) from None
