"""Local control mode: pause, resume and flatten, by writing the database directly.

These functions are reachable only from the `svc-stub admin service ...` command on the machine that
holds the database file. No HTTP route imports this module.
"""

from __future__ import annotations

import secrets
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import quote

from server_stub.service.private_dir import within_own_files
from server_stub.service.schema import format_timestamp

FEE_PER_SHARE = 0.0035
MIN_FEE = 0.35

Now = Callable[[], datetime]


class AdminError(Exception):
    """The command could not be carried out; the message says why."""


@dataclass(frozen=True)
class AdminResult:
    changed: bool
    message: str


def _utc_now() -> datetime:
    return datetime.now(UTC)


@contextmanager
def _writing(path: Path) -> Iterator[sqlite3.Connection]:
    if not path.is_file():
        raise AdminError(f"no database at {path}; create one with `svc-stub demo-data service`")
    try:
        # mode=rw: never create a database by accident.
        connection = sqlite3.connect(
            f"file:{quote(str(path.resolve()))}?mode=rw",
            uri=True,
            timeout=5.0,
            isolation_level=None,
        )
    except sqlite3.Error as exc:
        raise AdminError(f"cannot open {path} for writing: {exc}") from None
    try:
        connection.row_factory = sqlite3.Row
        within_own_files(connection)
        connection.execute("BEGIN IMMEDIATE")
        try:
            yield connection
        except BaseException:
            connection.execute("ROLLBACK")
            raise
        connection.execute("COMMIT")
    except sqlite3.Error as exc:
        raise AdminError(f"cannot update {path}: {exc}") from None
    finally:
        connection.close()


def _mode(connection: sqlite3.Connection) -> str:
    row = connection.execute("SELECT mode FROM system_state WHERE id = 1").fetchone()
    if row is None:
        raise AdminError("the database has no system state row")
    return str(row["mode"])


def _event(
    connection: sqlite3.Connection,
    at: str,
    level: str,
    kind: str,
    message: str,
    symbol: str | None = None,
) -> None:
    connection.execute(
        "INSERT INTO events (ts, level, kind, source, symbol, message)"
        " VALUES (?, ?, ?, 'admin', ?, ?)",
        (at, level, kind, symbol, message),
    )


def _set_mode(connection: sqlite3.Connection, at: str, mode: str, reason: str | None) -> None:
    connection.execute(
        "UPDATE system_state SET mode = ?, trading_enabled = ?, mode_reason = ?, updated_at = ?"
        " WHERE id = 1",
        (mode, 1 if mode == "running" else 0, reason, at),
    )


def pause(path: Path, *, reason: str = "paused by local admin", now: Now = _utc_now) -> AdminResult:
    with _writing(path) as connection:
        if _mode(connection) == "paused":
            return AdminResult(False, "already paused; nothing changed")
        at = format_timestamp(now())
        _set_mode(connection, at, "paused", reason)
        _event(connection, at, "warning", "system_paused", f"trading paused: {reason}")
    return AdminResult(True, "paused: the daemon places no new orders until resumed")


def resume(
    path: Path, *, reason: str = "resumed by local admin", now: Now = _utc_now
) -> AdminResult:
    with _writing(path) as connection:
        if _mode(connection) == "running":
            return AdminResult(False, "already running; nothing changed")
        at = format_timestamp(now())
        _set_mode(connection, at, "running", None)
        _event(connection, at, "info", "system_resumed", f"trading resumed: {reason}")
    return AdminResult(True, "resumed: trading is enabled")


def flatten(
    path: Path, *, reason: str = "flattened by local admin", now: Now = _utc_now
) -> AdminResult:
    """Cancels working orders, closes every position at its mark price, and pauses trading so
    nothing is reopened until an operator resumes."""
    with _writing(path) as connection:
        at = format_timestamp(now())
        cancelled = connection.execute(
            "UPDATE orders SET status = 'cancelled', updated_at = ?"
            " WHERE status IN ('new', 'partially_filled')",
            (at,),
        ).rowcount
        positions = connection.execute("SELECT * FROM positions ORDER BY symbol").fetchall()
        cash_change = 0.0
        for position in positions:
            cash_change += _close_position(connection, position, at)
        connection.execute("DELETE FROM positions")
        connection.execute(
            "UPDATE system_state SET cash = ROUND(cash + ?, 2) WHERE id = 1", (cash_change,)
        )
        connection.execute(
            "UPDATE risk_limits SET current_value = 0, updated_at = ?"
            " WHERE name IN ('max_position', 'max_gross_exposure', 'max_net_exposure',"
            " 'max_open_orders')",
            (at,),
        )
        _set_mode(connection, at, "paused", reason)
        _event(
            connection,
            at,
            "warning",
            "positions_flattened",
            f"flatten: closed {len(positions)} positions, cancelled {cancelled} working orders,"
            f" trading paused: {reason}",
        )
    return AdminResult(
        True,
        f"flattened: closed {len(positions)} positions, cancelled {cancelled} working orders;"
        " trading is paused until `svc-stub admin service resume`",
    )


def _close_position(connection: sqlite3.Connection, position: sqlite3.Row, at: str) -> float:
    quantity = float(position["quantity"])
    price = float(position["mark_price"])
    symbol = str(position["symbol"])
    side = "sell" if quantity > 0 else "buy"
    size = abs(quantity)
    fee = round(max(MIN_FEE, size * FEE_PER_SHARE), 2)
    order_id = f"ord-flat-{secrets.token_hex(4)}"
    connection.execute(
        "INSERT INTO orders VALUES (?, ?, ?, ?, 'market', 'ioc', ?, NULL, NULL, 'filled', ?, ?,"
        " NULL, 'admin_flatten', ?, ?)",
        (order_id, f"c-{order_id}", symbol, side, size, size, price, at, at),
    )
    connection.execute(
        "INSERT INTO fills VALUES (?, ?, ?, ?, ?, ?, ?, 'taker', 'NASDAQ', ?)",
        (f"fil-flat-{secrets.token_hex(4)}", order_id, symbol, side, size, price, fee, at),
    )
    _event(
        connection,
        at,
        "info",
        "position_closed",
        f"{symbol} {quantity:g} closed at {price:g} by flatten",
        symbol,
    )
    # Selling a long adds its value to cash; buying back a short subtracts it.
    return quantity * price - fee
