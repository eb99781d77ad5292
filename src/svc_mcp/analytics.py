"""The analytics rows of the tool table: the data service's reads, and `submit_intel`.

Field meanings are documented in docs/api-service.md. Every row but `submit_intel` is a read;
`submit_intel` forwards an envelope someone else signed (the MCP never holds the signing key) and
is idempotent, so a connection failure may be retried. No row can pause, resume, flatten or
place orders: the service has no such route, and the table has no such row.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, model_validator

from portal_tools.errors import BadRequest
from portal_tools.models import refuse_secret_fields
from portal_tools.toolspec import Hints, Param, ToolSpec
from svc_mcp.service import SERVICE

INTEL_SCHEMA_TAG = "svc.intel.v1"


class ServiceRecord(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True, defer_build=True)

    @model_validator(mode="before")
    @classmethod
    def _no_secrets(cls, value: Any) -> Any:
        return refuse_secret_fields(value)


class SystemState(ServiceRecord):
    """The trading daemon's state."""

    mode: Literal["running", "paused"]
    trading_enabled: bool
    mode_reason: str | None = Field(description="Why it is paused; null when running.")
    account: str
    base_currency: str
    equity: float = Field(description="cash + net_exposure.")
    cash: float
    gross_exposure: float
    net_exposure: float
    unrealized_pnl: float
    open_positions: int
    open_orders: int
    daemon_version: str
    started_at: AwareDatetime
    last_heartbeat_at: AwareDatetime
    updated_at: AwareDatetime


class Position(ServiceRecord):
    """An open position."""

    symbol: str
    side: Literal["long", "short"]
    quantity: float = Field(description="Signed quantity.")
    avg_price: float
    mark_price: float
    market_value: float
    unrealized_pnl: float
    realized_pnl: float
    opened_at: AwareDatetime
    updated_at: AwareDatetime


class Order(ServiceRecord):
    """An order, as the daemon placed it (this package never places any)."""

    id: str
    client_order_id: str | None
    symbol: str
    side: Literal["buy", "sell"]
    type: str
    time_in_force: str
    quantity: float
    limit_price: float | None
    stop_price: float | None
    status: Literal["new", "partially_filled", "filled", "cancelled", "rejected"]
    filled_quantity: float
    remaining_quantity: float
    avg_fill_price: float | None
    reject_reason: str | None
    strategy: str | None
    created_at: AwareDatetime
    updated_at: AwareDatetime


class Fill(ServiceRecord):
    """An execution."""

    id: str
    order_id: str
    symbol: str
    side: Literal["buy", "sell"]
    quantity: float
    price: float
    notional: float
    fee: float
    liquidity: Literal["maker", "taker"]
    venue: str
    executed_at: AwareDatetime


class DailyPnl(ServiceRecord):
    """One day's profit and loss."""

    date: str = Field(description="YYYY-MM-DD.")
    realized_pnl: float
    unrealized_pnl: float = Field(description="Change over the day.")
    fees: float
    net_pnl: float = Field(description="realized + unrealized - fees.")
    equity_close: float
    trades: int


class RiskLimit(ServiceRecord):
    """A risk limit and how much of it is used."""

    name: str
    scope: Literal["account", "symbol"]
    symbol: str | None
    limit: float
    current: float
    unit: str
    utilization: float = Field(description="current / limit.")
    status: Literal["ok", "warning", "breached"]
    updated_at: AwareDatetime


class Event(ServiceRecord):
    """An entry of the daemon's event log."""

    id: int | str
    ts: AwareDatetime
    level: Literal["info", "warning", "error"]
    kind: str
    source: str
    symbol: str | None
    message: str


class IntelItem(ServiceRecord):
    """A received intel envelope (its signature is kept by the service, not listed)."""

    id: str
    schema_tag: str = Field(alias="schema")
    source: str
    kind: str
    issued_at: AwareDatetime
    expires_at: AwareDatetime | None
    received_at: AwareDatetime
    body: dict[str, Any]


class AuthStatus(ServiceRecord):
    """Whether the service requires auth, and whether this caller passes it."""

    auth_required: bool
    authenticated: bool


class Health(ServiceRecord):
    """The service's readiness probe."""

    status: Literal["ready"]


