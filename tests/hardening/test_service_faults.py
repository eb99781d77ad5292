"""The data service stub with its database removed, locked or replaced by something unreadable.

Each case runs against a real `svc-stub service` process: `/health/ready` goes 503, reads fail with
the 503 envelope, the intake stores nothing, the file is intact afterwards, and the service recovers
without a restart once the database is back.

Tests run as root, where `chmod` stops nothing, and a read-only bind mount needs CAP_SYS_ADMIN,
which CI containers lack. So "unreadable" is made real for any user: the file is replaced by a
garbage file or by a directory (what a botched copy or restore leaves), and put back afterwards.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from server_stub.intel.envelope import key_bytes, sign
from tests.hardening.conftest import wait_for
from tests.mcp.conftest import INTEL_KEY, ServiceStub

READS = ("/api/v1/system", "/api/v1/positions", "/api/v1/orders", "/api/v1/events")
UNAVAILABLE = {"ok": False, "error": {"code": "unavailable"}}
# A broken database must be noticed quickly: no request may hang on it.
PROMPT_SECONDS = 1.5


def envelope(intel_id: str) -> dict[str, Any]:
    draft = {"id": intel_id, "source": "faults", "kind": "note", "body": {"n": 1}}
    return sign(draft, key_bytes(INTEL_KEY), datetime.now(UTC))


def client(service: ServiceStub) -> httpx.Client:
    return httpx.Client(base_url=service.base_url, headers=service.headers(), timeout=15)


def assert_unavailable(response: httpx.Response) -> None:
    assert response.status_code == 503, response.text
    body = response.json()
    assert body["ok"] is False
    assert body["error"]["code"] == "unavailable"
    assert "Traceback" not in response.text


def assert_broken(http: httpx.Client) -> None:
    """Ready is 503 and every read fails with the envelope, each promptly."""
    for path in ("/health/ready", *READS):
        started = time.monotonic()
        assert_unavailable(http.get(path))
        assert time.monotonic() - started < PROMPT_SECONDS, path
    started = time.monotonic()
    assert http.get("/health/live").status_code == 200
    assert time.monotonic() - started < PROMPT_SECONDS


def assert_healthy(http: httpx.Client) -> None:
    assert http.get("/health/ready").json() == {"ok": True, "data": {"status": "ready"}}
    for path in READS:
        response = http.get(path)
        assert response.status_code == 200, (path, response.text)
        assert response.json()["ok"] is True


def ready(http: httpx.Client) -> bool:
    return http.get("/health/ready").status_code == 200


def stored_ids(db: Path) -> set[str]:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as connection:
        return {row[0] for row in connection.execute("SELECT id FROM intel_inbox")}


def integrity(db: Path) -> str:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as connection:
        return str(connection.execute("PRAGMA integrity_check").fetchone()[0])


@contextmanager
def exclusive_lock(db: Path) -> Iterator[None]:
    """Another connection (this test process, not the server) holds the write lock (in WAL
    mode, an exclusive transaction excludes writers only)."""
    connection = sqlite3.connect(db, isolation_level=None, timeout=0)
    try:
        connection.execute("BEGIN EXCLUSIVE")
        yield
        connection.execute("ROLLBACK")
    finally:
        connection.close()


def test_locked_database(service: ServiceStub) -> None:
    """Another process holds the write lock: in WAL mode (issue 33, finding 11) reads and
    readiness never wait on it; a submit waits at most its bound, then 503."""
    with client(service) as http:
        assert_healthy(http)
        before = stored_ids(service.db)
        with exclusive_lock(service.db):
            started = time.monotonic()
            assert_healthy(http)
            assert time.monotonic() - started < PROMPT_SECONDS
            started = time.monotonic()
            refused = http.post("/api/v1/intel", json=envelope("while-locked"))
            assert_unavailable(refused)
            assert time.monotonic() - started < PROMPT_SECONDS
        assert integrity(service.db) == "ok"
        assert stored_ids(service.db) == before
        wait_for(lambda: ready(http))
        assert_healthy(http)
        accepted = http.post("/api/v1/intel", json=envelope("after-lock"))
        assert accepted.status_code == 201, accepted.text
        assert stored_ids(service.db) == before | {"after-lock"}


def test_removed_database_and_recovery(service: ServiceStub, tmp_path: Path) -> None:
    aside = tmp_path / "aside.db"
    with client(service) as http:
        assert_healthy(http)
        os.rename(service.db, aside)
        assert_broken(http)
        assert_unavailable(http.post("/api/v1/intel", json=envelope("while-removed")))
        assert not service.db.exists(), "the server must never create a database"
        os.rename(aside, service.db)
        wait_for(lambda: ready(http))
        assert_healthy(http)
        assert "while-removed" not in stored_ids(service.db)
        assert integrity(service.db) == "ok"
        assert http.post("/api/v1/intel", json=envelope("back")).status_code == 201


@pytest.mark.parametrize("replacement", ["garbage file", "directory"])
def test_unreadable_database_and_recovery(
    service: ServiceStub, tmp_path: Path, replacement: str
) -> None:
    aside = tmp_path / "aside.db"
    with client(service) as http:
        assert_healthy(http)
        os.rename(service.db, aside)
        if replacement == "directory":
            service.db.mkdir()
        else:
            service.db.write_bytes(b"this is not a database\n" * 512)
        assert_broken(http)
        assert_unavailable(http.post("/api/v1/intel", json=envelope("while-unreadable")))
        if replacement == "directory":
            service.db.rmdir()
        else:
            assert service.db.read_bytes() == b"this is not a database\n" * 512, "written to"
            service.db.unlink()
        # The file itself back: a confined service reaches only the files it started with, so a
        # restore as a new file needs a restart (docs/decisions.md, the data service's files).
        os.rename(aside, service.db)
        wait_for(lambda: ready(http))
        assert_healthy(http)
        assert integrity(service.db) == "ok"
        assert "while-unreadable" not in stored_ids(service.db)
    log = service.log_path.read_text()
    assert "Traceback" not in log
