"""The MCP side's own environment: the data service backend and the HTTP gateway's token.

Read at call time like the portal's (`portal_tools.settings`), from named variables only.
`SERVICE_INTEL_HMAC` is never read.
"""

from __future__ import annotations

from typing import ClassVar

from pydantic import AnyHttpUrl, SecretStr

from portal_tools.client import Connection
from portal_tools.settings import EnvironmentSettings


class ServiceSettings(EnvironmentSettings):
    """`SERVICE_API_BASE`; the token from `SERVICE_API_TOKEN`, else `DASHBOARD_API_TOKEN`."""

    variables: ClassVar[dict[str, tuple[str, ...]]] = {
        "api_base": ("SERVICE_API_BASE",),
        "api_token": ("SERVICE_API_TOKEN", "DASHBOARD_API_TOKEN"),
    }

    api_base: AnyHttpUrl = AnyHttpUrl("http://127.0.0.1:8080")
    api_token: SecretStr | None = None

    def connection(self) -> Connection:
        return Connection(
            service="the data service",
            base_url=str(self.api_base).rstrip("/"),
            base_url_variable="SERVICE_API_BASE",
            token=self.api_token.get_secret_value() if self.api_token else None,
            credential_variable="SERVICE_API_TOKEN (or DASHBOARD_API_TOKEN)",
        )


def service_connection() -> Connection:
    return ServiceSettings.from_environment().connection()


class GatewaySettings(EnvironmentSettings):
    """`SVC_MCP_GATEWAY_TOKEN`: the bearer token every request to `svc-mcp --http` must carry."""

    variables: ClassVar[dict[str, tuple[str, ...]]] = {"gateway_token": ("SVC_MCP_GATEWAY_TOKEN",)}

    gateway_token: SecretStr | None = None
