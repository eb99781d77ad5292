"""A realistic, deterministic demo database: a seeded RNG and a fixed "now", so every run writes
the same rows. Five US symbols, four open positions, 30 trading days of orders and fills,
90 trading days of P&L, account and per-symbol risk limits, and the daemon's event log."""

from __future__ import annotations

import math
import os
import random
import sqlite3
import tempfile
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from pathlib import Path

from server_stub.service.demo_account import Event, daemon_events, write_risk_limits
from server_stub.service.demo_setting import (
    DAEMON_VERSION,
    DEMO_NOW,
    DEMO_SEED,
    FEE_PER_SHARE,
    MIN_FEE,
    OPEN_POSITIONS,
    ORDER_DAYS,
    PNL_DAYS,
    REJECT_REASONS,
    SESSION_OPEN,
    SESSION_SECONDS,
    STARTING_EQUITY,
    STRATEGIES,
    SYMBOLS,
    VENUES,
    DemoSymbol,
)
from server_stub.service.schema import create_schema, format_timestamp


@dataclass(frozen=True)
class DemoSummary:
    symbols: int
    positions: int
    orders: int
    fills: int
    pnl_days: int
    risk_limits: int
    events: int


class DemoDataExists(Exception):
    pass


def _part(quantity: float, fraction: float) -> float:
    """A partial fill in whole shares."""
    return float(max(1, int(quantity * fraction)))


def trading_days(end: date, count: int) -> list[date]:
    days: list[date] = []
    day = end
    while len(days) < count:
        if day.weekday() < 5:
            days.append(day)
        day -= timedelta(days=1)
    return days[::-1]


def write_demo_database(path: Path, *, force: bool = False) -> DemoSummary:
    """Writes the demo data set to `path`, replacing it atomically; refuses an existing file
    unless `force`."""
    if path.exists() and not force:
        raise DemoDataExists(f"{path} exists; pass --force to replace it")
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    os.close(handle)
    try:
        connection = sqlite3.connect(temporary)
        try:
            create_schema(connection)
            summary = _DemoBuilder(connection).build()
            connection.commit()
        finally:
            connection.close()
        # Owner only: the database holds the intel signatures. SQLite gives its -journal, -wal
        # and -shm files the database file's mode.
        os.chmod(temporary, 0o600)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return summary


