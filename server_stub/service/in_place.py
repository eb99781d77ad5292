"""A file rewritten in place, whole across a crash: its inode stays, so a confined service, granted
that one file by name, can update it without creating anything in the folder that holds it.

Before the file is touched, its old content goes to an undo journal elsewhere (in the service's
private folder, where it may create files), with a header naming its length and SHA-256, and is
synced; then the file is overwritten, truncated and synced, and the journal removed (the folder
synced, so a removal lost to a power cut cannot undo a finished write later). After a crash,
`recover` finds either no journal (the file is whole: old or new), a journal cut short (the file
was never touched: it is the old one), or a whole journal (the file may be torn: its old content is
put back).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from pathlib import Path

_MAGIC = b"svc.undo.v1"
_FILE_MODE = 0o600


def write_in_place(path: Path, journal: Path, data: bytes) -> None:
    """Replaces the content of `path` with `data`; OSError when it cannot (then `path` holds what
    it held, or, should putting that back fail too, `recover` puts it back at the next start)."""
    before = _read(path)
    _write(journal, _record(before))
    _sync_folder(journal.parent)
    try:
        _write(path, data)
    except OSError:
        with contextlib.suppress(OSError):  # else the journal stays, for `recover`
            _write(path, before)
            _remove(journal)
        raise
    _remove(journal)


def recover(path: Path, journal: Path) -> None:
    """Puts back the old content of `path` if a `write_in_place` was interrupted."""
    try:
        raw = journal.read_bytes()
    except FileNotFoundError:
        return
    before = _parsed(raw)
    if before is not None:
        _write(path, before)
    _remove(journal)


def _record(content: bytes) -> bytes:
    digest = hashlib.sha256(content).hexdigest().encode()
    return b"%s %d %s\n" % (_MAGIC, len(content), digest) + content


def _parsed(raw: bytes) -> bytes | None:
    """The content a whole journal holds; None for one cut short."""
    header, _, content = raw.partition(b"\n")
    parts = header.split(b" ")
    if len(parts) != 3 or parts[0] != _MAGIC or not parts[1].isdigit():
        return None
    if int(parts[1]) != len(content) or hashlib.sha256(content).hexdigest().encode() != parts[2]:
        return None
    return content


def _read(path: Path) -> bytes:
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        return b""
    with os.fdopen(descriptor, "rb") as handle:
        return handle.read()


def _write(path: Path, data: bytes) -> None:
    """Overwrites `path` (made with mode 0600 if missing), never through a symbolic link."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
    descriptor = os.open(path, flags, _FILE_MODE)
    try:
        view = memoryview(data)
        offset = 0
        while offset < len(view):
            offset += os.pwrite(descriptor, view[offset:], offset)
        os.ftruncate(descriptor, len(view))
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def _remove(journal: Path) -> None:
    journal.unlink(missing_ok=True)
    _sync_folder(journal.parent)


def _sync_folder(folder: Path) -> None:
    descriptor = os.open(folder, os.O_RDONLY | os.O_CLOEXEC)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
