"""The portal rows of the tool table: one row per read-only portal endpoint (docs/api-portal.md)."""

from __future__ import annotations

from portal_tools.backends import PORTAL
from portal_tools.toolspec import ToolSpec, read_tool

ANYONE = "no session (anonymous callers see only approved public surfaces and public cards)"
SIGNED_IN = "a signed-in session of any role"
AUDITOR = "the auditor role with a human session"

_AUDITOR_ONLY = f"Needs the auditor role with a human session ({PORTAL.token_names})."


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
) -> ToolSpec:
    return read_tool(
        name,
        title,
        description,
        path,
        f"portal_tools.models:{returns}",
        backend=PORTAL,
        access=access,
        many=many,
        cli=cli,
    )


PORTAL_TOOLS: tuple[ToolSpec, ...] = (
    _portal_tool(
        "portal_catalog",
        "Service catalog",
        "List the service surfaces of the portal catalog that the caller may see, with each "
        "one's id, name, version, channel kinds (mcp, web, cli), governanceState and "
        "visibility. Use it first to find which services exist; use portal_mcp, portal_web or "
        "portal_cli for how to reach one. Anonymous callers see only approved public surfaces.",
        "/api/catalog",
        "CatalogEntry",
        cli=("catalog", "list"),
        access=ANYONE,
    ),
    _portal_tool(
        "portal_mcp",
        "MCP endpoints of services",
        "List the surfaces that offer an MCP channel, each with its direct MCP endpoint URL and "
        "transport. Use it to connect an MCP client to a service. Anonymous callers see only "
        "approved public surfaces.",
        "/api/mcp",
        "McpEntry",
        cli=("mcp", "list"),
        access=ANYONE,
    ),
    _portal_tool(
        "portal_web",
        "Web apps of services",
        "List the surfaces that offer a web channel, each with the URL (href) of its web app. "
        "Anonymous callers see only approved public surfaces.",
        "/api/web",
        "WebEntry",
        cli=("web", "list"),
        access=ANYONE,
    ),
    _portal_tool(
        "portal_cli",
        "CLI packages of services",
        "List the surfaces that offer a CLI, each with its package coordinate "
        "(jsr:@scope/name@1.2.3 or npm:name@1.2.3) to install it from. The portal never "
        "installs or runs them. Anonymous callers see only approved public surfaces.",
        "/api/cli",
        "CliEntry",
        cli=("cli", "list"),
        access=ANYONE,
    ),
    _portal_tool(
        "portal_page",
        "Portal page layout",
        "Get the portal's maintainer-arranged page: its title and cards, each card with its "
        "components (text, link, surface, metric). Anonymous callers do not see internal cards. "
        "Returns one object {title, cards}.",
        "/api/page",
        "PageLayout",
        cli=("page", "get"),
        access=ANYONE,
        many=False,
    ),
    _portal_tool(
        "portal_audit",
        "Merged audit timeline",
        "List every audit trail (sessions, credentials, credential-revokes, grants, revokes, "
        "gateway-access) merged into one timeline, oldest first; each entry is {at, trail, "
        f"record}}. Use it to see what happened in order. {_AUDITOR_ONLY}",
        "/api/audit",
        "AuditEvent",
        cli=("audit", "list"),
        access=AUDITOR,
    ),
    _portal_tool(
        "portal_gateway_audit",
        "Gateway access decisions",
        "List the gateway's allowed and denied direct-connection grant decisions, oldest first: "
        f"who asked for which surface, the decision and its reason. {_AUDITOR_ONLY}",
        "/api/gateway-audit",
        "GatewayAccessRecord",
        cli=("gateway", "audit"),
        access=AUDITOR,
    ),
    _portal_tool(
        "portal_grants",
        "Identity grants",
        "List the append-only identity grant records, oldest first: which role was granted to "
        f"which principal, when and by whom. {_AUDITOR_ONLY}",
        "/api/grants",
        "GrantRecord",
        cli=("identity", "grants"),
        access=AUDITOR,
    ),
    _portal_tool(
        "portal_revokes",
        "Identity revokes",
        "List the append-only identity revoke records, oldest first: which role was taken from "
        f"which principal, when, by whom and why. {_AUDITOR_ONLY}",
        "/api/revokes",
        "RevokeRecord",
        cli=("identity", "revokes"),
        access=AUDITOR,
    ),
    _portal_tool(
        "portal_whoami",
        "Who am I",
        f"Get the identity the portal proves for the current session ({PORTAL.token_names}): "
        "{id, kind, role}, never an e-mail address or token. Use it to check which role the "
        "other tools will see. Without a session it fails with a forbidden error.",
        "/api/whoami",
        "Identity",
        cli=("identity", "whoami"),
        access=SIGNED_IN,
        many=False,
    ),
    _portal_tool(
        "portal_sessions",
        "Login sessions",
        "List the login session records, oldest first: id, subject, createdAt, expiresAt, and "
        f"revokedAt when revoked; never a token or hash. {_AUDITOR_ONLY}",
        "/api/sessions",
        "SessionRecord",
        cli=("identity", "sessions"),
        access=AUDITOR,
    ),
    _portal_tool(
        "portal_credentials",
        "Login credentials",
        "List the login credential records, oldest first: id, subject, credentialRef (a "
        "reference, not the credential), issuer, issuedAt, and revokedAt when revoked. "
        f"{_AUDITOR_ONLY}",
        "/api/credentials",
        "CredentialRecord",
        cli=("identity", "credentials"),
        access=AUDITOR,
    ),
    _portal_tool(
        "portal_credential_revokes",
        "Credential revokes",
        "List the append-only credential revoke records, oldest first: which credential of "
        f"which subject was revoked, when, by whom and why. {_AUDITOR_ONLY}",
        "/api/credential-revokes",
        "CredentialRevokeRecord",
        cli=("identity", "credential", "revokes"),
        access=AUDITOR,
    ),
)