class _DemoBuilder:
    def __init__(self, connection: sqlite3.Connection) -> None:
        self.db = connection
        self.rng = random.Random(DEMO_SEED)
        self.days = trading_days(DEMO_NOW.date(), PNL_DAYS)
        self.closes = {s.symbol: self._closes(s) for s in SYMBOLS}
        self.events: list[Event] = []
        self.fills_per_day: dict[date, int] = {}
        self.largest_order_today = 0.0
        self.today_net = 0.0
        self.counts = {"orders": 0, "fills": 0}

    def build(self) -> DemoSummary:
        self._symbols()
        open_orders = self._orders_and_fills()
        positions = self._positions()
        equity = self._daily_pnl()
        net_exposure = sum(q * self.closes[s][-1] for s, q in positions.items())
        gross_exposure = sum(abs(q) * self.closes[s][-1] for s, q in positions.items())
        self._system_state(cash=round(equity - net_exposure, 2))
        risk_limits = write_risk_limits(
            self.db,
            self.events,
            positions,
            (gross_exposure, net_exposure),
            (self.today_net, self.largest_order_today, open_orders),
        )
        daemon_events(self.events, self.rng, self.days)
        self.events.sort(key=lambda event: event[0])
        self.db.executemany(
            "INSERT INTO events (ts, level, kind, source, symbol, message)"
            " VALUES (?, ?, ?, 'daemon', ?, ?)",
            self.events,
        )
        return DemoSummary(
            symbols=len(SYMBOLS),
            positions=len(positions),
            orders=self.counts["orders"],
            fills=self.counts["fills"],
            pnl_days=len(self.days),
            risk_limits=risk_limits,
            events=len(self.events),
        )

    def _closes(self, symbol: DemoSymbol) -> list[float]:
        daily = symbol.annual_volatility / math.sqrt(252)
        path = [0.0]
        for _ in self.days[1:]:
            path.append(path[-1] + self.rng.gauss(0.0003, daily))
        return [round(symbol.last_price * math.exp(p - path[-1]), 2) for p in path]

    def _price_at(self, symbol: str, day_index: int, fraction: float) -> float:
        closes = self.closes[symbol]
        previous = closes[max(day_index - 1, 0)]
        price = previous + (closes[day_index] - previous) * fraction
        return round(price * (1 + self.rng.gauss(0, 0.0015)), 2)

    def _symbols(self) -> None:
        now = format_timestamp(DEMO_NOW)
        self.db.executemany(
            "INSERT INTO symbols VALUES (?, ?, ?, ?, 'USD', 0.01, 1, ?, ?)",
            [
                (s.symbol, s.name, s.asset_class, s.exchange, self.closes[s.symbol][-1], now)
                for s in SYMBOLS
            ],
        )

    def _orders_and_fills(self) -> int:
        rng = self.rng
        first_order_day = len(self.days) - ORDER_DAYS
        open_orders = 0
        for day_index in range(first_order_day, len(self.days)):
            day = self.days[day_index]
            session_start = datetime.combine(day, SESSION_OPEN, tzinfo=UTC)
            is_last_day = day_index == len(self.days) - 1
            offsets = sorted(
                rng.randrange(30, SESSION_SECONDS - 600) for _ in range(rng.randint(14, 26))
            )
            for offset in offsets:
                created = session_start + timedelta(seconds=offset)
                symbol = rng.choices(SYMBOLS, weights=[s.weight for s in SYMBOLS])[0].symbol
                still_open = is_last_day and offset > SESSION_SECONDS - 7200
                if self._order(symbol, day_index, created, offset / SESSION_SECONDS, still_open):
                    open_orders += 1
        return open_orders

    def _order(
        self, symbol: str, day_index: int, created: datetime, fraction: float, still_open: bool
    ) -> bool:
        rng = self.rng
        self.counts["orders"] += 1
        number = self.counts["orders"]
        order_id = f"ord-{number:06d}"
        side = rng.choice(("buy", "sell"))
        kind = rng.choices(("market", "limit", "stop"), weights=(45, 45, 10))[0]
        quantity = float(rng.choice((10, 25, 50, 75, 100, 150, 200, 250, 300, 500)))
        price = self._price_at(symbol, day_index, fraction)
        sign = 1 if side == "buy" else -1
        limit_price = (
            round(price * (1 - sign * rng.uniform(0, 0.004)), 2) if kind == "limit" else None
        )
        stop_price = (
            round(price * (1 + sign * rng.uniform(0.004, 0.012)), 2) if kind == "stop" else None
        )
        tif = {
            "market": rng.choice(("ioc", "day")),
            "limit": rng.choice(("day", "gtc")),
            "stop": "day",
        }[kind]

        reject_reason = None
        if rng.random() < 0.04:
            status, filled = "rejected", 0.0
            reject_reason = rng.choice(REJECT_REASONS)
        elif kind != "market" and still_open:
            status = rng.choice(("new", "new", "partially_filled"))
            filled = 0.0 if status == "new" else _part(quantity, rng.choice((0.2, 0.4, 0.5)))
        elif (kind == "limit" and rng.random() < 0.25) or (kind == "stop" and rng.random() < 0.6):
            status = "cancelled"
            filled = (
                _part(quantity, rng.choice((0.2, 0.5)))
                if kind == "limit" and rng.random() < 0.2
                else 0.0
            )
        else:
            status, filled = "filled", quantity

        fill_price = limit_price or stop_price or price
        fills = self._fills(order_id, symbol, side, kind, created, filled, fill_price)
        last_fill = fills[-1][0] if fills else created
        updated = last_fill if status in ("filled", "partially_filled") else created
        if status == "cancelled":
            updated = min(last_fill + timedelta(minutes=rng.randint(2, 90)), DEMO_NOW)
        average = (
            round(sum(q * p for _, q, p in fills) / sum(q for _, q, _ in fills), 4)
            if fills
            else None
        )
        self.db.execute(
            "INSERT INTO orders VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                order_id,
                f"c-{DEMO_SEED}-{number:06d}",
                symbol,
                side,
                kind,
                tif,
                quantity,
                limit_price,
                stop_price,
                status,
                filled,
                average,
                reject_reason,
                rng.choice(STRATEGIES),
                format_timestamp(created),
                format_timestamp(updated),
            ),
        )
        if created.date() == DEMO_NOW.date():
            self.largest_order_today = max(self.largest_order_today, quantity * price)
        if reject_reason is not None:
            self.events.append(
                (
                    format_timestamp(created),
                    "warning",
                    "order_rejected",
                    symbol,
                    f"{order_id} {side} {quantity:g} {symbol} rejected: {reject_reason}",
                )
            )
        return status in ("new", "partially_filled")

    def _fills(
        self,
        order_id: str,
        symbol: str,
        side: str,
        kind: str,
        created: datetime,
        filled: float,
        price: float,
    ) -> list[tuple[datetime, float, float]]:
        rng = self.rng
        if filled <= 0:
            return []
        parts = rng.randint(1, 3) if filled >= 50 else 1
        cuts = sorted(rng.sample(range(1, int(filled)), parts - 1)) if parts > 1 else []
        sizes = [b - a for a, b in zip([0, *cuts], [*cuts, int(filled)], strict=True)]
        made: list[tuple[datetime, float, float]] = []
        moment = created
        for size in sizes:
            delay = rng.uniform(0.05, 2.0) if kind == "market" else rng.uniform(5, 1200)
            moment = min(moment + timedelta(seconds=delay), DEMO_NOW)
            slip = rng.gauss(0, 0.0004) if kind == "market" else 0.0
            fill_price = round(price * (1 + slip), 2)
            fee = round(max(MIN_FEE, size * FEE_PER_SHARE), 2)
            self.counts["fills"] += 1
            self.db.execute(
                "INSERT INTO fills VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    f"fil-{self.counts['fills']:06d}",
                    order_id,
                    symbol,
                    side,
                    float(size),
                    fill_price,
                    fee,
                    "taker" if kind == "market" or rng.random() < 0.2 else "maker",
                    rng.choice(VENUES),
                    format_timestamp(moment),
                ),
            )
            made.append((moment, float(size), fill_price))
            self.fills_per_day[moment.date()] = self.fills_per_day.get(moment.date(), 0) + 1
        return made

    def _positions(self) -> dict[str, float]:
        now = format_timestamp(DEMO_NOW)
        positions: dict[str, float] = {}
        for symbol, (quantity, days_ago, avg_factor) in OPEN_POSITIONS.items():
            closes = self.closes[symbol]
            opened_day = self.days[-1 - days_ago]
            opened = datetime.combine(opened_day, time(14, 5), tzinfo=UTC)
            self.db.execute(
                "INSERT INTO positions VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    symbol,
                    float(quantity),
                    round(closes[-1 - days_ago] * avg_factor, 4),
                    closes[-1],
                    round(self.rng.uniform(-1500, 4000), 2),
                    format_timestamp(opened),
                    now,
                ),
            )
            positions[symbol] = float(quantity)
        return positions

    def _daily_pnl(self) -> float:
        equity = STARTING_EQUITY
        rows = []
        for day in self.days:
            trades = self.fills_per_day.get(day) or self.rng.randint(18, 45)
            fees = round(trades * self.rng.uniform(0.4, 0.9), 2)
            realized = round(self.rng.gauss(350, 2400), 2)
            unrealized = round(self.rng.gauss(0, 1600), 2)
            net = round(realized + unrealized - fees, 2)
            equity = round(equity + net, 2)
            rows.append((day.isoformat(), realized, unrealized, fees, net, equity, trades))
        self.today_net = rows[-1][4]
        self.db.executemany("INSERT INTO daily_pnl VALUES (?, ?, ?, ?, ?, ?, ?)", rows)
        return equity

    def _system_state(self, *, cash: float) -> None:
        started = datetime.combine(self.days[-5], time(12, 55), tzinfo=UTC)
        now = format_timestamp(DEMO_NOW)
        self.db.execute(
            "INSERT INTO system_state"
            " VALUES (1, 'running', 1, NULL, 'DEMO-001', 'USD', ?, ?, ?, ?, ?)",
            (cash, DAEMON_VERSION, format_timestamp(started), now, now),
        )
        self.events.append(
            (
                format_timestamp(started),
                "info",
                "system_started",
                None,
                f"daemon {DAEMON_VERSION} started for account DEMO-001 (mode running)",
            )
        )
