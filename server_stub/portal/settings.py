"""Portal stub configuration from `PORTAL_*` environment variables (command-line flags win)."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from server_stub.hosts import host_names
from server_stub.portal.auth import MAX_LIFETIME_WITHOUT_IAT, AccessProxyConfig


class PortalSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="PORTAL_", extra="ignore")

    data_dir: Path | None = None
    access_jwt_header: str = "Cf-Access-Jwt-Assertion"
    access_jwt_secret: SecretStr | None = None
    access_jwt_jwks_file: Path | None = None
    access_jwt_issuer: str | None = None
    access_jwt_audience: str | None = None
    access_jwt_max_lifetime: int = Field(default=MAX_LIFETIME_WITHOUT_IAT, gt=0)
    """Seconds an assertion without `iat` may still be valid for (its `exp` ahead of now)."""
    allowed_hosts: str = ""
    """Comma-separated host names answered beside loopback and the bound address: the names of a
    deployment behind the access proxy."""

    @field_validator("allowed_hosts")
    @classmethod
    def _host_names_only(cls, value: str) -> str:
        host_names(value)
        return value

    @property
    def allowed_host_names(self) -> list[str]:
        return host_names(self.allowed_hosts)

    def access_proxy(self) -> AccessProxyConfig | None:
        """Raises ValueError with an operator-facing message when the settings do not fit."""
        secret = self.access_jwt_secret.get_secret_value() if self.access_jwt_secret else None
        return AccessProxyConfig.from_settings(
            header=self.access_jwt_header,
            issuer=self.access_jwt_issuer,
            audience=self.access_jwt_audience,
            secret=secret,
            jwks_file=self.access_jwt_jwks_file,
            max_lifetime=self.access_jwt_max_lifetime,
        )
