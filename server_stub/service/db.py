"""Read-only queries the HTTP routes serve, on a `mode=ro` connection.

One connection is kept open, because a new one re-reads the schema on its first statement (the
largest cost of a request). Before each use the file is stat-ed: when it was replaced (another
inode) or removed, the connection is dropped, so the server never serves a stale handle.

Shaped results are cached per query until the data changes: `PRAGMA data_version` changes whenever
any other connection, in any process (the local admin, the daemon), commits to the file. Asking it
costs nine system calls, so it is asked only when SQLite's own change marks moved since the last
time it was asked: the database file's header (its change counter moves with every commit in
rollback mode) and, in WAL mode, the WAL-index header at the start of `<db>-shm` (rewritten by every
commit at the moment it becomes visible: its change counter, frame count and checksums). Both are
read with one `pread` each on handles kept open (`server_stub.service.change_marks`), before the
question, so a commit published after the read is seen by the next request. File times are no
signal: a WAL writer stamps `<db>-wal` when it writes its frames, which may be long (an fsync, a
stall) before it publishes them.

All use happens on the event loop thread (the routes are async), so a locked database is waited
for only briefly (`READ_BUSY_SECONDS`): a commit holds its lock for milliseconds, and a longer
wait would stall every other request, `/health/live` included.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable, Hashable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import quote

from server_stub.http import PageRequest, encode_cursor
from server_stub.service import shapes
from server_stub.service.change_marks import ChangeMarks
from server_stub.service.private_dir import within_own_files
from server_stub.service.shapes import Row
from server_stub.service.storage import STORAGE_FAULTS, StorageFault, classify, has_write_access
from server_stub.telemetry import child

_T = TypeVar("_T")
# Bounds the cache to a few MiB: at most this many results, each at most this many rows.
MAX_CACHED_RESULTS = 64
MAX_CACHED_PAGE_ROWS = 100
READ_BUSY_SECONDS = 0.25
_SQLITE = {"db.system.name": "sqlite"}
Condition = tuple[str, str | tuple[str, ...] | None]
"""A WHERE fragment and its value; skipped when None, `{}` expands to one `?` per tuple item."""


# One statement, so one read transaction, for the whole system summary.
SYSTEM_QUERY = """
SELECT s.*, p.open_positions, p.gross_exposure, p.net_exposure, p.unrealized_pnl,
       (SELECT COUNT(*) FROM orders WHERE status IN ('new', 'partially_filled')) AS open_orders
FROM system_state AS s,
     (SELECT COUNT(*) AS open_positions,
             COALESCE(SUM(ABS(quantity * mark_price)), 0) AS gross_exposure,
             COALESCE(SUM(quantity * mark_price), 0) AS net_exposure,
             COALESCE(SUM(quantity * (mark_price - avg_price)), 0) AS unrealized_pnl
      FROM positions) AS p
