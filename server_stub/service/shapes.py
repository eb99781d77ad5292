"""Each table's row as the data service's API returns it (server_stub.service.db reads them)."""

from __future__ import annotations

import json
import sqlite3
from typing import Any

Row = dict[str, Any]


def position(row: sqlite3.Row) -> Row:
    quantity = row["quantity"]
    return {
        "symbol": row["symbol"],
        "side": "long" if quantity > 0 else "short",
        "quantity": quantity,
        "avg_price": row["avg_price"],
        "mark_price": row["mark_price"],
        "market_value": round(quantity * row["mark_price"], 2),
        "unrealized_pnl": round(quantity * (row["mark_price"] - row["avg_price"]), 2),
        "realized_pnl": row["realized_pnl"],
        "opened_at": row["opened_at"],
        "updated_at": row["updated_at"],
    }


def order(row: sqlite3.Row) -> Row:
    return {
        "id": row["id"],
        "client_order_id": row["client_order_id"],
        "symbol": row["symbol"],
        "side": row["side"],
        "type": row["type"],
        "time_in_force": row["time_in_force"],
        "quantity": row["quantity"],
        "limit_price": row["limit_price"],
        "stop_price": row["stop_price"],
        "status": row["status"],
        "filled_quantity": row["filled_quantity"],
        "remaining_quantity": round(row["quantity"] - row["filled_quantity"], 8)
        if row["status"] in ("new", "partially_filled")
        else 0.0,
        "avg_fill_price": row["avg_fill_price"],
        "reject_reason": row["reject_reason"],
        "strategy": row["strategy"],
        "created_at": row["created_at"],
        "updated_at": row["updated_at"],
    }


def fill(row: sqlite3.Row) -> Row:
    return {
        "id": row["id"],
        "order_id": row["order_id"],
        "symbol": row["symbol"],
        "side": row["side"],
        "quantity": row["quantity"],
        "price": row["price"],
        "notional": round(row["quantity"] * row["price"], 2),
        "fee": row["fee"],
        "liquidity": row["liquidity"],
        "venue": row["venue"],
        "executed_at": row["executed_at"],
    }


def pnl(row: sqlite3.Row) -> Row:
    return {
        "date": row["date"],
        "realized_pnl": row["realized_pnl"],
        "unrealized_pnl": row["unrealized_pnl"],
        "fees": row["fees"],
        "net_pnl": row["net_pnl"],
        "equity_close": row["equity_close"],
        "trades": row["trades"],
    }


WARNING_UTILIZATION = 0.8


def risk_limit(row: sqlite3.Row) -> Row:
    limit = row["limit_value"]
    utilization = round(row["current_value"] / limit, 4) if limit else None
    if utilization is None:
        status = "ok"
    elif utilization >= 1:
        status = "breached"
    elif utilization >= WARNING_UTILIZATION:
        status = "warning"
    else:
        status = "ok"
    return {
        "name": row["name"],
        "scope": row["scope"],
        "symbol": row["symbol"],
        "limit": limit,
        "current": row["current_value"],
        "unit": row["unit"],
        "utilization": utilization,
        "status": status,
        "updated_at": row["updated_at"],
    }


def event(row: sqlite3.Row) -> Row:
    return {
        "id": row["id"],
        "ts": row["ts"],
        "level": row["level"],
        "kind": row["kind"],
        "source": row["source"],
        "symbol": row["symbol"],
        "message": row["message"],
    }


def intel(row: sqlite3.Row) -> Row:
    try:
        body: Any = json.loads(row["body"])
    except ValueError:
        body = row["body"]
    return {
        "id": row["id"],
        "schema": row["schema"],
        "source": row["source"],
        "kind": row["kind"],
        "issued_at": row["issued_at"],
        "expires_at": row["expires_at"],
        "received_at": row["received_at"],
        "body": body,
        # A database made before the column existed has none until its first intel is written.
        "forwarded_by": row["forwarded_by"] if "forwarded_by" in row.keys() else None,  # noqa: SIM118
    }
