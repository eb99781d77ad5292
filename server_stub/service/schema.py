"""The SQLite schema of the data service: the daemon's state and the intel inbox.

Timestamps are UTC text `YYYY-MM-DDTHH:MM:SSZ` (fixed width, so text order is time order), dates
`YYYY-MM-DD`. Money is in the account's base currency; quantities are signed where noted.
"""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime

SCHEMA_VERSION = 1
TIMESTAMP_FORMAT = "%Y-%m-%dT%H:%M:%SZ"

SCHEMA = """
CREATE TABLE system_state (
    id                INTEGER PRIMARY KEY CHECK (id = 1),
    mode              TEXT    NOT NULL CHECK (mode IN ('running', 'paused')),
    trading_enabled   INTEGER NOT NULL CHECK (trading_enabled IN (0, 1)),
    mode_reason       TEXT,
    account           TEXT    NOT NULL,
    base_currency     TEXT    NOT NULL,
    cash              REAL    NOT NULL,
    daemon_version    TEXT    NOT NULL,
    started_at        TEXT    NOT NULL,
    last_heartbeat_at TEXT    NOT NULL,
    updated_at        TEXT    NOT NULL
);

CREATE TABLE symbols (
    symbol      TEXT PRIMARY KEY,
    name        TEXT NOT NULL,
    asset_class TEXT NOT NULL,
    exchange    TEXT NOT NULL,
    currency    TEXT NOT NULL,
    tick_size   REAL NOT NULL,
    lot_size    INTEGER NOT NULL,
    last_price  REAL NOT NULL,
    updated_at  TEXT NOT NULL
);

-- quantity is signed: positive long, negative short. Closed positions have no row.
CREATE TABLE positions (
    symbol        TEXT PRIMARY KEY REFERENCES symbols (symbol),
    quantity      REAL NOT NULL CHECK (quantity <> 0),
    avg_price     REAL NOT NULL,
    mark_price    REAL NOT NULL,
    realized_pnl  REAL NOT NULL,
    opened_at     TEXT NOT NULL,
    updated_at    TEXT NOT NULL
);

CREATE TABLE orders (
    id              TEXT PRIMARY KEY,
    client_order_id TEXT NOT NULL UNIQUE,
    symbol          TEXT NOT NULL REFERENCES symbols (symbol),
    side            TEXT NOT NULL CHECK (side IN ('buy', 'sell')),
    type            TEXT NOT NULL CHECK (type IN ('market', 'limit', 'stop')),
    time_in_force   TEXT NOT NULL CHECK (time_in_force IN ('day', 'gtc', 'ioc')),
    quantity        REAL NOT NULL CHECK (quantity > 0),
    limit_price     REAL,
    stop_price      REAL,
    status          TEXT NOT NULL
        CHECK (status IN ('new', 'partially_filled', 'filled', 'cancelled', 'rejected')),
    filled_quantity REAL NOT NULL,
    avg_fill_price  REAL,
    reject_reason   TEXT,
    strategy        TEXT NOT NULL,
    created_at      TEXT NOT NULL,
    updated_at      TEXT NOT NULL
);
CREATE INDEX orders_by_time ON orders (created_at DESC, id DESC);
CREATE INDEX orders_by_status ON orders (status);

CREATE TABLE fills (
    id          TEXT PRIMARY KEY,
    order_id    TEXT NOT NULL REFERENCES orders (id),
    symbol      TEXT NOT NULL REFERENCES symbols (symbol),
    side        TEXT NOT NULL CHECK (side IN ('buy', 'sell')),
    quantity    REAL NOT NULL CHECK (quantity > 0),
    price       REAL NOT NULL,
    fee         REAL NOT NULL,
    liquidity   TEXT NOT NULL CHECK (liquidity IN ('maker', 'taker')),
    venue       TEXT NOT NULL,
    executed_at TEXT NOT NULL
);
CREATE INDEX fills_by_time ON fills (executed_at DESC, id DESC);

CREATE TABLE daily_pnl (
    date           TEXT PRIMARY KEY,
    realized_pnl   REAL NOT NULL,
    unrealized_pnl REAL NOT NULL,
    fees           REAL NOT NULL,
    net_pnl        REAL NOT NULL,
    equity_close   REAL NOT NULL,
    trades         INTEGER NOT NULL
);

-- scope 'account' limits have no symbol; scope 'symbol' limits name one.
CREATE TABLE risk_limits (
    name          TEXT NOT NULL,
    scope         TEXT NOT NULL CHECK (scope IN ('account', 'symbol')),
    symbol        TEXT REFERENCES symbols (symbol),
    limit_value   REAL NOT NULL,
    current_value REAL NOT NULL,
    unit          TEXT NOT NULL,
    updated_at    TEXT NOT NULL
);
CREATE UNIQUE INDEX risk_limits_key ON risk_limits (name, COALESCE(symbol, ''));

CREATE TABLE events (
    id      INTEGER PRIMARY KEY AUTOINCREMENT,
    ts      TEXT NOT NULL,
    level   TEXT NOT NULL CHECK (level IN ('info', 'warning', 'error')),
    kind    TEXT NOT NULL,
    source  TEXT NOT NULL CHECK (source IN ('daemon', 'admin')),
    symbol  TEXT,
    message TEXT NOT NULL
);
CREATE INDEX events_by_time ON events (ts DESC, id DESC);

-- Filled by the intel intake (POST /api/v1/intel); body is the envelope's JSON `body`.
CREATE TABLE intel_inbox (
    id          TEXT PRIMARY KEY,
    schema      TEXT NOT NULL,
    source      TEXT NOT NULL,
    kind        TEXT NOT NULL,
    issued_at   TEXT NOT NULL,
    expires_at  TEXT,
    received_at TEXT NOT NULL,
    body        TEXT NOT NULL,
    sig         TEXT NOT NULL,
    -- Whom the MCP gateway forwarded it for (its X-Svc-Forwarded-By, from the token holder only).
    forwarded_by TEXT
);
CREATE INDEX intel_by_time ON intel_inbox (received_at DESC, id DESC);
"""


def create_schema(connection: sqlite3.Connection) -> None:
    connection.executescript(SCHEMA)
    connection.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")


def format_timestamp(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime(TIMESTAMP_FORMAT)
