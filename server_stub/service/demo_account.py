"""The demo account's risk limits and the daemon's event log (server_stub.service.demo_data
writes the rest)."""

from __future__ import annotations

import random
import sqlite3
from datetime import UTC, date, datetime, time, timedelta

from server_stub.service.demo_setting import (
    DEMO_NOW,
    SESSION_OPEN,
    SESSION_SECONDS,
    SYMBOLS,
)
from server_stub.service.schema import format_timestamp

Event = tuple[str, str, str, str | None, str]
"""ts, level, kind, symbol, message."""


def write_risk_limits(
    db: sqlite3.Connection,
    events: list[Event],
    positions: dict[str, float],
    exposure: tuple[float, float],
    today: tuple[float, float, int],
) -> int:
    """The account's and each symbol's limits beside their use (`exposure`: gross and net;
    `today`: the day's net P&L, its largest order and the open orders); a symbol near its limit
    adds a warning to `events`. Returns the number of limits."""
    gross_exposure, net_exposure = exposure
    today_net, largest_order_today, open_orders = today
    now = format_timestamp(DEMO_NOW)
    rows: list[tuple[str, str, str | None, float, float, str, str]] = [
        ("max_daily_loss", "account", None, 25_000.0, max(0.0, -today_net), "USD", now),
        (
            "max_gross_exposure",
            "account",
            None,
            400_000.0,
            round(gross_exposure, 2),
            "USD",
            now,
        ),
        (
            "max_net_exposure",
            "account",
            None,
            250_000.0,
            round(abs(net_exposure), 2),
            "USD",
            now,
        ),
        (
            "max_order_notional",
            "account",
            None,
            150_000.0,
            round(largest_order_today, 2),
            "USD",
            now,
        ),
        ("max_open_orders", "account", None, 40.0, float(open_orders), "orders", now),
    ]
    for symbol in SYMBOLS:
        current = abs(positions.get(symbol.symbol, 0.0))
        rows.append(
            (
                "max_position",
                "symbol",
                symbol.symbol,
                float(symbol.max_position),
                current,
                "shares",
                now,
            )
        )
        if current / symbol.max_position >= 0.8:
            events.append(
                (
                    format_timestamp(DEMO_NOW - timedelta(minutes=42)),
                    "warning",
                    "risk_limit_warning",
                    symbol.symbol,
                    f"{symbol.symbol} position {current:g} is at"
                    f" {current / symbol.max_position:.0%} of max_position"
                    f" {symbol.max_position}",
                )
            )
    db.executemany("INSERT INTO risk_limits VALUES (?, ?, ?, ?, ?, ?, ?)", rows)
    return len(rows)


def daemon_events(events: list[Event], rng: random.Random, days: list[date]) -> None:
    """The daemon's log over `days`: sessions opening and closing, a few market data gaps and
    broker reconnects, one late heartbeat."""
    for day in days:
        opening = datetime.combine(day, SESSION_OPEN, tzinfo=UTC)
        closing = opening + timedelta(seconds=SESSION_SECONDS)
        events.append(
            (format_timestamp(opening), "info", "session_open", None, "regular session opened")
        )
        if closing <= DEMO_NOW:
            events.append(
                (
                    format_timestamp(closing),
                    "info",
                    "session_close",
                    None,
                    "regular session closed",
                )
            )
        if rng.random() < 0.08:
            at = opening + timedelta(seconds=rng.randrange(SESSION_SECONDS))
            symbol = rng.choice(SYMBOLS).symbol
            gap = rng.randint(3, 40)
            events.append(
                (
                    format_timestamp(at),
                    "warning",
                    "market_data_gap",
                    symbol,
                    f"no quotes for {symbol} for {gap} s; quoting paused until recovery",
                )
            )
        if rng.random() < 0.05:
            at = opening + timedelta(seconds=rng.randrange(SESSION_SECONDS))
            events.append(
                (
                    format_timestamp(at),
                    "warning",
                    "broker_reconnect",
                    None,
                    f"broker session dropped; reconnected after {rng.randint(1, 9)} s",
                )
            )
    late = datetime.combine(days[-3], time(16, 12, 7), tzinfo=UTC)
    events.append(
        (
            format_timestamp(late),
            "error",
            "heartbeat_late",
            None,
            "heartbeat to the broker gateway missed for 12 s; orders held until restored",
        )
    )
