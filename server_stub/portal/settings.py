"""Portal stub configuration from `PORTAL_*` environment variables (command-line flags win)."""

from __future__ import annotations

from pathlib import Path

from pydantic import SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

from server_stub.portal.auth import AccessProxyConfig


class PortalSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="PORTAL_", extra="ignore")

    data_dir: Path | None = None
    access_jwt_header: str = "Cf-Access-Jwt-Assertion"
    access_jwt_secret: SecretStr | None = None
    access_jwt_jwks_file: Path | None = None
    access_jwt_issuer: str | None = None
    access_jwt_audience: str | None = None

    def access_proxy(self) -> AccessProxyConfig | None:
        """Raises ValueError with an operator-facing message when the settings do not fit."""
        secret = self.access_jwt_secret.get_secret_value() if self.access_jwt_secret else None
        return AccessProxyConfig.from_settings(
            header=self.access_jwt_header,
            issuer=self.access_jwt_issuer,
            audience=self.access_jwt_audience,
            secret=secret,
            jwks_file=self.access_jwt_jwks_file,
        )
