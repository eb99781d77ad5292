"""The analytics rows of the tool table: the data service's reads, and `submit_intel`.

Field meanings are documented in docs/api-service.md; the record models are in
`svc_mcp.records`. Every row but `submit_intel` is a read; `submit_intel` forwards an envelope
someone else signed (the MCP never holds the signing key) and is idempotent, so a connection
failure may be retried. No row can pause, resume, flatten or place orders: the service has no
such route, and the table has no such row.
"""

from __future__ import annotations

from typing import Any

from portal_tools.backends import SERVICE
from portal_tools.errors import InvalidArgument
from portal_tools.toolspec import AGENT_PAGE, Hints, Param, ToolSpec, read_tool

INTEL_SCHEMA_TAG = "svc.intel.v1"

SERVICE_ACCESS = f"the data service token ({SERVICE.token_names})"

SYMBOL = Param("symbol", "string", "")
SINCE = Param(
    "since", "string", "From this ISO 8601 time (UTC without offset).", time_format="date-time"
)
UNTIL = Param("until", "string", "Before this ISO 8601 time.", time_format="date-time")
SINCE_DATE = Param("since", "string", "From this date (YYYY-MM-DD).", time_format="date")
UNTIL_DATE = Param("until", "string", "Before this date (YYYY-MM-DD).", time_format="date")
SIDE = Param("side", "string", "", choices=("buy", "sell"))
KIND = Param("kind", "string", "")


def _read(
    name: str,
    title: str,
    description: str,
    path: str,
    returns: str,
    filters: tuple[Param, ...] = (),
    *,
    many: bool = True,
    selectable: bool = False,
    agent_page: int = AGENT_PAGE,
) -> ToolSpec:
    return read_tool(
        name,
        title,
        f"{description} Newest first; filters narrow it." if many else description,
        path,
        f"svc_mcp.records:{returns}",
        backend=SERVICE,
        access=SERVICE_ACCESS,
        filters=filters,
        many=many,
        selectable=selectable,
        agent_page=agent_page,
    )


def check_envelope(arguments: dict[str, Any]) -> None:
    """The local shape check of `submit_intel`: the schema tag and a signature. The service
    verifies the signature itself; the MCP has no key to."""
    envelope = arguments.get("envelope")
    if not isinstance(envelope, dict):
        raise InvalidArgument(
            "envelope must be a JSON object: a signed svc.intel.v1 envelope", hint="envelope"
        )
    if envelope.get("schema") != INTEL_SCHEMA_TAG:
        raise InvalidArgument(f"envelope.schema must be {INTEL_SCHEMA_TAG!r}", hint="envelope")
    if not isinstance(envelope.get("sig"), str) or not envelope["sig"]:
        raise InvalidArgument(
            "envelope has no sig: sign it first (svc-stub intel sign)", hint="envelope"
        )


SUBMIT_INTEL = ToolSpec(
    name="submit_intel",
    title="Submit signed intel",
    description=(
        "Forward one pre-signed svc.intel.v1 envelope to the intel inbox (the only write; it "
        "cannot sign). A repeat answers duplicate=true; another envelope with its id, conflict."
    ),
    method="POST",
    path="/api/v1/intel",
    params=(
        Param(
            "envelope",
            "object",
            "The signed envelope: {schema, id, issued_at, expires_at?, source, kind, body, sig}.",
            required=True,
        ),
    ),
    returns="svc_mcp.records:IntelReceipt",
    many=False,
    backend=SERVICE,
    access=SERVICE_ACCESS,
    hints=Hints(read_only=False, destructive=False, idempotent=True, open_world=False),
    body="envelope",
    precheck=check_envelope,
    transport_retries=2,
)

ANALYTICS_TOOLS: tuple[ToolSpec, ...] = (
    _read(
        "get_system",
        "Trading system state",
        "Get the trading daemon's state: running or paused (and why), equity, exposure, P&L, "
        "counts, heartbeat. Start here.",
        "/api/v1/system",
        "SystemState",
        many=False,
    ),
    _read(
        "get_positions",
        "Open positions",
        "List open positions: side, quantity, prices, market value, P&L.",
        "/api/v1/positions",
        "Position",
        (SYMBOL,),
    ),
    _read(
        "get_orders",
        "Orders",
        "List the daemon's orders (read-only: none can be placed or cancelled here); "
        "status=open gives the working ones.",
        "/api/v1/orders",
        "Order",
        (
            SYMBOL,
            Param(
                "status",
                "string",
                "open = new or partially_filled.",
                choices=("open", "new", "partially_filled", "filled", "cancelled", "rejected"),
            ),
            SIDE,
            SINCE,
            UNTIL,
        ),
        selectable=True,
        agent_page=15,
    ),
    _read(
        "get_fills",
        "Fills",
        "List executions: order, symbol, side, quantity, price, fee, venue, time.",
        "/api/v1/fills",
        "Fill",
        (SYMBOL, Param("order_id", "string", ""), SIDE, SINCE, UNTIL),
        selectable=True,
    ),
    _read(
        "get_pnl",
        "Daily P&L",
        "List daily P&L (since/until take dates).",
        "/api/v1/pnl",
        "DailyPnl",
        (SINCE_DATE, UNTIL_DATE),
    ),
    _read(
        "get_risk",
        "Risk limits",
        "List risk limits and their use (status warning from 80%, breached from 100%).",
        "/api/v1/risk",
        "RiskLimit",
        (SYMBOL,),
    ),
    _read(
        "get_intel",
        "Intel inbox",
        "List the intel envelopes received: id, source, kind, times, body.",
        "/api/v1/intel",
        "IntelItem",
        (KIND, Param("source", "string", ""), SINCE, UNTIL),
    ),
    _read(
        "get_events",
        "Event log",
        "List the daemon's events: time, level, kind, source, symbol, message.",
        "/api/v1/events",
        "Event",
        (
            Param("level", "string", "", choices=("info", "warning", "error")),
            KIND,
            SYMBOL,
            SINCE,
            UNTIL,
        ),
        selectable=True,
    ),
    _read(
        "get_auth_status",
        "Auth status",
        "Get whether the data service requires auth and whether the configured token passes. "
        "Use it to diagnose a 401.",
        "/api/v1/auth/status",
        "AuthStatus",
        many=False,
    ),
    _read(
        "get_health",
        "Service health",
        "Get the data service's readiness (ready, or an unavailable error).",
        "/health/ready",
        "Health",
        many=False,
    ),
    SUBMIT_INTEL,
)
