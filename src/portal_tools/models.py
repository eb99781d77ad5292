"""The portal's records (docs/api-portal.md) as pydantic models.

They give each tool its output schema and check every payload before it reaches a caller. Field
names are snake_case in Python and camelCase on the wire. Unknown fields are allowed (the portal
may add some), but a field whose name says it holds a secret is refused
(`svc_mcp.core.records.SecretFreeRecord`).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import AwareDatetime, ConfigDict, Field, model_validator
from pydantic.alias_generators import to_camel

from svc_mcp.core.records import SecretFreeRecord, refuse_secret_fields

Timestamp = AwareDatetime
Role = Literal["reader", "maintainer", "auditor"]
TrailName = Literal[
    "sessions", "credentials", "credential-revokes", "grants", "revokes", "gateway-access"
]


class Record(SecretFreeRecord):
    """A portal record: snake_case in Python, camelCase on the wire."""

    model_config = ConfigDict(alias_generator=to_camel)


class Surface(Record):
    id: str = Field(description="Identifier of the surface.")
    name: str = Field(description="Display name.")
    version: str = Field(description="Version of the surface (not of the API).")
    governance_state: str = Field(description="Governance state, e.g. approved or internal.")
    visibility: str = Field(description="Visibility, e.g. public or internal.")


class CatalogEntry(Surface):
    """A service surface of the catalog."""

    channels: list[Literal["mcp", "web", "cli"]] = Field(description="Channel kinds it offers.")


class McpEntry(Surface):
    """A surface's MCP channel: where an MCP client connects directly."""

    endpoint: str = Field(description="MCP connection endpoint URL.")
    transport: str = Field(description="MCP transport, e.g. streamable-http.")


class WebEntry(Surface):
    """A surface's web channel."""

    href: str = Field(description="URL of the web app.")


class CliEntry(Surface):
    """A surface's CLI channel: the package to install it from (never installed by the portal)."""

    package: str = Field(
        pattern=r"^(jsr|npm):", description="Package coordinate, jsr:@scope/name@1.2.3 or npm:..."
    )


class PageComponent(Record):
    """One component of a card; fields beyond `type` depend on the type."""

    type: str = Field(description="Component type, e.g. text, link, surface, metric.")


class PageCard(Record):
    """A maintainer-arranged card of the portal page."""

    id: str
    title: str
    visibility: str
    components: list[PageComponent]


class PageLayout(Record):
    """The portal's custom page: a title and its cards, as the caller may see them."""

    title: str
    cards: list[PageCard]


class Identity(Record):
    """The caller's proven identity (never an e-mail address, credential or token)."""

    id: str = Field(description="Principal id.")
    kind: Literal["human", "service", "agent"]
    role: Role


class AuditEvent(Record):
    """One entry of the merged audit timeline: a record of one trail, with its time."""

    at: Timestamp
    trail: TrailName
    record: dict[str, Any] = Field(description="The trail's record, as its own tool returns it.")

    @model_validator(mode="after")
    def _record_has_no_secrets(self) -> AuditEvent:
        refuse_secret_fields(self.record)
        return self


class GatewayAccessRecord(Record):
    """A direct-connection grant decision of the gateway."""

    id: str
    at: Timestamp
    subject: str = Field(description="Principal that asked for access.")
    surface: str = Field(description="Surface id it asked for.")
    decision: Literal["allowed", "denied"]
    reason: str


class GrantRecord(Record):
    """An identity grant: a role given to a principal."""

    id: str
    at: Timestamp
    subject: str
    role: Role
    granted_by: str


class RevokeRecord(Record):
    """An identity revoke: a role taken from a principal."""

    id: str
    at: Timestamp
    subject: str
    role: Role
    revoked_by: str
    reason: str


class SessionRecord(Record):
    """A login session (never its token or hash); `revokedAt` only when revoked."""

    id: str
    subject: str
    created_at: Timestamp
    expires_at: Timestamp
    revoked_at: Timestamp | None = None


class CredentialRecord(Record):
    """A login credential (a reference, never the credential); `revokedAt` only when revoked."""

    id: str
    subject: str
    credential_ref: str = Field(description="Reference to the credential, not the credential.")
    issuer: str
    issued_at: Timestamp
    revoked_at: Timestamp | None = None


class CredentialRevokeRecord(Record):
    """A credential revoke."""

    id: str
    at: Timestamp
    credential_id: str
    subject: str
    revoked_by: str
    reason: str
