"""The grouped rows a list's raw records add up to, computed here in Python (Decimal for money),
independently of the service's SQL: what every grouped answer is checked against."""

from __future__ import annotations

from collections.abc import Callable
from datetime import date
from decimal import Decimal
from typing import Any

Record = dict[str, Any]

GROUP_BY = {
    "/api/v1/fills": ("symbol", "side", "venue", "liquidity", "order_id", "day", "week", "month"),
    "/api/v1/orders": ("symbol", "side", "status", "type", "strategy", "day", "week", "month"),
    "/api/v1/pnl": ("week", "month", "year"),
    "/api/v1/events": ("level", "kind", "source", "symbol", "day"),
}
TIME_FIELD = {
    "/api/v1/fills": "executed_at",
    "/api/v1/orders": "created_at",
    "/api/v1/pnl": "date",
    "/api/v1/events": "ts",
}
PERIODS = ("day", "week", "month", "year")


def period(moment: str, group_by: str) -> str:
    if group_by == "day":
        return moment[:10]
    if group_by == "month":
        return moment[:7]
    if group_by == "year":
        return moment[:4]
    year, week, _ = date.fromisoformat(moment[:10]).isocalendar()
    return f"{year}-W{week:02d}"


def cents(records: list[Record], field: str) -> float:
    return float(sum((Decimal(str(record[field])) for record in records), Decimal(0)))


def _fills(records: list[Record]) -> Record:
    quantity = sum(record["quantity"] for record in records)
    notional = cents(records, "notional")
    return {
        "count": len(records),
        "quantity": quantity,
        "notional": notional,
        "fees": cents(records, "fee"),
        "vwap": round(notional / quantity, 4),
    }


def _orders(records: list[Record]) -> Record:
    return {
        "count": len(records),
        "quantity": sum(record["quantity"] for record in records),
        "filled_quantity": sum(record["filled_quantity"] for record in records),
    }


def _pnl(records: list[Record]) -> Record:
    best = min(records, key=lambda day: (-day["net_pnl"], day["date"]))
    worst = min(records, key=lambda day: (day["net_pnl"], day["date"]))
    return {
        "count": len(records),
        "realized_pnl": cents(records, "realized_pnl"),
        "unrealized_pnl": cents(records, "unrealized_pnl"),
        "fees": cents(records, "fees"),
        "net_pnl": cents(records, "net_pnl"),
        "trades": sum(day["trades"] for day in records),
        "best_day": best["date"],
        "best_net_pnl": best["net_pnl"],
        "worst_day": worst["date"],
        "worst_net_pnl": worst["net_pnl"],
    }


def _events(records: list[Record]) -> Record:
    times = [record["ts"] for record in records]
    return {"count": len(records), "first_ts": min(times), "last_ts": max(times)}


TOTALS: dict[str, Callable[[list[Record]], Record]] = {
    "/api/v1/fills": _fills,
    "/api/v1/orders": _orders,
    "/api/v1/pnl": _pnl,
    "/api/v1/events": _events,
}


def expected_groups(path: str, group_by: str, records: list[Record]) -> list[Record]:
    """One row per group, fields in key order and periods newest first, as the service answers."""
    name = "period" if group_by in PERIODS else group_by
    groups: dict[Any, list[Record]] = {}
    for record in records:
        key = period(record[TIME_FIELD[path]], group_by) if name == "period" else record[group_by]
        groups.setdefault(key, []).append(record)
    # SQLite sorts NULL first.
    keys = sorted(groups, key=lambda key: (key is not None, key or ""), reverse=name == "period")
    return [{name: key, **TOTALS[path](groups[key])} for key in keys]


CASES = [
    (path, group_by, window)
    for path, values in GROUP_BY.items()
    for group_by in values
    for window in (False, True)
]
"""Each list and `group_by` value, over the whole data and over a since/until window."""
