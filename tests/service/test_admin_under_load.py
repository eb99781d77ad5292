"""An admin change to the database is answered on the very next request, while other clients keep
the real server busy (the freshness check skips `PRAGMA data_version` only while that is safe)."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from server_stub.service import admin
from tests.service.conftest import BEARER
from tests.service.test_e2e import start
from tests.support import Server
from tests.support_load import steady_load

pytestmark = pytest.mark.e2e

ROUNDS = 100
"""Pause and resume, each followed at once by a read: many commits land within one tick of the
file system's clock, the case a check by file times alone would miss."""


@pytest.fixture(params=["delete", "wal"])
def server(request: pytest.FixtureRequest, demo_db: Path, tmp_path: Path) -> Iterator[Server]:
    """The server on the demo database in each journal mode: a commit in WAL mode leaves the
    database file itself untouched."""
    with sqlite3.connect(demo_db) as connection:
        connection.execute(f"PRAGMA journal_mode = {request.param}")
    yield from start(demo_db, tmp_path / "server.log")


def mode(http: httpx.Client) -> str:
    response = http.get("/api/v1/system")
    assert response.status_code == 200
    value: str = response.json()["data"]["mode"]
    return value


def test_pause_and_resume_are_answered_on_the_next_request_under_load(
    server: Server, demo_db: Path
) -> None:
    with (
        steady_load(server.base_url, "/api/v1/system", BEARER) as statuses,
        httpx.Client(base_url=server.base_url, headers=BEARER, timeout=10.0) as http,
    ):
        assert mode(http) == "running"
        for _ in range(ROUNDS):
            assert admin.pause(demo_db).changed
            assert mode(http) == "paused"
            assert admin.resume(demo_db).changed
            assert mode(http) == "running"
        cli = [sys.executable, "-m", "server_stub", "admin", "service"]
        subprocess.run([*cli, "pause", "--db", str(demo_db)], check=True, capture_output=True)
        assert mode(http) == "paused"
        subprocess.run([*cli, "resume", "--db", str(demo_db)], check=True, capture_output=True)
        assert mode(http) == "running"
    assert len(statuses) > ROUNDS
    assert set(statuses) == {200}
