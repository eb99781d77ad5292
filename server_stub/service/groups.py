"""Grouped answers of the data service's lists (`group_by`): one row per group, computed in one SQL
statement over the same records and filters as the raw list.

A field's key is named as the field; a time bucket is `period`, in UTC: `YYYY-MM-DD` (day),
`YYYY-Www` (ISO week), `YYYY-MM` (month), `YYYY` (year). Money is summed in whole cents (each
value rounded to the cent first, as the raw records show it), so a sum equals what the records add
up to. Field groups come in key order, periods newest first; they page like any other list.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from server_stub.http import PageRequest
from server_stub.openapi import INTEGER, STRING, Schema, enum, nullable, query, record
from server_stub.service.db import (
    Condition,
    PageOfRows,
    ServiceDatabase,
    TimeRange,
    where_clause,
)
from server_stub.service.shapes import Row


def _iso_week(column: str) -> str:
    # SQLite 3.40 has no %V: the ISO week is the one of its Thursday.
    thursday = f"date(substr({column}, 1, 10), '-3 days', 'weekday 4')"
    return (
        f"printf('%s-W%02d', strftime('%Y', {thursday}), "
        f"(CAST(strftime('%j', {thursday}) AS INTEGER) - 1) / 7 + 1)"
    )


def _periods(column: str) -> dict[str, str]:
    return {
        "day": f"substr({column}, 1, 10)",
        "week": _iso_week(column),
        "month": f"substr({column}, 1, 7)",
        "year": f"substr({column}, 1, 4)",
    }


def _cents(sql: str) -> str:
    return f"SUM(CAST(ROUND(({sql}) * 100) AS INTEGER))"


@dataclass(frozen=True)
class Grouping:
    """How one list groups: its table, the key expression of each `group_by` value, the
    aggregate columns and how a result row is shaped."""

    table: str
    time_column: str
    keys: dict[str, str]
    aggregates: str
    shape: Callable[[sqlite3.Row], Row]

    @property
    def choices(self) -> tuple[str, ...]:
        return tuple(self.keys)


PERIODS = ("day", "week", "month", "year")


def _key_name(group_by: str) -> str:
    return "period" if group_by in PERIODS else group_by


def _money(cents: int | None) -> float:
    return round((cents or 0) / 100, 2)


def _fill_group(row: sqlite3.Row) -> Row:
    quantity = round(row["quantity"] or 0.0, 8)
    notional = _money(row["notional_cents"])
    return {
        "count": row["count"],
        "quantity": quantity,
        "notional": notional,
        "fees": _money(row["fee_cents"]),
        "vwap": round(notional / quantity, 4) if quantity else None,
    }


def _order_group(row: sqlite3.Row) -> Row:
    return {
        "count": row["count"],
        "quantity": round(row["quantity"] or 0.0, 8),
        "filled_quantity": round(row["filled_quantity"] or 0.0, 8),
    }


def _pnl_group(row: sqlite3.Row) -> Row:
    return {
        "count": row["count"],
        "realized_pnl": _money(row["realized_cents"]),
        "unrealized_pnl": _money(row["unrealized_cents"]),
        "fees": _money(row["fee_cents"]),
        "net_pnl": _money(row["net_cents"]),
        "trades": row["trades"],
        "best_day": row["best_day"],
        "best_net_pnl": row["best_net_pnl"],
        "worst_day": row["worst_day"],
        "worst_net_pnl": row["worst_net_pnl"],
    }


def _event_group(row: sqlite3.Row) -> Row:
    return {"count": row["count"], "first_ts": row["first_ts"], "last_ts": row["last_ts"]}


FILL_PERIODS = {k: v for k, v in _periods("executed_at").items() if k != "year"}
ORDER_PERIODS = {k: v for k, v in _periods("created_at").items() if k != "year"}

GROUPINGS: dict[str, Grouping] = {
    "fills": Grouping(
        "fills",
        "executed_at",
        {
            **{name: name for name in ("symbol", "side", "venue", "liquidity", "order_id")},
            **FILL_PERIODS,
        },
        f"COUNT(*) AS count, SUM(quantity) AS quantity, "
        f"{_cents('quantity * price')} AS notional_cents, {_cents('fee')} AS fee_cents",
        _fill_group,
    ),
    "orders": Grouping(
        "orders",
        "created_at",
        {
            **{name: name for name in ("symbol", "side", "status", "type", "strategy")},
            **ORDER_PERIODS,
        },
        "COUNT(*) AS count, SUM(quantity) AS quantity, SUM(filled_quantity) AS filled_quantity",
        _order_group,
    ),
    "daily_pnl": Grouping(
        "daily_pnl",
        "date",
        {k: v for k, v in _periods("date").items() if k != "day"},
        f"COUNT(*) AS count, {_cents('realized_pnl')} AS realized_cents, "
        f"{_cents('unrealized_pnl')} AS unrealized_cents, {_cents('fees')} AS fee_cents, "
        f"{_cents('net_pnl')} AS net_cents, SUM(trades) AS trades, "
        "MAX(CASE WHEN best = 1 THEN date END) AS best_day, "
        "MAX(CASE WHEN best = 1 THEN net_pnl END) AS best_net_pnl, "
        "MAX(CASE WHEN worst = 1 THEN date END) AS worst_day, "
        "MAX(CASE WHEN worst = 1 THEN net_pnl END) AS worst_net_pnl",
        _pnl_group,
    ),
    "events": Grouping(
        "events",
        "ts",
        {
            **{name: name for name in ("level", "kind", "source", "symbol")},
            "day": _periods("ts")["day"],
        },
        "COUNT(*) AS count, MIN(ts) AS first_ts, MAX(ts) AS last_ts",
        _event_group,
    ),
}


def time_conditions(column: str, period: TimeRange) -> list[Condition]:
    return [(f"{column} >= ?", period.since), (f"{column} < ?", period.until)]


def choices(table: str) -> tuple[str, ...]:
    """The `group_by` values of `table`'s list."""
    return GROUPINGS[table].choices


