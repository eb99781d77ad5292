"""The intel intake: verify a `svc.intel.v1` envelope and store it once, by its `id`.

The serving process reads the database read-only; this is its one writer, with a connection of its
own. Storing is idempotent: the same id with the same signature is a duplicate (nothing stored
again), the same id with another signature is a conflict. Since the signature covers the whole
envelope, "same signature" is "same content".

The route runs `receive` in a worker thread, so waiting on a locked database (at most
`WRITE_BUSY_SECONDS`, then 503) never stalls other requests. Before each write the file is stat-ed:
a database removed or replaced since the connection was opened is never written through the old
handle (that would store into an unlinked file and report success).
"""

from __future__ import annotations

import hmac
import json
import os
import sqlite3
import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

from server_stub.http import ApiError, Clock, storage_unavailable
from server_stub.intel.envelope import IntelRejected, verify
from server_stub.service.private_dir import within_own_files
from server_stub.service.schema import format_timestamp
from server_stub.service.storage import (
    STORAGE_FAULTS,
    StorageFault,
    classify,
    corrupt,
    still_failing,
)
from server_stub.telemetry import child

WRITE_BUSY_SECONDS = 1.0
"""The longest a submit waits for the write lock, in all; then 503 with Retry-After."""
LASTING = frozenset({StorageFault.DISK_FULL, StorageFault.READ_ONLY, StorageFault.CORRUPT})


@dataclass(frozen=True)
class Receipt:
    id: str
    duplicate: bool
    received_at: str

    def data(self) -> dict[str, Any]:
        return {"id": self.id, "duplicate": self.duplicate, "received_at": self.received_at}


def _reject_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    names = [name for name, _ in pairs]
    if len(names) != len(set(names)):
        raise ApiError(400, "invalid_envelope", "the envelope repeats a key")
    return dict(pairs)


def parse_envelope(raw: bytes) -> Any:
    try:
        return json.loads(raw, object_pairs_hook=_reject_duplicate_keys)
    except (ValueError, RecursionError):
        raise ApiError(400, "bad_request", "the body is not valid JSON") from None


class IntelIntake:
    def __init__(self, db_path: Path | None, key: bytes | None, clock: Clock) -> None:
        self.db_path = db_path
        self.key = key
        self.clock = clock
        self._lock = threading.Lock()
        self._connection: sqlite3.Connection | None = None
        self._identity: tuple[int, int] | None = None
        self.fault: StorageFault | None = None
        """Why the last write failed, when its cause may last; None after a write succeeds."""

    def receive(self, document: Any, forwarded_by: str | None = None) -> Receipt:
        if self.key is None:
            raise ApiError(
                503,
                "intel_disabled",
                "this service takes no intel: SERVICE_INTEL_HMAC is not configured",
            )
        now = datetime.fromtimestamp(self.clock(), UTC)
        try:
            with child("intel.verify"):
                envelope = verify(document, self.key, now)
        except IntelRejected as refusal:
            raise ApiError(refusal.status, refusal.code, refusal.message) from None
        row = (
            envelope.id,
            envelope.schema_tag,
            envelope.source,
            envelope.kind,
            envelope.issued_at,
            envelope.expires_at,
            format_timestamp(now),
            json.dumps(envelope.body, ensure_ascii=False, separators=(",", ":")),
            envelope.sig,
            forwarded_by,
        )
        # One bound for the whole wait: for this process's other writers, then for SQLite's lock.
        deadline = time.monotonic() + WRITE_BUSY_SECONDS
        if not self._lock.acquire(timeout=WRITE_BUSY_SECONDS):
            STORAGE_FAULTS.record(StorageFault.LOCKED, "writing intel")
            raise storage_unavailable("the intel inbox is busy with other writes; retry shortly")
        try:
            with child("sqlite.insert", **{"db.system.name": "sqlite"}):
                return self._store(row, deadline)
        finally:
            self._lock.release()

    def writable(self) -> bool:
        """False while the last write failed for a cause that outlasts a retry (a full disk, lost
        write access, corruption) and a look at that cause says it still holds."""
        fault = self.fault
        if fault is None or self.db_path is None:
            return True
        if still_failing(fault, self.db_path):
            return False
        self.fault = None
        return True

    def _store(self, row: tuple[Any, ...], deadline: float) -> Receipt:
        try:
            connection = self._writer()
            left_ms = max(int((deadline - time.monotonic()) * 1000), 0)
            connection.execute(f"PRAGMA busy_timeout = {left_ms}")
            with connection:  # one transaction: insert, or read what holds the id
                inserted = connection.execute(
                    "INSERT INTO intel_inbox (id, schema, source, kind, issued_at, expires_at, "
                    "received_at, body, sig, forwarded_by) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
                    "ON CONFLICT (id) DO NOTHING",
                    row,
                ).rowcount
                if inserted:
                    self.fault = None
                    return Receipt(id=row[0], duplicate=False, received_at=row[6])
                held = connection.execute(
                    "SELECT sig, received_at FROM intel_inbox WHERE id = ?", (row[0],)
                ).fetchone()
        except sqlite3.Error as exc:
            self._close()
            fault = classify(exc)
            STORAGE_FAULTS.record(fault, "writing intel")
            if fault in LASTING:
                self.fault = fault
            if fault is StorageFault.CORRUPT:
                raise corrupt() from None
            raise storage_unavailable("the intel inbox cannot be written right now") from None
        self.fault = None
        if held is not None and hmac.compare_digest(str(held[0]), str(row[8])):
            return Receipt(id=row[0], duplicate=True, received_at=str(held[1]))
        raise ApiError(409, "conflict", "an envelope with this id and other content exists")

    def _writer(self) -> sqlite3.Connection:
        if self.db_path is None:
            raise sqlite3.OperationalError("no database configured")
        try:
            status = os.stat(self.db_path)
        except OSError:
            self._close()
            raise sqlite3.OperationalError("database file missing") from None
        identity = (status.st_dev, status.st_ino)
        if identity != self._identity:
            self._close()
        if self._connection is None:
            # mode=rw: never create a database that is not there.
            self._connection = sqlite3.connect(
                f"file:{quote(str(self.db_path.resolve()))}?mode=rw",
                uri=True,
                timeout=WRITE_BUSY_SECONDS,
                check_same_thread=False,
                isolation_level="IMMEDIATE",
            )
            within_own_files(self._connection)
            _add_forwarded_by(self._connection)
            self._identity = identity
        return self._connection

    def _close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection, self._identity = None, None


def _add_forwarded_by(connection: sqlite3.Connection) -> None:
    """A database made before intel named who forwarded it gets the column (NULL for the old)."""
    columns = {row[1] for row in connection.execute("PRAGMA table_info(intel_inbox)")}
    if "forwarded_by" not in columns:
        connection.execute("ALTER TABLE intel_inbox ADD COLUMN forwarded_by TEXT")
