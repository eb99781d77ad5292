"""The read cache's freshness check on a WAL database: asked of SQLite only when the file or its
`-wal` changed, and never trusted within `QUIET_NS` of a change (file times tick coarsely)."""

from __future__ import annotations

import shutil
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from server_stub.service.db import QUIET_NS, ServiceDatabase


class WallClock:
    def __init__(self) -> None:
        self.ns = time.time_ns()

    def __call__(self) -> int:
        return self.ns


@pytest.fixture
def wal_db(demo_db_template: Path, tmp_path: Path) -> Iterator[tuple[Path, sqlite3.Connection]]:
    """A WAL copy of the demo database and a writer holding it open (as a daemon would)."""
    db = tmp_path / "service.db"
    shutil.copy(demo_db_template, db)
    writer = sqlite3.connect(db)
    assert writer.execute("PRAGMA journal_mode = WAL").fetchone()[0] == "wal"
    yield db, writer
    writer.close()


def asked(database: ServiceDatabase) -> list[str]:
    """The statements the reads' connection runs from now on."""
    statements: list[str] = []
    assert database._connection is not None
    database._connection.set_trace_callback(statements.append)
    return statements


def test_quiet_files_skip_the_question_and_a_wal_commit_is_seen_next(
    wal_db: tuple[Path, sqlite3.Connection],
) -> None:
    db, writer = wal_db
    clock = WallClock()
    database = ServiceDatabase(db, clock)
    assert database.system()["mode"] == "running"
    clock.ns += 10 * QUIET_NS  # nothing written since: the files have been quiet
    database.system()
    statements = asked(database)
    assert database.system()["mode"] == "running"
    assert not any("data_version" in statement for statement in statements), statements

    writer.execute("UPDATE system_state SET mode = 'paused' WHERE id = 1")
    writer.commit()  # into <db>-wal only: the database file itself is not written
    clock.ns = time.time_ns() + 10 * QUIET_NS
    assert database.system()["mode"] == "paused"
    assert any("data_version" in statement for statement in statements), statements


def test_within_the_quiet_time_of_a_change_the_question_is_asked(
    wal_db: tuple[Path, sqlite3.Connection],
) -> None:
    db, writer = wal_db
    clock = WallClock()
    writer.execute("UPDATE system_state SET mode = 'paused' WHERE id = 1")
    writer.commit()
    database = ServiceDatabase(db, clock)
    assert database.system()["mode"] == "paused"
    statements = asked(database)
    database.system()
    assert any("data_version" in statement for statement in statements), statements
