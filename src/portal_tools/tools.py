"""The portal rows of the tool table: one row per read-only portal endpoint (docs/api-portal.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from svc_mcp.core.backends import PORTAL
from svc_mcp.core.lazy_import import lazy_module
from svc_mcp.core.toolspec import RecordModel, ToolSpec, read_tool

if TYPE_CHECKING:
    from portal_tools import models
else:
    models = lazy_module("portal_tools.models")

ANYONE = "no session (anonymous callers see only approved public surfaces and public cards)"
SIGNED_IN = "a signed-in session of any role"
AUDITOR = "the auditor role with a human session"

_PUBLIC = "Anonymous callers see public ones only."
_AUDITOR_ONLY = f"Auditor's human session ({PORTAL.token_names}) only."


def _portal_tool(
    name: str,
    title: str,
    description: str,
    path: str,
    returns: RecordModel,
    *,
    cli: tuple[str, ...],
    access: str,
    many: bool = True,
    selectable: bool = False,
) -> ToolSpec:
    return read_tool(
        name,
        title,
        f"{description} Oldest first." if many and access == AUDITOR else description,
        path,
        returns,
        backend=PORTAL,
        access=access,
        many=many,
        selectable=selectable,
        cli=cli,
    )


PORTAL_TOOLS: tuple[ToolSpec, ...] = (
    _portal_tool(
        "portal_catalog",
        "Service catalog",
        "List the service surfaces (start here; portal_mcp/web/cli say how to reach "
        f"one). {_PUBLIC}",
        "/api/catalog",
        lambda: models.CatalogEntry,
        cli=("catalog", "list"),
        access=ANYONE,
    ),
    _portal_tool(
        "portal_mcp",
        "MCP endpoints of services",
        f"List the surfaces with an MCP channel and each one's MCP endpoint URL. {_PUBLIC}",
        "/api/mcp",
        lambda: models.McpEntry,
        cli=("mcp", "list"),
        access=ANYONE,
    ),
    _portal_tool(
        "portal_web",
        "Web apps of services",
        f"List the surfaces with a web channel and each one's web app URL (href). {_PUBLIC}",
        "/api/web",
        lambda: models.WebEntry,
        cli=("web", "list"),
        access=ANYONE,
    ),
    _portal_tool(
        "portal_cli",
        "CLI packages of services",
        f"List the surfaces with a CLI and each one's package coordinate (jsr: or npm:). {_PUBLIC}",
        "/api/cli",
        lambda: models.CliEntry,
        cli=("cli", "list"),
        access=ANYONE,
    ),
    _portal_tool(
        "portal_page",
        "Portal page layout",
        "Get the portal page and its cards. Anonymous callers do not see internal cards.",
        "/api/page",
        lambda: models.PageLayout,
        cli=("page", "get"),
        access=ANYONE,
        many=False,
    ),
    _portal_tool(
        "portal_audit",
        "Merged audit timeline",
        f"List all audit trails merged into one timeline. {_AUDITOR_ONLY}",
        "/api/audit",
        lambda: models.AuditEvent,
        cli=("audit", "list"),
        access=AUDITOR,
        selectable=True,
    ),
    _portal_tool(
        "portal_gateway_audit",
        "Gateway access decisions",
        f"List the gateway's allowed and denied direct-connection grants. {_AUDITOR_ONLY}",
        "/api/gateway-audit",
        lambda: models.GatewayAccessRecord,
        cli=("gateway", "audit"),
        access=AUDITOR,
        selectable=True,
    ),
    _portal_tool(
        "portal_grants",
        "Identity grants",
        f"List the identity grant records. {_AUDITOR_ONLY}",
        "/api/grants",
        lambda: models.GrantRecord,
        cli=("identity", "grants"),
        access=AUDITOR,
    ),
    _portal_tool(
        "portal_revokes",
        "Identity revokes",
        f"List the identity revoke records. {_AUDITOR_ONLY}",
        "/api/revokes",
        lambda: models.RevokeRecord,
        cli=("identity", "revokes"),
        access=AUDITOR,
    ),
    _portal_tool(
        "portal_whoami",
        "Who am I",
        f"Get the identity the portal proves for {PORTAL.token_names}; "
        "forbidden without a session.",
        "/api/whoami",
        lambda: models.Identity,
        cli=("identity", "whoami"),
        access=SIGNED_IN,
        many=False,
    ),
    _portal_tool(
        "portal_sessions",
        "Login sessions",
        f"List the login session records (never a token or hash). {_AUDITOR_ONLY}",
        "/api/sessions",
        lambda: models.SessionRecord,
        cli=("identity", "sessions"),
        access=AUDITOR,
    ),
    _portal_tool(
        "portal_credentials",
        "Login credentials",
        f"List the login credential records (references, never the credential). {_AUDITOR_ONLY}",
        "/api/credentials",
        lambda: models.CredentialRecord,
        cli=("identity", "credentials"),
        access=AUDITOR,
    ),
    _portal_tool(
        "portal_credential_revokes",
        "Credential revokes",
        f"List the credential revoke records. {_AUDITOR_ONLY}",
        "/api/credential-revokes",
        lambda: models.CredentialRevokeRecord,
        cli=("identity", "credential", "revokes"),
        access=AUDITOR,
    ),
)
