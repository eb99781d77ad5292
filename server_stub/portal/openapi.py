"""The portal's OpenAPI document: one `Operation` per entry of `app.ENDPOINTS` (all GET).

Statuses: every route can answer 401 (a bearer token or access-proxy JWT that does not verify),
414 and 431; lists 400 (bad `limit`/`cursor`); auditor-only routes and `/api/whoami` 403 (403,
not 401, for anonymous callers).
"""

from __future__ import annotations

from typing import Any

from server_stub.openapi import (
    STRING,
    TIMESTAMP,
    Operation,
    Schema,
    SecurityRequirement,
    array,
    build_document,
    enum,
    record,
)
from server_stub.portal.auth import AccessProxyConfig

Gate = str  # "anyone", "signed-in" or "auditor"

SURFACE_FIELDS: dict[str, Schema] = {
    "id": STRING,
    "name": STRING,
    "version": STRING,
    "governanceState": STRING,
    "visibility": STRING,
}
CHANNELS = array(enum("mcp", "web", "cli"))
COMPONENT: Schema = {
    "type": "object",
    "properties": {"type": enum("text", "link", "surface", "metric"), "surfaceId": STRING},
    "required": ["type"],
}
CARD = record(
    {
        "id": STRING,
        "title": STRING,
        "visibility": enum("public", "internal"),
        "components": array(COMPONENT),
    }
)
AUDIT_RECORD: Schema = {"type": "object", "properties": {"id": STRING}}
TRAIL_NAMES = enum(
    "sessions", "credentials", "credential-revokes", "grants", "revokes", "gateway-access"
)

# path -> (gate, summary, data schema of one element (lists) or of the payload)
PORTAL_ROUTES: dict[str, tuple[Gate, str, Schema, bool]] = {
    "/api/catalog": (
        "anyone",
        "the surfaces visible to the caller",
        record({**SURFACE_FIELDS, "channels": CHANNELS}),
        True,
    ),
    "/api/mcp": (
        "anyone",
        "MCP channel entries",
        record(
            {
                **SURFACE_FIELDS,
                "endpoint": STRING,
                "transport": enum("streamable-http", "sse", "stdio"),
            }
        ),
        True,
    ),
    "/api/web": ("anyone", "web channel entries", record({**SURFACE_FIELDS, "href": STRING}), True),
    "/api/cli": (
        "anyone",
        "CLI channel entries",
        record({**SURFACE_FIELDS, "package": {"type": "string", "pattern": "^(jsr|npm):"}}),
        True,
    ),
    "/api/page": (
        "anyone",
        "the custom page layout",
        record({"title": STRING, "cards": array(CARD)}),
        False,
    ),
    "/api/audit": (
        "auditor",
        "all audit trails merged, oldest first",
        record({"at": TIMESTAMP, "trail": TRAIL_NAMES, "record": AUDIT_RECORD}),
        True,
    ),
    "/api/gateway-audit": (
        "auditor",
        "direct-connection grant decisions",
        record(
            {
                "id": STRING,
                "at": TIMESTAMP,
                "subject": STRING,
                "surface": STRING,
                "decision": enum("allowed", "denied"),
                "reason": STRING,
            }
        ),
        True,
    ),
    "/api/grants": (
        "auditor",
        "identity grants",
        record(
            {
                "id": STRING,
                "at": TIMESTAMP,
                "subject": STRING,
                "role": enum("reader", "maintainer", "auditor"),
                "grantedBy": STRING,
            }
        ),
        True,
    ),
    "/api/revokes": (
        "auditor",
        "identity revokes",
        record(
            {
                "id": STRING,
                "at": TIMESTAMP,
                "subject": STRING,
                "role": enum("reader", "maintainer", "auditor"),
                "revokedBy": STRING,
                "reason": STRING,
            }
        ),
        True,
    ),
    "/api/whoami": (
        "signed-in",
        "the caller's identity",
        record(
            {
                "id": STRING,
                "kind": enum("human", "service", "agent"),
                "role": enum("reader", "maintainer", "auditor"),
            }
        ),
        False,
    ),
    "/api/sessions": (
        "auditor",
        "login session records",
        record(
            {"id": STRING, "subject": STRING, "createdAt": TIMESTAMP, "expiresAt": TIMESTAMP},
            {"revokedAt": TIMESTAMP},
        ),
        True,
    ),
    "/api/credentials": (
        "auditor",
        "login credential records",
        record(
            {
                "id": STRING,
                "subject": STRING,
                "credentialRef": STRING,
                "issuer": STRING,
                "issuedAt": TIMESTAMP,
            },
            {"revokedAt": TIMESTAMP},
        ),
        True,
    ),
    "/api/credential-revokes": (
        "auditor",
        "credential revokes",
        record(
            {
                "id": STRING,
                "at": TIMESTAMP,
                "credentialId": STRING,
                "subject": STRING,
                "revokedBy": STRING,
                "reason": STRING,
            }
        ),
        True,
    ),
}


def operations() -> list[Operation]:
    result = []
    for path, (gate, summary, data, is_list) in PORTAL_ROUTES.items():
        errors = {401, 414, 431}
        if is_list:
            errors.add(400)
        if gate != "anyone":
            errors.add(403)
        result.append(
            Operation(
                "GET",
                path,
                summary,
                data=array(data) if is_list else data,
                errors=errors,
                paged=is_list,
            )
        )
    return result


def document(access_proxy: AccessProxyConfig | None) -> dict[str, Any]:
    schemes: dict[str, Schema] = {
        "session": {"type": "http", "scheme": "bearer", "description": "a portal session token"}
    }
    security: list[SecurityRequirement] = [{}, {"session": []}]
    if access_proxy is not None:
        schemes["accessProxy"] = {
            "type": "apiKey",
            "in": "header",
            "name": access_proxy.header,
            "description": "the access proxy's signed JWT, mapped to a principal by e-mail",
        }
        security.append({"accessProxy": []})
    return build_document(
        title="svc portal (read-only API)",
        description=(
            "Every response but this document is an envelope. Only GET and HEAD are accepted; any "
            "other method is 405 method_not_allowed with Allow. Anonymous callers are allowed "
            "with reduced visibility; auditor-only routes and /api/whoami answer 403 to them."
        ),
        operations=operations(),
        security_schemes=schemes,
        security=security,
    )
