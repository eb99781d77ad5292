"""The portal's data files, as validated models, and the public shapes the API returns.

Stored records may hold secrets (token hashes, e-mail addresses); every `public()` method returns
the API shape, which never does. Field names follow the spec's camelCase.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

ChannelKind = Literal["mcp", "web", "cli"]
PrincipalKind = Literal["human", "service", "agent"]
Role = Literal["reader", "maintainer", "auditor"]
CardVisibility = Literal["public", "internal"]


def _require_utc(value: datetime) -> datetime:
    if value.tzinfo is None:
        raise ValueError("timestamp must carry a time zone (use a trailing Z)")
    return value.astimezone(UTC)


Timestamp = Annotated[datetime, AfterValidator(_require_utc)]


def iso(value: datetime) -> str:
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class _Stored(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class McpChannel(_Stored):
    endpoint: str = Field(min_length=1)
    transport: Literal["streamable-http", "sse", "stdio"] = "streamable-http"


class WebChannel(_Stored):
    href: str = Field(min_length=1)


class CliChannel(_Stored):
    package: str = Field(
        pattern=r"^(jsr:@[a-z0-9-]+/[a-z0-9-]+|npm:(@[a-z0-9-]+/)?[a-z0-9._-]+)@\S+$"
    )


class Surface(_Stored):
    id: str = Field(min_length=1)
    name: str = Field(min_length=1)
    version: str = Field(min_length=1)
    channels: list[ChannelKind]
    governanceState: str = Field(min_length=1)
    visibility: str = Field(min_length=1)
    mcp: McpChannel | None = None
    web: WebChannel | None = None
    cli: CliChannel | None = None

    @model_validator(mode="after")
    def _channels_have_details(self) -> Surface:
        for kind in ("mcp", "web", "cli"):
            listed = kind in self.channels
            if listed != (getattr(self, kind) is not None):
                raise ValueError(
                    f"channel {kind!r} must be listed in channels and described, or neither"
                )
        return self

    def public(self) -> dict[str, Any]:
        return self.model_dump(
            include={"id", "name", "version", "channels", "governanceState", "visibility"}
        )

    def channel_entry(self, kind: ChannelKind) -> dict[str, Any]:
        entry = self.model_dump(include={"id", "name", "version", "governanceState", "visibility"})
        if kind == "mcp" and self.mcp is not None:
            entry |= {"endpoint": self.mcp.endpoint, "transport": self.mcp.transport}
        elif kind == "web" and self.web is not None:
            entry["href"] = self.web.href
        elif kind == "cli" and self.cli is not None:
            entry["package"] = self.cli.package
        return entry


class PageComponent(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True)
    type: Literal["text", "link", "surface", "metric"]
    surfaceId: str | None = None


class PageCard(_Stored):
    id: str = Field(min_length=1)
    title: str
    visibility: CardVisibility
    components: list[PageComponent] = []


class Page(_Stored):
    title: str
    cards: list[PageCard]


class Principal(_Stored):
    id: str = Field(min_length=1)
    kind: PrincipalKind
    role: Role
    email: str | None = None

    def identity(self) -> dict[str, str]:
        return {"id": self.id, "kind": self.kind, "role": self.role}


class SessionIssued(_Stored):
    event: Literal["issued"]
    id: str
    subject: str
    tokenHash: str = Field(pattern=r"^[0-9a-f]{64}$")
    createdAt: Timestamp
    expiresAt: Timestamp


class SessionRevoked(_Stored):
    event: Literal["revoked"]
    id: str
    at: Timestamp


class CredentialIssued(_Stored):
    event: Literal["issued"] = "issued"
    id: str
    subject: str
    credentialRef: str
    issuer: str
    issuedAt: Timestamp
    secretHash: str = Field(pattern=r"^[0-9a-f]{64}$")


class CredentialRevoke(_Stored):
    id: str
    at: Timestamp
    credentialId: str
    subject: str
    revokedBy: str
    reason: str


class Grant(_Stored):
    id: str
    at: Timestamp
    subject: str
    role: Role
    grantedBy: str


class Revoke(_Stored):
    id: str
    at: Timestamp
    subject: str
    role: Role
    revokedBy: str
    reason: str


class GatewayAccess(_Stored):
    id: str
    at: Timestamp
    subject: str
    surface: str
    decision: Literal["allowed", "denied"]
    reason: str


SECRET_FIELDS = frozenset({"tokenHash", "secretHash", "email"})


def public_record(record: BaseModel) -> dict[str, Any]:
    """A stored record as the API shows it: secrets dropped, times as ISO 8601 UTC strings."""
    shown: dict[str, Any] = {}
    for name, value in record:
        if name in SECRET_FIELDS:
            continue
        shown[name] = iso(value) if isinstance(value, datetime) else value
    return shown
