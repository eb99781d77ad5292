"""Storage faults of the data service that used to pass in silence (issue 33, findings 5, 6, 9):
a corrupted database (refused at start, permanent while serving, readiness fails), a full disk
(a tmpfs this test mounts; one log line per class however many writes fail), and a held write lock
(concurrent submits each wait at most the bound, not the bound times their number)."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from server_stub.service.intake import WRITE_BUSY_SECONDS
from tests import support_stub_data as stub_data
from tests.hardening.test_service_faults import envelope, exclusive_lock, stored_ids
from tests.mcp.conftest import INTEL_KEY, SERVICE_TOKEN, ServiceStub, service_stub
from tests.support import CONFINED, PORT, running_server

pytestmark = pytest.mark.e2e

PAGE = 4096


def corrupt_copy(db: Path, to: Path) -> None:
    """`db` with every page but the first (the header and the schema) overwritten: what a torn
    or botched copy leaves."""
    data = bytearray(db.read_bytes())
    for start in range(2 * PAGE, len(data) - PAGE, PAGE):
        data[start : start + PAGE] = (b"\xa5\x5a" * (PAGE // 2))[:PAGE]
    to.write_bytes(bytes(data))


def storage_lines(log: str, fault: str) -> list[str]:
    return [line for line in log.splitlines() if f"storage fault {fault}" in line]


def test_a_corrupted_database_is_refused_at_start(tmp_path: Path) -> None:
    good = tmp_path / "good.db"
    stub_data.service_db(good)
    bad = tmp_path / "service.db"
    corrupt_copy(good, bad)
    done = subprocess.run(
        [sys.executable, "-m", "server_stub", "service", "--db", str(bad), "--port", "0"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**CONFINED, **os.environ},
    )
    assert done.returncode != 0
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "quick_check" in lines[0]
    assert "restore it from a backup" in lines[0]
    assert "Traceback" not in done.stderr


def test_corruption_while_serving_is_permanent_and_not_ready(service: ServiceStub) -> None:
    bad = service.db.with_name("bad.db")
    corrupt_copy(service.db, bad)
    with httpx.Client(base_url=service.base_url, headers=service.headers(), timeout=15) as http:
        assert http.get("/health/ready").status_code == 200
        # The file itself goes bad (a failing disk, a botched copy over it): the confined service
        # may reach only the database's own file, so a new file under the name is not the case.
        with service.db.open("r+b") as file:
            file.write(bad.read_bytes())
        answers = [http.post("/api/v1/intel", json=envelope(f"c{n}")) for n in range(3)]
        answers += [http.get("/api/v1/orders") for _ in range(3)]
        for answer in answers:
            assert answer.status_code == 500, answer.text
            assert answer.json()["error"]["code"] == "storage_corrupt"
            assert "Retry-After" not in answer.headers
        assert http.get("/health/ready").status_code == 503
    log = service.log_path.read_text()
    assert len(storage_lines(log, "corrupt")) == 1, log
    assert "Traceback" not in log


@contextlib.contextmanager
def small_tmpfs(where: Path, size: str) -> Iterator[Path]:
    where.mkdir()
    # mode=0700: the service refuses a database in a folder others can write (tmpfs's 1777).
    options = f"size={size},mode=0700"
    subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(where)], check=True)
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def fill(folder: Path) -> Path:
    """Fills the file system of `folder`; returns the file that holds the space."""
    filler = folder / "filler"
    with filler.open("wb") as out, contextlib.suppress(OSError):
        while True:
            out.write(b"\0" * 65536)
            out.flush()
    return filler


def test_a_full_disk_is_logged_once_refused_with_retry_after_and_not_ready(
    tmp_path: Path,
) -> None:
    with (
        small_tmpfs(tmp_path / "small", "2m") as small,
        service_stub(small, "--no-access-log") as s,
    ):
        with httpx.Client(base_url=s.base_url, headers=s.headers(), timeout=15) as http:
            before = stored_ids(s.db)
            filler = fill(small)
            refused = [http.post("/api/v1/intel", json=envelope(f"full{n}")) for n in range(5)]
            for answer in refused:
                assert answer.status_code == 503, answer.text
                assert answer.headers.get("Retry-After") == "2"
            assert http.get("/health/ready").status_code == 503
            filler.unlink()
            assert http.get("/health/ready").status_code == 200
            assert http.post("/api/v1/intel", json=envelope("room")).status_code == 201
            assert stored_ids(s.db) == before | {"room"}
        log = s.log_path.read_text()
    assert len(storage_lines(log, "disk_full")) == 1, log
    assert "free space" in storage_lines(log, "disk_full")[0]


def test_concurrent_submits_wait_for_a_held_lock_at_most_the_bound(service: ServiceStub) -> None:
    def submit(n: int) -> tuple[int, float]:
        with httpx.Client(base_url=service.base_url, headers=service.headers()) as http:
            started = time.monotonic()
            answer = http.post("/api/v1/intel", json=envelope(f"wait{n}"), timeout=15)
            return answer.status_code, time.monotonic() - started

    with exclusive_lock(service.db), ThreadPoolExecutor(4) as pool:
        results = list(pool.map(submit, range(4)))
    for status, took in results:
        assert status == 503
        assert took < WRITE_BUSY_SECONDS + 0.9, results
    log = service.log_path.read_text()
    assert len(storage_lines(log, "locked")) == 1, log


@contextlib.contextmanager
def bind_view(folder: Path, view: Path) -> Iterator[Path]:
    """`folder` seen through a bind mount at `view`, which `read_only(view)` and `writable(view)`
    switch (as root, chmod would stop nothing)."""
    view.mkdir()
    subprocess.run(["mount", "--bind", str(folder), str(view)], check=True)
    try:
        yield view
    finally:
        subprocess.run(["umount", "-l", str(view)], check=False)


def read_only(view: Path) -> None:
    subprocess.run(["mount", "-o", "remount,ro,bind", str(view)], check=True)


def writable(view: Path) -> None:
    subprocess.run(["mount", "-o", "remount,rw,bind", str(view)], check=True)


@pytest.mark.parametrize("first", ["ready", "submit"])
def test_lost_write_access_is_logged_once_refused_and_not_ready(tmp_path: Path, first: str) -> None:
    folder = tmp_path / "data"
    folder.mkdir()
    stub_data.service_db(folder / "service.db")
    with (
        bind_view(folder, tmp_path / "view") as view,
        service_stub_on(view, tmp_path) as s,
        httpx.Client(base_url=s.base_url, headers=s.headers(), timeout=15) as http,
    ):
        read_only(view)  # write access lost while serving
        assert http.get("/api/v1/positions").status_code == 200  # reads still work
        refused = [http.post("/api/v1/intel", json=envelope(f"ro{n}")) for n in range(5)]
        for answer in refused:
            assert answer.status_code == 503, answer.text
            assert answer.headers.get("Retry-After") == "2"
        assert http.get("/health/ready").status_code == 503
        writable(view)
        # Recovered whatever comes first: a readiness probe, or a client that only writes.
        if first == "ready":
            assert http.get("/health/ready").status_code == 200
        assert http.post("/api/v1/intel", json=envelope("rw")).status_code == 201
        assert http.get("/health/ready").status_code == 200
        log = s.log_path.read_text()
    assert len(storage_lines(log, "read_only")) == 1, log
    assert "write access" in storage_lines(log, "read_only")[0]


@contextlib.contextmanager
def service_stub_on(folder: Path, logs: Path) -> Iterator[ServiceStub]:
    """The service stub on the database already in `folder`, its log in `logs`."""
    db = folder / "service.db"
    env = {"SERVICE_API_TOKEN": SERVICE_TOKEN, "SERVICE_INTEL_HMAC": INTEL_KEY}
    with running_server(
        ["-m", "server_stub", "service", "--db", str(db), "--port", PORT, "--no-access-log"],
        log_path=logs / "service.log",
        ready_path="/health/live",
        env=env,
    ) as server:
        yield ServiceStub(
            base_url=server.base_url, db=db, log_path=server.log_path, pid=server.process.pid
        )
