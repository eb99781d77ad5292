"""The data service's own files, the only ones it may write once confined (README "Security notes").

Landlock grants a right on a file or on everything beneath a folder, and it cannot grant "create a
file named X here". So the service is granted the database file and SQLite's sidecars by name
(`<db>-journal`, `<db>-wal`, `<db>-shm`: the ones its journal mode needs are created empty before
confinement, and the rollback journal is kept in place rather than deleted, `within_own_files`),
spec 2's passkey file `<db>.webauthn` by name too (created before confinement, rewritten in place),
and one folder of its own beside the database, `<db>.private/` (mode 0700): the undo journal of the
passkey file's writes. Never the folder that holds the database, which may be HOME.
"""

from __future__ import annotations

import os
import sqlite3
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import quote

SIDECARS = ("-journal", "-wal", "-shm")
_WAL_HEADER_OFFSET = 18  # the file format's read and write versions: 2 means WAL


def private_dir(db_path: Path) -> Path:
    return db_path.with_name(db_path.name + ".private")


def passkey_file(db_path: Path) -> Path:
    """Spec 2's `<db_path>.webauthn` (server_stub.service.passkey_store)."""
    return db_path.with_name(db_path.name + ".webauthn")


def database_files(db_path: Path) -> tuple[Path, ...]:
    """The database, every sidecar SQLite may use and the passkey file: the service's own files
    beside the database, granted by name, whether or not each exists yet."""
    return (
        db_path,
        *(db_path.with_name(db_path.name + suffix) for suffix in SIDECARS),
        passkey_file(db_path),
    )


def _refused(message: str) -> Exception:
    # Imported here: the confinement imports this module, and settings bring pydantic.
    from server_stub.service.settings import StartupRefused

    return StartupRefused(message)


def make_private_dir(db_path: Path) -> Path:
    """Creates `<db>.private` (mode 0700) if it is missing; StartupRefused when what is there is
    not a folder of this user's that only this user may enter."""
    folder = private_dir(db_path)
    try:
        os.mkdir(folder, 0o700)
    except FileExistsError:
        pass
    except OSError as exc:
        raise _refused(f"cannot create {folder}: {exc.strerror}") from None
    state = os.lstat(folder)
    if (
        not stat.S_ISDIR(state.st_mode)
        or state.st_uid != os.geteuid()
        or stat.S_IMODE(state.st_mode) & 0o077
    ):
        raise _refused(
            f"{folder} must be a folder owned by this user with mode 0700 "
            "(the data service keeps the journal of its passkey file's writes there)"
        )
    return folder


def prepare_database_files(db_path: Path) -> None:
    """Before confinement: the private folder, the sidecars the journal mode needs and the
    passkey file, created empty if missing (never through a symbolic link) so that their file rules
    have a file to name."""
    make_private_dir(db_path)
    with db_path.open("rb") as handle:
        header = handle.read(_WAL_HEADER_OFFSET + 2)
    wal = header[_WAL_HEADER_OFFSET : _WAL_HEADER_OFFSET + 2] == b"\x02\x02"
    suffixes = ("-wal", "-shm") if wal else ("-journal",)
    sidecars = [db_path.with_name(db_path.name + suffix) for suffix in suffixes]
    for sidecar in (*sidecars, passkey_file(db_path)):
        try:
            flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
            os.close(os.open(sidecar, flags, 0o600))
        except OSError as exc:
            raise _refused(f"cannot prepare {sidecar}: {exc.strerror}") from None


def within_own_files(connection: sqlite3.Connection) -> None:
    """A confined service may create no file beside its database and none for SQLite's temporary
    tables and sorts (SQLITE_TMPDIR is read once, when SQLite starts, long before confinement): so
    those stay in memory, and a rollback journal is emptied at commit instead of removed, which
    keeps the one made before confinement (WAL is left as it is)."""
    connection.execute("PRAGMA temp_store = MEMORY")
    if connection.execute("PRAGMA journal_mode").fetchone()[0] == "delete":
        connection.execute("PRAGMA journal_mode = TRUNCATE")


@contextmanager
def wal_files_kept(path: Path) -> Iterator[None]:
    """While a process writes the database beside a running service: its last connection to
    close must not remove `<db>-wal` and `<db>-shm` (SQLite does so when the last connection
    anywhere closes), since the confined service may use those files but never make them again.
    A read-only connection, opened first and closed last, holds them: it can never checkpoint,
    so its close removes nothing."""
    keeper = sqlite3.connect(f"file:{quote(str(path.resolve()))}?mode=ro", uri=True)
    try:
        keeper.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchall()
        yield
    finally:
        keeper.close()
