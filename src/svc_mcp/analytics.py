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
from portal_tools.toolspec import Hints, Param, ToolSpec, read_tool

INTEL_SCHEMA_TAG = "svc.intel.v1"

SERVICE_ACCESS = f"the data service token ({SERVICE.token_names})"
SYMBOL = Param("symbol", "string", "Only this symbol, e.g. ABC.")
SINCE = Param("since", "string", "Only from this time on (ISO 8601, UTC when no offset).")
UNTIL = Param("until", "string", "Only before this time (ISO 8601, exclusive).")
SIDE = Param("side", "string", "Only this side.", choices=("buy", "sell"))


def _read(
    name: str,
    title: str,
    description: str,
    path: str,
    returns: str,
    filters: tuple[Param, ...] = (),
    *,
    many: bool = True,
) -> ToolSpec:
    return read_tool(
        name,
        title,
        f"{description} Newest first." if many else description,
        path,
        f"svc_mcp.records:{returns}",
        backend=SERVICE,
        access=SERVICE_ACCESS,
        filters=filters,
        many=many,
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
        "Forward one pre-signed svc.intel.v1 envelope to the data service's intel inbox. The "
        "envelope must already carry its sig (this tool cannot sign). Safe to repeat: sending "
        "the same envelope again answers duplicate=true and stores nothing new; another envelope "
        "with the same id is refused as a conflict. This is the only tool that writes."
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
        "Get the trading daemon's state: running or paused (and why), equity, cash, exposure, "
        "unrealized P&L, open position and order counts, version and heartbeat. Start here.",
        "/api/v1/system",
        "SystemState",
        many=False,
    ),
    _read(
        "get_positions",
        "Open positions",
        "List open positions by symbol: side, signed quantity, average and mark price, market "
        "value, unrealized and realized P&L.",
        "/api/v1/positions",
        "Position",
        (SYMBOL,),
    ),
    _read(
        "get_orders",
        "Orders",
        "List orders: symbol, side, type, quantity, prices, status, filled and remaining "
        "quantity, reject reason, strategy. status=open gives the working ones. Read-only: "
        "orders cannot be placed or cancelled through this package.",
        "/api/v1/orders",
        "Order",
        (
            SYMBOL,
            Param(
                "status",
                "string",
                "Only this status; open = new or partially filled.",
                choices=("open", "new", "partially_filled", "filled", "cancelled", "rejected"),
            ),
            SIDE,
            SINCE,
            UNTIL,
        ),
    ),
    _read(
        "get_fills",
        "Fills",
        "List executions: order id, symbol, side, quantity, price, notional, fee, liquidity, "
        "venue and time.",
        "/api/v1/fills",
        "Fill",
        (SYMBOL, Param("order_id", "string", "Only fills of this order."), SIDE, SINCE, UNTIL),
    ),
    _read(
        "get_pnl",
        "Daily P&L",
        "List daily profit and loss: realized, unrealized change, fees, net, closing equity and "
        "trade count per day. since/until take dates (YYYY-MM-DD).",
        "/api/v1/pnl",
        "DailyPnl",
        (SINCE, UNTIL),
    ),
    _read(
        "get_risk",
        "Risk limits",
        "List risk limits with their current use: limit, current value, utilization and status "
        "(ok, warning from 80%, breached from 100%). Ordered by symbol and scope.",
        "/api/v1/risk",
        "RiskLimit",
        (SYMBOL,),
    ),
    _read(
        "get_intel",
        "Intel inbox",
        "List the intel envelopes the service has received: id, source, kind, times and body.",
        "/api/v1/intel",
        "IntelItem",
        (
            Param("kind", "string", "Only this kind."),
            Param("source", "string", "Only from this source."),
            SINCE,
            UNTIL,
        ),
    ),
    _read(
        "get_events",
        "Event log",
        "List the daemon's events: time, level, kind (e.g. order_rejected, risk_limit_warning, "
        "system_paused), source, symbol and message.",
        "/api/v1/events",
        "Event",
        (
            Param("level", "string", "Only this level.", choices=("info", "warning", "error")),
            Param("kind", "string", "Only this kind, e.g. order_rejected."),
            SYMBOL,
            SINCE,
            UNTIL,
        ),
    ),
    _read(
        "get_auth_status",
        "Auth status",
        "Get whether the data service requires auth (auth_required) and whether the configured "
        "token is accepted (authenticated). Use it to diagnose a 401.",
        "/api/v1/auth/status",
        "AuthStatus",
        many=False,
    ),
    _read(
        "get_health",
        "Service health",
        "Get the data service's readiness: status ready, or an unavailable error when its "
        "database cannot be read.",
        "/health/ready",
        "Health",
        many=False,
    ),
    SUBMIT_INTEL,
)
