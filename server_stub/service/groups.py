"""Grouped answers of the data service's lists (`group_by`): one row per group, computed in one SQL
statement over the same records and filters as the raw list.

What a grouped answer is (the values, the keys, the periods, the cents and each row's shape) is
written once in svc_serving.grouping, which svc-mcp also uses when a data service does not group;
here are its SQL totals, named as that module's row functions read them. Field groups come in key
order, periods newest first; they page like any other list.
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
from svc_serving.grouping import (
    LISTS,
    Totals,
    event_row,
    fill_row,
    key_name,
    order_row,
    pnl_row,
)


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
    shape: Callable[[Totals], Row]

    @property
    def choices(self) -> tuple[str, ...]:
        return tuple(self.keys)


def _keys(path: str) -> dict[str, str]:
    """The SQL of each `group_by` value of the list at `path` (svc_serving.grouping.LISTS)."""
    grouped = LISTS[path]
    periods = _periods(grouped.time_field)
    return {
        **{name: name for name in grouped.fields},
        **{name: periods[name] for name in grouped.periods},
    }


GROUPINGS: dict[str, Grouping] = {
    "fills": Grouping(
        "fills",
        "executed_at",
        _keys("/api/v1/fills"),
        f"COUNT(*) AS count, SUM(quantity) AS quantity, "
        f"{_cents('quantity * price')} AS notional_cents, {_cents('fee')} AS fee_cents",
        fill_row,
    ),
    "orders": Grouping(
        "orders",
        "created_at",
        _keys("/api/v1/orders"),
        "COUNT(*) AS count, SUM(quantity) AS quantity, SUM(filled_quantity) AS filled_quantity",
        order_row,
    ),
    "daily_pnl": Grouping(
        "daily_pnl",
        "date",
        _keys("/api/v1/pnl"),
        f"COUNT(*) AS count, {_cents('realized_pnl')} AS realized_cents, "
        f"{_cents('unrealized_pnl')} AS unrealized_cents, {_cents('fees')} AS fee_cents, "
        f"{_cents('net_pnl')} AS net_cents, SUM(trades) AS trades, "
        "MAX(CASE WHEN best = 1 THEN date END) AS best_day, "
        "MAX(CASE WHEN best = 1 THEN net_pnl END) AS best_net_pnl, "
        "MAX(CASE WHEN worst = 1 THEN date END) AS worst_day, "
        "MAX(CASE WHEN worst = 1 THEN net_pnl END) AS worst_net_pnl",
        pnl_row,
    ),
    "events": Grouping(
        "events",
        "ts",
        _keys("/api/v1/events"),
        "COUNT(*) AS count, MIN(ts) AS first_ts, MAX(ts) AS last_ts",
        event_row,
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
    name = key_name(group_by)
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
    name = key_name(group_by)
    query, params = grouped_query(table, group_by, conditions)

    def shape(row: sqlite3.Row) -> Row:
        return {name: row["group_key"], **grouping.shape(row)}

    return db.query_page(query, tuple(params), page, shape)


def grouped_schema(item: Schema, group_by: tuple[str, ...], sums: dict[str, Schema]) -> Schema:
    """A raw record, or with `group_by` one row per group: its key (named as the field, or
    `period`) and the group's count and sums (server_stub/service/groups.py)."""
    keys = {key_name(value): nullable(STRING) for value in group_by}
    return {"anyOf": [item, record({"count": INTEGER, **sums}, keys)]}


def group_by_parameter(table: str) -> Schema:
    allowed = choices(table)
    return query("group_by", enum(*allowed), "one row per group: " + ", ".join(allowed))
