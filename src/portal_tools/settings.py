"""Where the portal is and who is calling, read from the environment at each call.

Settings are pydantic models filled from the environment variables they name, and from no others.
pydantic-settings is not used on this side on purpose: it copies the whole environment, and on a
host that also runs the intel signer that environment holds SERVICE_INTEL_HMAC, a secret the MCP
package must never hold (spec 2, section 2). Reading only named variables is also faster, which
matters once per tool call.
"""

from __future__ import annotations

import os
from typing import ClassVar, Self

from pydantic import AnyHttpUrl, BaseModel, ConfigDict, SecretStr, ValidationError

from portal_tools.client import Connection
from portal_tools.errors import Misconfigured


class EnvironmentSettings(BaseModel):
    """A model whose fields come from named environment variables; empty counts as unset."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    variables: ClassVar[dict[str, tuple[str, ...]]]
    """Field -> the variables that may set it, first set one wins."""

    @classmethod
    def from_environment(cls) -> Self:
        """The settings as the environment holds them now; a bad value raises `Misconfigured`
        naming the variable (never its value)."""
        values: dict[str, str] = {}
        source: dict[str, str] = {}
        for field, names in cls.variables.items():
            for name in names:
                value = os.environ.get(name)
                if value:
                    values[field], source[field] = value, name
                    break
        try:
            return cls.model_validate(values)
        except ValidationError as exc:
            problems = "; ".join(
                f"{source.get(str(error['loc'][0]), str(error['loc'][0]))}: {error['msg']}"
                for error in exc.errors(include_input=False, include_url=False)
            )
            raise Misconfigured(f"invalid environment: {problems}") from None


class PortalSettings(EnvironmentSettings):
    """`PORTAL_API_BASE` and `PORTAL_SESSION_TOKEN`."""

    variables: ClassVar[dict[str, tuple[str, ...]]] = {
        "api_base": ("PORTAL_API_BASE",),
        "session_token": ("PORTAL_SESSION_TOKEN",),
    }

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
    return PortalSettings.from_environment().connection()