class IntelReceipt(ServiceRecord):
    """What the intake did with an envelope."""

    id: str
    duplicate: bool = Field(description="True when this envelope had been received before.")
    received_at: AwareDatetime


SERVICE_ACCESS = "the data service credential (SERVICE_API_TOKEN, else DASHBOARD_API_TOKEN)"
_PAGED = "Newest first; paged: when more remain, next_cursor is set; pass it back as cursor."

LIMIT = Param("limit", "integer", "Most records to return, 1 to 1000 (default 100).", 1, 1000)
CURSOR = Param("cursor", "string", "The next_cursor of a previous call, for the page after it.")
SYMBOL = Param("symbol", "string", "Only this symbol, e.g. ABC.")
SINCE = Param("since", "string", "Only from this time on (ISO 8601, UTC when no offset).")
UNTIL = Param("until", "string", "Only before this time (ISO 8601, exclusive).")
SIDE = Param("side", "string", "Only this side.", choices=("buy", "sell"))


def _read(
    name: str,
    title: str,
    description: str,
    path: str,
    returns: type[ServiceRecord],
    filters: tuple[Param, ...] = (),
    *,
    many: bool = True,
) -> ToolSpec:
    return ToolSpec(
        name=name,
        title=title,
        description=f"{description} {_PAGED}" if many else description,
        method="GET",
        path=path,
        params=(LIMIT, CURSOR, *filters) if many else filters,
        returns=returns,
        many=many,
        backend=SERVICE,
        access=SERVICE_ACCESS,
        cli=(),
        toolset="analytics",
    )


def check_envelope(arguments: dict[str, Any]) -> None:
    """The local shape check of `submit_intel`: the schema tag and a signature. The service
    verifies the signature itself; the MCP has no key to."""
    envelope = arguments.get("envelope")
    if not isinstance(envelope, dict):
        raise BadRequest("envelope must be a JSON object: a signed svc.intel.v1 envelope")
    if envelope.get("schema") != INTEL_SCHEMA_TAG:
        raise BadRequest(f"envelope.schema must be {INTEL_SCHEMA_TAG!r}")
    if not isinstance(envelope.get("sig"), str) or not envelope["sig"]:
        raise BadRequest("envelope has no sig: sign it first (svc-stub intel sign)")


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
    returns=IntelReceipt,
    many=False,
    backend=SERVICE,
    access=SERVICE_ACCESS,
    cli=(),
    toolset="analytics",
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
        SystemState,
        many=False,
    ),
    _read(
        "get_positions",
        "Open positions",
        "List open positions by symbol: side, signed quantity, average and mark price, market "
        "value, unrealized and realized P&L.",
        "/api/v1/positions",
        Position,
        (SYMBOL,),
    ),
    _read(
        "get_orders",
        "Orders",
        "List orders: symbol, side, type, quantity, prices, status, filled and remaining "
        "quantity, reject reason, strategy. status=open gives the working ones. Read-only: "
        "orders cannot be placed or cancelled through this package.",
        "/api/v1/orders",
        Order,
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
        Fill,
        (SYMBOL, Param("order_id", "string", "Only fills of this order."), SIDE, SINCE, UNTIL),
    ),
    _read(
        "get_pnl",
        "Daily P&L",
        "List daily profit and loss: realized, unrealized change, fees, net, closing equity and "
        "trade count per day. since/until take dates (YYYY-MM-DD).",
        "/api/v1/pnl",
        DailyPnl,
        (SINCE, UNTIL),
    ),
    _read(
        "get_risk",
        "Risk limits",
        "List risk limits with their current use: limit, current value, utilization and status "
        "(ok, warning from 80%, breached from 100%). Ordered by symbol and scope.",
        "/api/v1/risk",
        RiskLimit,
        (SYMBOL,),
    ),
    _read(
        "get_intel",
        "Intel inbox",
        "List the intel envelopes the service has received: id, source, kind, times and body.",
        "/api/v1/intel",
        IntelItem,
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
        Event,
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
        AuthStatus,
        many=False,
    ),
    _read(
        "get_health",
        "Service health",
        "Get the data service's readiness: status ready, or an unavailable error when its "
        "database cannot be read.",
        "/health/ready",
        Health,
        many=False,
    ),
    SUBMIT_INTEL,
)