WHERE s.id = 1
"""


class DatabaseUnavailable(Exception):
    """The database cannot be opened or read (missing, not SQLite, wrong schema, locked)."""

    def __init__(self, reason: str, fault: StorageFault = StorageFault.UNREADABLE) -> None:
        super().__init__(reason)
        self.fault = fault


@dataclass(frozen=True)
class PageOfRows:
    rows: list[Row]
    next_cursor: str | None


@dataclass(frozen=True)
class TimeRange:
    since: str | None = None
    """Inclusive lower bound, same text format as the column."""
    until: str | None = None
    """Exclusive upper bound."""


def _unavailable(error: sqlite3.Error, action: str) -> DatabaseUnavailable:
    """`error`, classified (a corrupt file is permanent however it shows) and recorded."""
    fault = classify(error)
    STORAGE_FAULTS.record(fault, action)
    return DatabaseUnavailable(type(error).__name__, fault)


def read_only_uri(path: Path) -> str:
    return f"file:{quote(str(path.resolve()))}?mode=ro"


class ServiceDatabase:
    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._connection: sqlite3.Connection | None = None
        self._identity: tuple[int, int] | None = None
        self._cache: dict[Hashable, Any] = {}
        self._cached_version: int | None = None
        self._marks = ChangeMarks()
        self._marks_when_asked: bytes | None = None
        """SQLite's change marks read just before the last `PRAGMA data_version`."""
        self._opened_without_write_access = False

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
        self._connection, self._identity = None, None
        self._opened_without_write_access = False
        self._cache.clear()
        # data_version counts per connection: a new one's numbers compare with nothing kept.
        self._cached_version, self._marks_when_asked = None, None
        self._marks = ChangeMarks()

    def _cached(self, key: Hashable | None, compute: Callable[[sqlite3.Connection], _T]) -> _T:
        """`compute(connection)`, or its earlier result when nothing was committed since.
        A None key is never cached."""
        # `reading()` written out: its generator cost more than a cached answer's whole lookup.
        with child("sqlite.query", **_SQLITE):
            connection = self._current_connection()
            try:
                if key is None:
                    return compute(connection)
                marks = self._marks.read()
                if marks is None or marks != self._marks_when_asked:
                    version = connection.execute("PRAGMA data_version").fetchone()[0]
                    if version != self._cached_version:
                        self._cache.clear()
                        self._cached_version = version
                    self._marks_when_asked = marks
                if len(self._cache) >= MAX_CACHED_RESULTS:
                    self._cache.clear()
                if key in self._cache:
                    result: _T = self._cache[key]
                    return result
                result = compute(connection)
            except sqlite3.Error as exc:
                raise self._read_failed(exc) from None
            self._cache[key] = result
            return result

    def let_go_once_writable(self) -> None:
        """Closes a connection opened while write access was lost, once it is back. A process's
        connections to one database share one index in `<db>-shm`, opened read-only when the
        first of them could not write it; this connection would keep it so, and the intake's
        writes would fail for as long as it lives."""
        if self._opened_without_write_access and self.path and has_write_access(self.path):
            self.close()

    def _current_connection(self) -> sqlite3.Connection:
        if self.path is None:
            raise DatabaseUnavailable("no database configured")
        self.let_go_once_writable()
        try:
            status = os.stat(self.path)
        except OSError:
            self.close()
            raise DatabaseUnavailable("database file missing") from None
        identity = (status.st_dev, status.st_ino)
        if self._connection is None or identity != self._identity:
            self.close()
            try:
                connection = sqlite3.connect(
                    read_only_uri(self.path),
                    uri=True,
                    timeout=READ_BUSY_SECONDS,
                    check_same_thread=False,
                )
            except sqlite3.Error as exc:
                raise _unavailable(exc, "opening") from None
            try:
                within_own_files(connection)  # reads the schema: a corrupt one fails here
            except sqlite3.Error as exc:
                connection.close()
                raise _unavailable(exc, "opening") from None
            connection.row_factory = sqlite3.Row
            self._connection, self._identity = connection, identity
            self._marks = ChangeMarks(self.path.resolve())
            self._opened_without_write_access = not has_write_access(self.path)
        return self._connection

    @contextmanager
    def reading(self) -> Iterator[sqlite3.Connection]:
        connection = self._current_connection()
        try:
            yield connection
        except sqlite3.Error as exc:
            raise self._read_failed(exc) from None

    def _read_failed(self, error: sqlite3.Error) -> DatabaseUnavailable:
        # A broken file stays broken for this handle; the next request opens afresh.
        self.close()
        return _unavailable(error, "reading")

    def is_ready(self) -> bool:
        try:
            with self.reading() as connection:
                return (
                    connection.execute("SELECT 1 FROM system_state WHERE id = 1").fetchone()
                    is not None
                )
        except DatabaseUnavailable:
            return False

    def system(self) -> Row:
        return self._cached("system", _system)

    def positions(self, page: PageRequest, *, symbol: str | None = None) -> PageOfRows:
        return self._page("positions", "symbol", [("symbol = ?", symbol)], page, shapes.position)

    def orders(
        self,
        page: PageRequest,
        *,
        symbol: str | None = None,
        statuses: Sequence[str] = (),
        side: str | None = None,
        period: TimeRange = TimeRange(),
    ) -> PageOfRows:
        conditions: list[Condition] = [
            ("symbol = ?", symbol),
            ("status IN ({})", tuple(statuses) or None),
            ("side = ?", side),
            ("created_at >= ?", period.since),
            ("created_at < ?", period.until),
        ]
        return self._page("orders", "created_at DESC, id DESC", conditions, page, shapes.order)

    def fills(
        self,
        page: PageRequest,
        *,
        symbol: str | None = None,
        order_id: str | None = None,
        side: str | None = None,
        period: TimeRange = TimeRange(),
    ) -> PageOfRows:
        conditions: list[Condition] = [
            ("symbol = ?", symbol),
            ("order_id = ?", order_id),
            ("side = ?", side),
            ("executed_at >= ?", period.since),
            ("executed_at < ?", period.until),
        ]
        return self._page("fills", "executed_at DESC, id DESC", conditions, page, shapes.fill)

    def daily_pnl(self, page: PageRequest, *, period: TimeRange = TimeRange()) -> PageOfRows:
        conditions: list[Condition] = [("date >= ?", period.since), ("date < ?", period.until)]
        return self._page("daily_pnl", "date DESC", conditions, page, shapes.pnl)

    def risk_limits(self, page: PageRequest, *, symbol: str | None = None) -> PageOfRows:
        order_by = "scope, COALESCE(symbol, ''), name"
        return self._page(
            "risk_limits", order_by, [("symbol = ?", symbol)], page, shapes.risk_limit
        )

    def events(
        self,
        page: PageRequest,
        *,
        level: str | None = None,
        kind: str | None = None,
        symbol: str | None = None,
        period: TimeRange = TimeRange(),
    ) -> PageOfRows:
        conditions: list[Condition] = [
            ("level = ?", level),
            ("kind = ?", kind),
            ("symbol = ?", symbol),
            ("ts >= ?", period.since),
            ("ts < ?", period.until),
        ]
        return self._page("events", "ts DESC, id DESC", conditions, page, shapes.event)

    def intel(
        self,
        page: PageRequest,
        *,
        kind: str | None = None,
        source: str | None = None,
        period: TimeRange = TimeRange(),
    ) -> PageOfRows:
        conditions: list[Condition] = [
            ("kind = ?", kind),
            ("source = ?", source),
            ("received_at >= ?", period.since),
            ("received_at < ?", period.until),
        ]
        return self._page(
            "intel_inbox", "received_at DESC, id DESC", conditions, page, shapes.intel
        )

    def query_page(
        self,
        query: str,
        params: tuple[str, ...],
        page: PageRequest,
        shape: Callable[[sqlite3.Row], Row],
    ) -> PageOfRows:
        """One page of a query built elsewhere (server_stub.service.groups), ending in
        `LIMIT ? OFFSET ?`, cached as a raw page is."""
        arguments = (*params, page.limit + 1, page.offset)

        def compute(connection: sqlite3.Connection) -> PageOfRows:
            rows = connection.execute(query, arguments).fetchall()
            more = len(rows) > page.limit
            shaped = [shape(row) for row in rows[: page.limit]]
            return PageOfRows(shaped, encode_cursor(page.offset + page.limit) if more else None)

        cacheable = page.limit <= MAX_CACHED_PAGE_ROWS
        return self._cached((query, arguments) if cacheable else None, compute)

    def _page(
        self,
        table: str,
        order_by: str,
        conditions: Sequence[Condition],
        page: PageRequest,
        shape: Callable[[sqlite3.Row], Row],
    ) -> PageOfRows:
        """One page of `table`; `table`, `order_by` and the condition texts are constants of this
        module, and every value travels as a bound parameter."""
        where, params = where_clause(conditions)
        query = f"SELECT * FROM {table} {where} ORDER BY {order_by} LIMIT ? OFFSET ?"  # noqa: S608
        return self.query_page(query, tuple(params), page, shape)


