"""The portal rows of the tool table: one row per read-only portal endpoint (docs/api-portal.md)."""

from __future__ import annotations

from portal_tools.backends import PORTAL
from portal_tools.toolspec import ToolSpec, read_tool

ANYONE = "no session (anonymous callers see only approved public surfaces and public cards)"
SIGNED_IN = "a signed-in session of any role"
AUDITOR = "the auditor role with a human session"

_PUBLIC = "Anonymous callers see public ones only."
_AUDITOR_ONLY = f"Auditor role, human session ({PORTAL.token_names}) only."


def _portal_tool(
    name: str,
    title: str,
    description: str,
    path: str,
    returns: str,
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
        f"portal_tools.models:{returns}",
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
        "List the portal's service surfaces (start here; portal_mcp/web/cli say how to reach "
        f"one). {_PUBLIC}",
        "/api/catalog",
        "CatalogEntry",
        cli=("catalog", "list"),
        access=ANYONE,
    ),
    _portal_tool(
        "portal_mcp",
        "MCP endpoints of services",
        f"List the surfaces with an MCP channel and each one's MCP endpoint URL. {_PUBLIC}",
        "/api/mcp",
        "McpEntry",
        cli=("mcp", "list"),
        access=ANYONE,
    ),
    _portal_tool(
        "portal_web",
        "Web apps of services",
        f"List the surfaces with a web channel and each one's web app URL (href). {_PUBLIC}",
        "/api/web",
        "WebEntry",
        cli=("web", "list"),
        access=ANYONE,
    ),
    _portal_tool(
        "portal_cli",
        "CLI packages of services",
        f"List the surfaces with a CLI and each one's package coordinate (jsr: or npm:). {_PUBLIC}",
        "/api/cli",
        "CliEntry",
        cli=("cli", "list"),
        access=ANYONE,
    ),
    _portal_tool(
        "portal_page",
        "Portal page layout",
        "Get the portal page: its title and cards with their components. Anonymous callers do "
        "not see internal cards.",
        "/api/page",
        "PageLayout",
        cli=("page", "get"),
        access=ANYONE,
        many=False,
    ),
    _portal_tool(
        "portal_audit",
        "Merged audit timeline",
        f"List all audit trails merged into one timeline of {{at, trail, record}}. {_AUDITOR_ONLY}",
        "/api/audit",
        "AuditEvent",
        cli=("audit", "list"),
        access=AUDITOR,
        selectable=True,
    ),
    _portal_tool(
        "portal_gateway_audit",
        "Gateway access decisions",
        f"List the gateway's allowed and denied direct-connection grants. {_AUDITOR_ONLY}",
        "/api/gateway-audit",
        "GatewayAccessRecord",
        cli=("gateway", "audit"),
        access=AUDITOR,
        selectable=True,
    ),
    _portal_tool(
        "portal_grants",
        "Identity grants",
        f"List the identity grant records. {_AUDITOR_ONLY}",
        "/api/grants",
        "GrantRecord",
        cli=("identity", "grants"),
        access=AUDITOR,
    ),
    _portal_tool(
        "portal_revokes",
        "Identity revokes",
        f"List the identity revoke records. {_AUDITOR_ONLY}",
        "/api/revokes",
        "RevokeRecord",
        cli=("identity", "revokes"),
        access=AUDITOR,
    ),
    _portal_tool(
        "portal_whoami",
        "Who am I",
        f"Get the identity ({{id, kind, role}}) the portal proves for {PORTAL.token_names}; "
        "forbidden without a session.",
        "/api/whoami",
        "Identity",
        cli=("identity", "whoami"),
        access=SIGNED_IN,
        many=False,
    ),
    _portal_tool(
        "portal_sessions",
        "Login sessions",
        f"List the login session records (never a token or hash). {_AUDITOR_ONLY}",
        "/api/sessions",
        "SessionRecord",
        cli=("identity", "sessions"),
        access=AUDITOR,
    ),
    _portal_tool(
        "portal_credentials",
        "Login credentials",
        f"List the login credential records (references, never the credential). {_AUDITOR_ONLY}",
        "/api/credentials",
        "CredentialRecord",
        cli=("identity", "credentials"),
        access=AUDITOR,
    ),
    _portal_tool(
        "portal_credential_revokes",
        "Credential revokes",
        f"List the credential revoke records. {_AUDITOR_ONLY}",
        "/api/credential-revokes",
        "CredentialRevokeRecord",
        cli=("identity", "credential", "revokes"),
        access=AUDITOR,
    ),
)
