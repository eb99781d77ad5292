"""The MCP side's own environment: the data service backend and the HTTP gateway's token.

Read at call time like the portal's (`portal_tools.settings`). `SERVICE_INTEL_HMAC` is never read.
"""

from __future__ import annotations

from pydantic import AliasChoices, AnyHttpUrl, Field, SecretStr
from pydantic_settings import SettingsConfigDict

from portal_tools.client import Connection
from portal_tools.settings import EnvironmentSettings, read_settings


class ServiceSettings(EnvironmentSettings):
    """`SERVICE_API_BASE`; the token from `SERVICE_API_TOKEN`, else `DASHBOARD_API_TOKEN`."""

    model_config = SettingsConfigDict(env_prefix="SERVICE_", env_ignore_empty=True, extra="ignore")

    api_base: AnyHttpUrl = AnyHttpUrl("http://127.0.0.1:8080")
    api_token: SecretStr | None = Field(
        default=None, validation_alias=AliasChoices("SERVICE_API_TOKEN", "DASHBOARD_API_TOKEN")
    )

    def connection(self) -> Connection:
        return Connection(
            service="the data service",
            base_url=str(self.api_base).rstrip("/"),
            base_url_variable="SERVICE_API_BASE",
            token=self.api_token.get_secret_value() if self.api_token else None,
            credential_variable="SERVICE_API_TOKEN (or DASHBOARD_API_TOKEN)",
        )


def service_connection() -> Connection:
    return read_settings(ServiceSettings).connection()


class GatewaySettings(EnvironmentSettings):
    """`SVC_MCP_GATEWAY_TOKEN`: the bearer token every request to `svc-mcp --http` must carry."""

    model_config = SettingsConfigDict(env_prefix="SVC_MCP_", env_ignore_empty=True, extra="ignore")

    gateway_token: SecretStr | None = None
