"""SQLite's own marks of a commit, read without asking SQLite (server_stub.service.db): the database
header (its change counter moves with every commit in rollback mode; bytes 18-19 say WAL) and, in
WAL mode, the WAL-index header at the start of `<db>-shm` (rewritten exactly when a commit becomes
visible: its change counter, frame count and checksums)."""

from __future__ import annotations

import os
from collections import OrderedDict
from pathlib import Path

_DB_HEADER_BYTES = 100
_WAL_MODE = slice(18, 20)
"""The header's file format read and write versions: 2 and 2 in WAL mode."""
_WAL_INDEX_HEADER_BYTES = 48
MAX_KEPT_FILES = 64


class KeptFiles:
    """Read-only handles on database files and their `-shm`, kept open: closing any handle on a
    file drops every POSIX lock this process holds on it, SQLite's too (the intake's connection
    stays open), so one is closed only after `MAX_KEPT_FILES` other files were opened since (a
    service reads one database; a test process reads many, long gone)."""

    def __init__(self) -> None:
        self._handles: OrderedDict[tuple[int, int], int] = OrderedDict()

    def handle(self, path: Path) -> int | None:
        """A handle on the file at `path`, or None when there is none to open."""
        try:
            status = os.stat(path)
            key = (status.st_dev, status.st_ino)
            if key in self._handles:
                self._handles.move_to_end(key)
                return self._handles[key]
            handle = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            return None
        opened = os.fstat(handle)
        self._handles[(opened.st_dev, opened.st_ino)] = handle
        while len(self._handles) > MAX_KEPT_FILES:
            os.close(self._handles.popitem(last=False)[1])
        return handle


KEPT_FILES = KeptFiles()


def _read_head(handle: int | None, size: int) -> bytes | None:
    if handle is None:
        return None
    try:
        return os.pread(handle, size, 0)
    except OSError:
        return None


class ChangeMarks:
    def __init__(self, database: Path | None = None) -> None:
        """The marks of the database at `database` (its real path: SQLite names its sidecars
        after it); None reads nothing."""
        self._file_handle = KEPT_FILES.handle(database) if database else None
        self._shm_path = database.with_name(database.name + "-shm") if database else None
        self._shm_handle: int | None = None
        self._wal_held = False

    def read(self) -> bytes | None:
        """The database header and, in WAL mode, the WAL-index header; None when unreadable.

        Once the header said WAL, only the WAL-index header is read: the caller's connection asks
        its question on these marks (they changed), so from then on it is a WAL reader, and a WAL
        reader's connection holds a shared lock on the database between its reads, which keeps
        any other connection from switching the database out of WAL while it lives (it gets
        SQLITE_BUSY). The marks are for one connection: a new one takes new marks."""
        if self._wal_held:
            return _read_head(self._shm_handle, _WAL_INDEX_HEADER_BYTES)
        header = _read_head(self._file_handle, _DB_HEADER_BYTES)
        if header is None or header[_WAL_MODE] != b"\x02\x02":
            return header
        if self._shm_handle is None and self._shm_path is not None:
            self._shm_handle = KEPT_FILES.handle(self._shm_path)
        wal_index = _read_head(self._shm_handle, _WAL_INDEX_HEADER_BYTES)
        if wal_index is None:
            return None
        self._wal_held = True
        return header + wal_index
