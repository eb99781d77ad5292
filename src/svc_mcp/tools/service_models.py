"""The data service's records (docs/api-service.md) as pydantic models.

They give each data service tool its output schema and check every payload before it reaches a
caller. Imported only when a schema is published or a call checks its payload.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import AwareDatetime, Field

from svc_mcp.core.records import SecretFreeRecord


class ServiceRecord(SecretFreeRecord):
    """A record of the data service: snake_case fields on the wire."""


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
    utilization: float | None = Field(description="current / limit; null when the limit is 0.")
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
    forwarded_by: str | None = Field(
        default=None,
        description="Who the MCP gateway forwarded it for (their sign-in's subject), if it did.",
    )


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


class Group(ServiceRecord):
    """One row of a grouped list (`group_by`): its key, named as the field grouped by or
    `period` (UTC: YYYY-MM-DD, YYYY-Www, YYYY-MM or YYYY), the group's record count and sums
    (svc_serving.grouping). The key is not declared (its name depends on `group_by`), nor are
    `get_pnl`'s sums: the tool list has no room for them; docs/tools.md lists them."""

    count: int


class FillGroup(Group):
    """A group of fills; `vwap` is notional / quantity, null for no quantity."""

    quantity: float
    notional: float
    fees: float
    vwap: float | None


class OrderGroup(Group):
    """A group of orders."""

    quantity: float
    filled_quantity: float


class EventGroup(Group):
    """A group of events: its first and last `ts`."""

    first_ts: str
    last_ts: str
