"""What a grouped answer (`group_by`) of the data service's lists is, written once for both sides:
the data service stub computes each group's totals in SQL, svc-mcp from the raw records when a
data service does not group (svc_mcp.core.regroup). Both name the totals alike and
shape a row from them with the same function here, so the rounding and the fields cannot part.

A field's key is named as the field; a time bucket is `period`, in UTC: `YYYY-MM-DD` (day),
`YYYY-Www` (ISO week, the one of its Thursday), `YYYY-MM` (month), `YYYY` (year). Money is summed
in whole cents, each value rounded half away from zero first (SQLite's `ROUND`), so a sum equals
what the records show. Field groups come in key order (none first), periods newest first.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Any, Protocol

Row = dict[str, Any]


class Totals(Protocol):
    """A group's totals by name: a row of the stub's SQL, or a dict of svc-mcp's."""

    def __getitem__(self, name: str, /) -> Any: ...


PERIODS = ("day", "week", "month", "year")


@dataclass(frozen=True)
class Grouped:
    """How one list groups: the record fields it groups by, its periods and the time they read."""

    time_field: str
    fields: tuple[str, ...]
    periods: tuple[str, ...]

    @property
    def choices(self) -> tuple[str, ...]:
        return self.fields + self.periods


LISTS = {
    "/api/v1/fills": Grouped(
        "executed_at", ("symbol", "side", "venue", "liquidity", "order_id"), PERIODS[:3]
    ),
    "/api/v1/orders": Grouped(
        "created_at", ("symbol", "side", "status", "type", "strategy"), PERIODS[:3]
    ),
    "/api/v1/pnl": Grouped("date", (), PERIODS[1:]),
    "/api/v1/events": Grouped("ts", ("level", "kind", "source", "symbol"), PERIODS[:1]),
}


def key_name(group_by: str) -> str:
    return "period" if group_by in PERIODS else group_by


def period(moment: str, group_by: str) -> str:
    """The UTC period of an ISO 8601 time or date."""
    if len(moment) == len("YYYY-MM-DD"):
        day = date.fromisoformat(moment)
    else:
        parsed = datetime.fromisoformat(moment)
        day = (parsed.astimezone(UTC) if parsed.tzinfo else parsed).date()
    if group_by == "week":
        year, week, _ = day.isocalendar()
        return f"{year}-W{week:02d}"
    return day.isoformat()[: {"day": 10, "month": 7, "year": 4}[group_by]]


def cents(amount: float) -> int:
    """`CAST(ROUND(amount * 100) AS INTEGER)` as SQLite computes it: half away from zero."""
    scaled = amount * 100
    return math.trunc(scaled + (-0.5 if scaled < 0 else 0.5))


def money(total_cents: int | None) -> float:
    return round((total_cents or 0) / 100, 2)


def fill_row(totals: Totals) -> Row:
    quantity = round(totals["quantity"] or 0.0, 8)
    notional = money(totals["notional_cents"])
    return {
        "count": totals["count"],
        "quantity": quantity,
        "notional": notional,
        "fees": money(totals["fee_cents"]),
        "vwap": round(notional / quantity, 4) if quantity else None,
    }


def order_row(totals: Totals) -> Row:
    return {
        "count": totals["count"],
        "quantity": round(totals["quantity"] or 0.0, 8),
        "filled_quantity": round(totals["filled_quantity"] or 0.0, 8),
    }


def pnl_row(totals: Totals) -> Row:
    return {
        "count": totals["count"],
        "realized_pnl": money(totals["realized_cents"]),
        "unrealized_pnl": money(totals["unrealized_cents"]),
        "fees": money(totals["fee_cents"]),
        "net_pnl": money(totals["net_cents"]),
        "trades": totals["trades"],
        "best_day": totals["best_day"],
        "best_net_pnl": totals["best_net_pnl"],
        "worst_day": totals["worst_day"],
        "worst_net_pnl": totals["worst_net_pnl"],
    }


def event_row(totals: Totals) -> Row:
    return {"count": totals["count"], "first_ts": totals["first_ts"], "last_ts": totals["last_ts"]}


# The totals of one group's raw records, named as the SQL's columns.


def _cents_of(records: list[Row], field: str) -> int:
    return sum(cents(record[field]) for record in records)


def _fill_totals(records: list[Row]) -> Row:
    return {
        "count": len(records),
        "quantity": math.fsum(record["quantity"] for record in records),
        "notional_cents": sum(cents(r["quantity"] * r["price"]) for r in records),
        "fee_cents": _cents_of(records, "fee"),
    }


def _order_totals(records: list[Row]) -> Row:
    return {
        "count": len(records),
        "quantity": math.fsum(record["quantity"] for record in records),
        "filled_quantity": math.fsum(record["filled_quantity"] for record in records),
    }


def _pnl_totals(records: list[Row]) -> Row:
    # The best and the worst day: the first by net_pnl either way, the earliest on a tie.
    best = min(records, key=lambda day: (-day["net_pnl"], day["date"]))
    worst = min(records, key=lambda day: (day["net_pnl"], day["date"]))
    return {
        "count": len(records),
        "realized_cents": _cents_of(records, "realized_pnl"),
        "unrealized_cents": _cents_of(records, "unrealized_pnl"),
        "fee_cents": _cents_of(records, "fees"),
        "net_cents": _cents_of(records, "net_pnl"),
        "trades": sum(day["trades"] for day in records),
        "best_day": best["date"],
        "best_net_pnl": best["net_pnl"],
        "worst_day": worst["date"],
        "worst_net_pnl": worst["net_pnl"],
    }


def _event_totals(records: list[Row]) -> Row:
    times = [record["ts"] for record in records]
    return {"count": len(records), "first_ts": min(times), "last_ts": max(times)}


ROWS: dict[str, tuple[Callable[[list[Row]], Row], Callable[[Totals], Row]]] = {
    "/api/v1/fills": (_fill_totals, fill_row),
    "/api/v1/orders": (_order_totals, order_row),
    "/api/v1/pnl": (_pnl_totals, pnl_row),
    "/api/v1/events": (_event_totals, event_row),
}
"""Each list's totals of raw records, and the row they make."""


def grouped_rows(path: str, group_by: str, records: Iterable[Row]) -> list[Row]:
    """The rows the data service answers for `path?group_by=...` over these raw records."""
    name = key_name(group_by)
    time_field = LISTS[path].time_field
    groups: dict[Any, list[Row]] = {}
    for record in records:
        key = period(record[time_field], group_by) if name == "period" else record.get(group_by)
        groups.setdefault(key, []).append(record)
    keys = sorted(groups, key=lambda key: (key is not None, key or ""), reverse=name == "period")
    totals, shape = ROWS[path]
    return [{name: key, **shape(totals(groups[key]))} for key in keys]
