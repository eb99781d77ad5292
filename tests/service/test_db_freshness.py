"""The read cache's freshness check: `PRAGMA data_version` is asked only when SQLite's own change
marks moved (the database header; in WAL mode the WAL-index header in `<db>-shm`), and a commit is
seen by the next read even when its writer stalled between writing its frames and publishing them."""

from __future__ import annotations

import contextlib
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from server_stub.service.db import DatabaseUnavailable, ServiceDatabase


@pytest.fixture(params=["wal", "truncate"])
def db(
    request: pytest.FixtureRequest, demo_db_template: Path, tmp_path: Path
) -> Iterator[tuple[Path, sqlite3.Connection]]:
    """A copy of the demo database in each journal mode and a writer holding it open (as a daemon
    would)."""
    path = tmp_path / "service.db"
    shutil.copy(demo_db_template, path)
    writer = sqlite3.connect(path)
    assert writer.execute(f"PRAGMA journal_mode = {request.param}").fetchone()[0] == request.param
    yield path, writer
    writer.close()


def asked(database: ServiceDatabase) -> list[str]:
    """The statements the reads' connection runs from now on."""
    statements: list[str] = []
    assert database._connection is not None
    database._connection.set_trace_callback(statements.append)
    return statements


def questions(statements: list[str]) -> int:
    return sum("data_version" in statement for statement in statements)


def test_unchanged_files_skip_the_question_and_each_commit_is_seen_next(
    db: tuple[Path, sqlite3.Connection],
) -> None:
    path, writer = db
    database = ServiceDatabase(path)
    for _ in range(2):  # in WAL mode the second read settles on the WAL-index header alone
        assert database.system()["mode"] == "running"
    statements = asked(database)
    for _ in range(3):
        assert database.system()["mode"] == "running"
    assert questions(statements) == 0, statements

    for mode in ("paused", "running", "paused"):
        writer.execute("UPDATE system_state SET mode = ? WHERE id = 1", (mode,))
        writer.commit()  # same size, same timestamp tick: only SQLite's marks tell
        assert database.system()["mode"] == mode
    assert questions(statements) == 3, statements


@pytest.mark.e2e
def test_a_commit_published_after_a_stalled_fsync_is_seen_by_the_next_read(
    db: tuple[Path, sqlite3.Connection], tmp_path: Path
) -> None:
    """The admin's every fsync is held half a second (strace's fault injection) while reads run:
    its `-wal` (or file) is written, and its times stamped, long before the commit is published.
    A check by file times judged the files quiet in that gap and kept the old answer for good."""
    path, _ = db
    database = ServiceDatabase(path)
    assert database.system()["mode"] == "running"
    admin = [sys.executable, "-m", "server_stub", "admin", "service", "pause", "--db", str(path)]
    stall = ["-e", "trace=fsync,fdatasync", "-e", "inject=fsync,fdatasync:delay_exit=500000"]
    trace = tmp_path / "strace.log"
    writer = subprocess.Popen(
        ["strace", "-f", "-qq", "-o", str(trace), *stall, *admin],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    reads = 0
    while writer.poll() is None:
        with contextlib.suppress(
            DatabaseUnavailable
        ):  # rollback mode: the lock outlasts a read's wait
            database.system()
            reads += 1
    assert writer.returncode == 0, writer.stderr.read() if writer.stderr else ""
    assert "fdatasync" in trace.read_text() or "fsync" in trace.read_text()
    assert reads > 10
    assert database.system()["mode"] == "paused"


def test_a_switch_to_wal_and_the_commits_after_it_are_seen(
    demo_db_template: Path, tmp_path: Path
) -> None:
    path = tmp_path / "service.db"
    shutil.copy(demo_db_template, path)
    database = ServiceDatabase(path)
    assert database.system()["mode"] == "running"
    writer = sqlite3.connect(path)
    try:
        assert writer.execute("PRAGMA journal_mode = WAL").fetchone()[0] == "wal"
        for mode in ("paused", "running", "paused"):
            writer.execute("UPDATE system_state SET mode = ? WHERE id = 1", (mode,))
            writer.commit()
            assert database.system()["mode"] == mode
    finally:
        writer.close()


def test_no_one_switches_out_of_wal_while_the_reads_connection_lives(
    demo_db_template: Path, tmp_path: Path
) -> None:
    """What lets the check read only the WAL-index header once it saw WAL mode: a WAL reader's
    connection keeps a shared lock on the database between its reads."""
    path = tmp_path / "service.db"
    shutil.copy(demo_db_template, path)
    with sqlite3.connect(path) as switch:
        assert switch.execute("PRAGMA journal_mode = WAL").fetchone()[0] == "wal"
    database = ServiceDatabase(path)
    database.system()
    other = sqlite3.connect(path, timeout=0.1)
    try:
        with pytest.raises(sqlite3.OperationalError, match="locked"):
            other.execute("PRAGMA journal_mode = DELETE")
    finally:
        other.close()
