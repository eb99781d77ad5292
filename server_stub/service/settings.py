"""Configuration of the data service stub, from the spec's `SERVICE_*` environment variables."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path

from pydantic import Field, SecretStr, ValidationError, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from server_stub.hosts import host_names
from server_stub.intel.envelope import key_bytes
from server_stub.service.client_ip import IPNetwork, proxy_networks
from svc_serving.loopback import is_loopback
from svc_serving.secrets_check import guessable

MIN_TOKEN_LENGTH = 24
RECOMMENDED_PUBLIC_TOKEN_LENGTH = 32
MAX_PROXY_HOPS = 32


class WithoutGroupBy(StrEnum):
    """How a data service that does not know `group_by` (another implementation of spec 2)
    answers it: as an unknown query parameter (400), or not read at all (the raw records).
    `svc-stub service --without-group-by` plays either, for svc-mcp's fallback to meet."""

    REFUSE = "refuse"
    IGNORE = "ignore"


class StartupRefused(Exception):
    """A configuration the service must not start with; the message says what to change."""


class ServiceSettings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="SERVICE_",
        extra="ignore",
        hide_input_in_errors=True,
    )

    api_token: SecretStr = SecretStr("")
    trust_proxy: bool = False
    trusted_proxy_hops: int = Field(default=1, ge=1, le=MAX_PROXY_HOPS)
    webauthn_rp_id: str | None = None
    webauthn_origin: str | None = None
    db_path: Path | None = None
    intel_hmac: SecretStr = SecretStr("")
    allowed_hosts: str = ""
    """Comma-separated host names answered beside loopback and the bound address."""
    trusted_proxy_addresses: str = ""
    """Comma-separated addresses and CIDR networks of the proxies whose X-Forwarded-For counts
    (with trust_proxy); empty: any peer's."""

    @field_validator("trusted_proxy_addresses")
    @classmethod
    def _networks_only(cls, value: str) -> str:
        proxy_networks(value)
        return value

    @property
    def trusted_proxies(self) -> tuple[IPNetwork, ...] | None:
        """The proxies whose X-Forwarded-For counts; None: any peer's (none configured)."""
        return proxy_networks(self.trusted_proxy_addresses) or None

    @field_validator("api_token", mode="before")
    @classmethod
    def _strip_token(cls, value: object) -> object:
        # Surrounding whitespace cannot survive an HTTP header, so it is never part of the token.
        return value.strip() if isinstance(value, str) else value

    @field_validator("trust_proxy", mode="before")
    @classmethod
    def _only_one_enables_trust(cls, value: object) -> object:
        # The spec: "value `1` enables; default off". `true`, `yes` or `on` would be guesses; a
        # typo must stop start-up rather than silently leave proxy trust off (or turn it on).
        if not isinstance(value, str):
            return value
        text = value.strip()
        if text not in ("", "0", "1"):
            raise ValueError("must be 1 (trust X-Forwarded-For) or 0 / empty (off)")
        return text == "1"

    @field_validator("allowed_hosts")
    @classmethod
    def _host_names_only(cls, value: str) -> str:
        host_names(value)
        return value

    @property
    def allowed_host_names(self) -> list[str]:
        return host_names(self.allowed_hosts)

    @field_validator("trusted_proxy_hops", mode="before")
    @classmethod
    def _empty_hops_is_one(cls, value: object) -> object:
        return 1 if isinstance(value, str) and not value.strip() else value

    @property
    def auth_enabled(self) -> bool:
        return bool(self.api_token.get_secret_value())

    def intel_key(self) -> bytes | None:
        """The intel signing key, or None when the intake is off (SERVICE_INTEL_HMAC empty)."""
        secret = self.intel_hmac.get_secret_value()
        return key_bytes(secret) if secret else None


def load_settings(**overrides: object) -> ServiceSettings:
    """Reads the environment; a bad value raises StartupRefused naming the variable, never the
    value."""
    try:
        settings = ServiceSettings(**overrides)  # type: ignore[arg-type]
    except ValidationError as exc:
        problems = "; ".join(
            f"SERVICE_{'_'.join(str(part) for part in error['loc']).upper()}: {error['msg']}"
            for error in exc.errors()
        )
        raise StartupRefused(f"invalid configuration: {problems}") from None
    check_token(settings)
    try:
        settings.intel_key()
    except ValueError as exc:
        raise StartupRefused(f"SERVICE_INTEL_HMAC: {exc}") from None
    return settings


def check_token(settings: ServiceSettings) -> None:
    token = settings.api_token.get_secret_value()
    if not token:
        return
    if len(token) < MIN_TOKEN_LENGTH:
        raise StartupRefused(
            f"SERVICE_API_TOKEN is {len(token)} characters long; it must be at least "
            f"{MIN_TOKEN_LENGTH} (use {RECOMMENDED_PUBLIC_TOKEN_LENGTH} or more random characters, "
            "e.g. from `python -c 'import secrets; print(secrets.token_urlsafe(32))'`), "
            "or leave it empty to disable auth for local development"
        )
    if not all("!" <= char <= "~" for char in token):
        raise StartupRefused(
            "SERVICE_API_TOKEN must consist of visible ASCII characters only "
            "(no spaces or non-ASCII), so that it can travel in an HTTP header"
        )
    if reason := guessable(token):
        raise StartupRefused(f"SERVICE_API_TOKEN {reason}")


def proxy_trust_warnings(settings: ServiceSettings) -> list[str]:
    if settings.trust_proxy and settings.trusted_proxies is None:
        return [
            "warning: SERVICE_TRUST_PROXY=1 without SERVICE_TRUSTED_PROXY_ADDRESSES: "
            "X-Forwarded-For is taken from any peer, so a client reaching this port directly "
            "picks its own lockout bucket; list your proxies' addresses there"
        ]
    return []


def check_bind(settings: ServiceSettings, host: str, *, insecure_open: bool) -> list[str]:
    """Refuses an open service on a reachable address; returns warnings to print."""
    if is_loopback(host):
        return []
    if not settings.auth_enabled:
        if insecure_open:
            return [
                f"warning: serving WITHOUT authentication on {host}; "
                "anyone who can reach this address can read all data"
            ]
        raise StartupRefused(
            f"refusing to bind {host} with auth disabled (SERVICE_API_TOKEN is empty): "
            "set SERVICE_API_TOKEN, bind 127.0.0.1, or pass --insecure-open"
        )
    if len(settings.api_token.get_secret_value()) < RECOMMENDED_PUBLIC_TOKEN_LENGTH:
        return [
            f"warning: SERVICE_API_TOKEN is shorter than {RECOMMENDED_PUBLIC_TOKEN_LENGTH} "
            f"characters while binding the non-loopback address {host}; use a longer random token"
        ]
    return []
