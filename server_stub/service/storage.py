"""What goes wrong with the data service's database, sorted into the classes an operator acts on,
each logged at most once a minute (with how many more happened since) and counted
(`svc_stub.storage.failures`, attribute `fault`).

A corrupt database is permanent: the service refuses to start on one (`PRAGMA quick_check`), and
one found while serving is answered 500 `storage_corrupt`, since no retry can help. Every other
class is temporary: 503 with `Retry-After`.
"""

from __future__ import annotations

import logging
import os
import shutil
import sqlite3
import threading
import time
from collections import Counter
from enum import StrEnum
from pathlib import Path
from urllib.parse import quote

from server_stub.http import ApiError, Clock
from server_stub.service.private_dir import wal_files_kept
from server_stub.telemetry import count

log = logging.getLogger("server_stub.storage")

LOG_WINDOW_SECONDS = 60.0
"""At most one line per class in this time; the next one says how many were left out."""
MIN_FREE_BYTES = 1024 * 1024
"""Below this much free space on the database's file system, the intake counts as full."""


class StorageFault(StrEnum):
    DISK_FULL = "disk_full"
    READ_ONLY = "read_only"
    LOCKED = "locked"
    CORRUPT = "corrupt"
    UNREADABLE = "unreadable"


ADVICE = {
    StorageFault.DISK_FULL: "free space on the database's file system",
    StorageFault.READ_ONLY: "give the service write access to the database file and its folder",
    StorageFault.LOCKED: "another process holds the database's lock too long: find and stop it",
    StorageFault.CORRUPT: "stop the service and restore the database from a backup",
    StorageFault.UNREADABLE: "check that the database file is there and is the service's database",
}
"""What the operator does about each class, as the log line says."""

_BY_CODE = {
    "SQLITE_FULL": StorageFault.DISK_FULL,
    "SQLITE_READONLY": StorageFault.READ_ONLY,
    "SQLITE_PERM": StorageFault.READ_ONLY,
    "SQLITE_BUSY": StorageFault.LOCKED,
    "SQLITE_LOCKED": StorageFault.LOCKED,
    "SQLITE_CORRUPT": StorageFault.CORRUPT,
}


def classify(error: sqlite3.Error) -> StorageFault:
    """The class of an SQLite failure, by its (primary) result code."""
    name = getattr(error, "sqlite_errorname", "") or ""
    for code, fault in _BY_CODE.items():
        if name == code or name.startswith(code + "_"):
            return fault
    return StorageFault.UNREADABLE


class StorageFaults:
    """Counts failures per class and logs the first of each class per LOG_WINDOW_SECONDS."""

    def __init__(self, clock: Clock = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._logged_at: dict[StorageFault, float] = {}
        self._left_out: Counter[StorageFault] = Counter()
        self.totals: Counter[StorageFault] = Counter()

    def record(self, fault: StorageFault, action: str) -> None:
        count("svc_stub.storage.failures", fault=fault)
        with self._lock:
            self.totals[fault] += 1
            now = self._clock()
            last = self._logged_at.get(fault)
            if last is not None and now - last < LOG_WINDOW_SECONDS:
                self._left_out[fault] += 1
                return
            self._logged_at[fault] = now
            left_out = self._left_out.pop(fault, 0)
        more = f"; {left_out} more since the last line" if left_out else ""
        log.warning("storage fault %s while %s: %s%s", fault, action, ADVICE[fault], more)


STORAGE_FAULTS = StorageFaults()
"""The service's one record of storage failures, shared by its readers and its intake."""


def corrupt() -> ApiError:
    return ApiError(
        500,
        "storage_corrupt",
        "the service database is corrupt; a retry will not help until an operator restores it",
    )


def quick_check(path: Path) -> str:
    """ "ok", or the first problem `PRAGMA quick_check` (or opening the file) finds."""
    try:
        connection = sqlite3.connect(f"file:{quote(str(path.resolve()))}?mode=ro", uri=True)
        try:
            row = connection.execute("PRAGMA quick_check(1)").fetchone()
        finally:
            connection.close()
    except sqlite3.Error as exc:
        return str(exc) or type(exc).__name__
    return str(row[0]) if row else "no answer"


def start_problem(path: Path) -> str | None:
    """Why the service must not start on the database at `path`, or None."""
    result = quick_check(path)
    if result == "ok":
        return None
    return (
        f"the database at {path} fails PRAGMA quick_check ({result[:200]}); it is corrupt or not "
        "the service's database: restore it from a backup"
    )


def still_failing(fault: StorageFault, path: Path) -> bool:
    """Whether the cause of a failed write still holds, by a cheap look at it."""
    if fault is StorageFault.DISK_FULL:
        return shutil.disk_usage(path.parent).free < MIN_FREE_BYTES
    if fault is StorageFault.CORRUPT:
        return quick_check(path) != "ok"
    if fault is StorageFault.READ_ONLY:
        return not has_write_access(path)
    return False


def has_write_access(path: Path) -> bool:
    """Whether the database file and its folder (where SQLite writes its journal) are both
    writable, as far as permissions and the mount say."""
    return os.access(path, os.W_OK) and os.access(path.parent, os.W_OK)


def use_wal(path: Path) -> str | None:
    """Puts the database in WAL mode (kept in the file), so readers never wait on the writer
    and the writer never waits on readers; SQLite keeps its sidecars beside it, under their
    standard names `<db>-wal` and `<db>-shm`. Why it cannot, or None."""
    try:
        # Another service on this file may hold no connection yet: this one must not be the last
        # to close, which would remove the sidecars that service is confined to.
        with wal_files_kept(path):
            connection = sqlite3.connect(f"file:{quote(str(path.resolve()))}?mode=rw", uri=True)
            try:
                mode = connection.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            finally:
                connection.close()
    except sqlite3.Error as exc:
        return f"cannot switch the database at {path} to WAL mode ({exc})"
    return None if str(mode).lower() == "wal" else f"the database at {path} stays in {mode} mode"