def grouped_query(
    table: str, group_by: str, conditions: Sequence[Condition]
) -> tuple[str, list[str]]:
    """The SQL of one grouped page (two `?` left for LIMIT and OFFSET) and its parameters. Every
    text in it is a constant of this module; values travel as bound parameters."""
    grouping = GROUPINGS[table]
    key = grouping.keys[group_by]
    name = _key_name(group_by)
    where, params = where_clause(conditions)
    order = "DESC" if name == "period" else "ASC"
    source = f"{table} {where}"
    if table == "daily_pnl":
        # The best and the worst day of each period: its first row by net_pnl either way.
        source = (
            f"(SELECT *, ROW_NUMBER() OVER (PARTITION BY {key} ORDER BY net_pnl DESC, date) "  # noqa: S608
            f"AS best, ROW_NUMBER() OVER (PARTITION BY {key} ORDER BY net_pnl ASC, date) "
            f"AS worst FROM {table} {where})"
        )
    query = (
        f"SELECT {key} AS group_key, {grouping.aggregates} FROM {source} "  # noqa: S608
        f"GROUP BY group_key ORDER BY group_key {order} LIMIT ? OFFSET ?"
    )
    return query, params


def grouped_page(
    db: ServiceDatabase,
    table: str,
    group_by: str,
    conditions: Sequence[Condition],
    page: PageRequest,
) -> PageOfRows:
    grouping = GROUPINGS[table]
    name = _key_name(group_by)
    query, params = grouped_query(table, group_by, conditions)

    def shape(row: sqlite3.Row) -> Row:
        return {name: row["group_key"], **grouping.shape(row)}

    return db.query_page(query, tuple(params), page, shape)


def grouped_schema(item: Schema, group_by: tuple[str, ...], sums: dict[str, Schema]) -> Schema:
    """A raw record, or with `group_by` one row per group: its key (named as the field, or
    `period`) and the group's count and sums (server_stub/service/groups.py)."""
    keys = {"period" if value in PERIODS else value: nullable(STRING) for value in group_by}
    return {"anyOf": [item, record({"count": INTEGER, **sums}, keys)]}


def group_by_parameter(table: str) -> Schema:
    allowed = choices(table)
    return query("group_by", enum(*allowed), "one row per group: " + ", ".join(allowed))