def _system(connection: sqlite3.Connection) -> Row:
    state = connection.execute(SYSTEM_QUERY).fetchone()
    if state is None:
        raise DatabaseUnavailable("system state missing")
    return {
        "mode": state["mode"],
        "trading_enabled": bool(state["trading_enabled"]),
        "mode_reason": state["mode_reason"],
        "account": state["account"],
        "base_currency": state["base_currency"],
        "equity": round(state["cash"] + state["net_exposure"], 2),
        "cash": round(state["cash"], 2),
        "gross_exposure": round(state["gross_exposure"], 2),
        "net_exposure": round(state["net_exposure"], 2),
        "unrealized_pnl": round(state["unrealized_pnl"], 2),
        "open_positions": state["open_positions"],
        "open_orders": state["open_orders"],
        "daemon_version": state["daemon_version"],
        "started_at": state["started_at"],
        "last_heartbeat_at": state["last_heartbeat_at"],
        "updated_at": state["updated_at"],
    }


def where_clause(conditions: Sequence[Condition]) -> tuple[str, list[str]]:
    """The WHERE of the conditions that have a value (none: no WHERE), and their parameters; a
    tuple value fills the condition's `{}` with one placeholder per item."""
    clauses: list[str] = []
    params: list[str] = []
    for sql, value in conditions:
        if value is None:
            continue
        if isinstance(value, tuple):
            clauses.append(sql.format(", ".join("?" for _ in value)))
            params.extend(value)
        else:
            clauses.append(sql)
            params.append(value)
    return (f"WHERE {' AND '.join(clauses)}" if clauses else ""), params
