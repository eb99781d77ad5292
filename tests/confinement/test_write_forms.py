"""Inside each confined process, every write form outside what it may write fails with a
permission error, a file in HOME cannot be read, and a TCP connect to a loopback port outside its
backends is refused. The probe applies the processes' own policies (tests/confinement/probe.py);
with the confinement switched off the same attempts succeed, so these tests see the difference."""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from server_stub.service.demo_data import write_demo_database
from tests.service.test_passkey_parts import start_service
from tests.support import ROOT

pytestmark = pytest.mark.e2e

WRITE_FORMS = [
    "open for writing",
    "create",
    "truncate",
    "mkdir",
    "symlink",
    "hard link",
    "rename",
    "unlink",
]


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    with socket.create_server(("127.0.0.1", 0)) as server:
        yield server


def prepare(folder: Path) -> None:
    for name in ("existing", "doomed"):
        (folder / name).write_text("x")


def run_probe(
    tmp_path: Path,
    policy: str,
    setting: str,
    *extra: str,
    terminal: int | None = None,
    cwd: Path = ROOT,
    **env: str,
) -> subprocess.CompletedProcess[str]:
    """The probe, its standard input `terminal` (a pty's end, in a session of its own) when given.
    Started elsewhere than in the checkout, it imports through the editable install (the test's
    own environment) and SVC_TEST_CANARY may name the file to read instead of the one in HOME."""
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    canary = home / "canary"
    canary.write_text("not for svc-mcp")
    canary = Path(env.pop("SVC_TEST_CANARY", canary))
    target = tmp_path / "elsewhere"
    target.mkdir()
    prepare(target)
    with socket.create_server(("127.0.0.1", 0)) as other:
        port = str(other.getsockname()[1])
        completed = subprocess.run(
            [
                sys.executable,
                "-m",
                "tests.confinement.probe",
                policy,
                str(target),
                str(canary),
                port,
                *extra,
            ],
            cwd=cwd,
            env={**os.environ, "HOME": str(home), setting: "require", **env},
            stdin=terminal,
            start_new_session=terminal is not None,
            capture_output=True,
            text=True,
            timeout=60,
        )
    return completed


def probe(
    tmp_path: Path,
    policy: str,
    setting: str,
    *extra: str,
    terminal: int | None = None,
    cwd: Path = ROOT,
    **env: str,
) -> dict[str, str]:
    completed = run_probe(tmp_path, policy, setting, *extra, terminal=terminal, cwd=cwd, **env)
    assert completed.returncode == 0, completed.stderr
    assert "confined (Landlock ABI" in completed.stderr or env.get(setting) == "off"
    results: dict[str, str] = json.loads(completed.stdout)
    return results


def assert_confined(results: dict[str, str]) -> None:
    for form in WRITE_FORMS:
        assert results[form] in ("EACCES", "EPERM"), (form, results)
    assert results["read canary"] == "EACCES", results
    assert results["connect elsewhere"] == "EACCES", results


def portal_data(tmp_path: Path) -> Path:
    data = tmp_path / "data"
    data.mkdir()
    (data / "catalog.json").write_text("[]")
    return data


def test_the_portal_writes_nowhere_not_even_in_its_data(tmp_path: Path) -> None:
    data = portal_data(tmp_path)
    results = probe(tmp_path, "portal", "SVC_STUB_CONFINEMENT", str(data))
    assert_confined(results)


def database_in(folder: Path, journal_mode: str = "delete") -> Path:
    db = folder / "svc.db"
    with sqlite3.connect(db) as connection:
        connection.execute(f"PRAGMA journal_mode = {journal_mode}")
        connection.execute("CREATE TABLE kept (x)")
    return db


@pytest.mark.parametrize("journal_mode", ["delete", "wal"])
def test_the_data_service_writes_its_own_files_and_nothing_else_in_home(
    tmp_path: Path, journal_mode: str
) -> None:
    """The README's `--db ./svc.db` run from home: the database sits in HOME, beside `~/.ssh` and
    `~/.bashrc`. The service writes its database (journal or WAL included) and its private folder,
    and nothing else there."""
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text("PRIVATE KEY")
    (home / ".bashrc").write_text("# shell start-up")
    prepare(home)
    db = database_in(home, journal_mode)
    private = home / "svc.db.private"
    private.mkdir(mode=0o700)
    prepare(private)
    results = probe(tmp_path, "service", "SVC_STUB_CONFINEMENT", str(db))
    assert_confined(results)
    for what in ("read ~/.ssh/id_rsa", "create ~/.ssh/authorized_keys", "append to ~/.bashrc"):
        assert results[what] == "EACCES", (what, results)
    for form in WRITE_FORMS:
        assert results[f"beside the database: {form}"] in ("EACCES", "EPERM"), (form, results)
    assert results["database transaction"] == "ok", results
    assert results["passkey file replaced"] == "ok", results
    assert results["sort beyond the cache"] == "ok", results  # no temporary file needed
    for form in ("open for writing", "create", "truncate", "mkdir", "rename", "unlink"):
        assert results[f"private folder: {form}"] == "ok", results
    # A symlink could point anywhere; a hard link can only name a file it may already write.
    assert results["private folder: symlink"] == "EACCES", results
    assert not (home / ".ssh" / "authorized_keys").exists()
    with sqlite3.connect(db) as connection:
        assert connection.execute("SELECT x FROM probe").fetchall() == [(1,)]


@pytest.mark.parametrize(("mode", "setting"), [("0777", "require"), ("1777", "auto")])
def test_a_database_in_a_folder_others_can_write_is_refused(
    tmp_path: Path, mode: str, setting: str
) -> None:
    """Others could plant its journal or WAL there (before, the whole folder was writable).
    Refused in `auto` too: running there unconfined would not make it safer."""
    shared = tmp_path / "shared"
    shared.mkdir()
    db = database_in(shared)
    shared.chmod(int(mode, 8))
    completed = run_probe(
        tmp_path, "service", "SVC_STUB_CONFINEMENT", str(db), SVC_STUB_CONFINEMENT=setting
    )
    assert completed.returncode == 2, completed.stdout + completed.stderr
    assert completed.stderr.strip() == (
        f"svc-stub service: refusing to start: {shared} is writable by other users, who could "
        "plant or swap the files svc.db needs there: use a folder of your own (mkdir -m 700)"
    )
    assert sorted(path.name for path in shared.iterdir()) == ["svc.db"]  # nothing made there


def test_the_real_service_refuses_a_database_in_a_shared_folder(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    db = shared / "service.db"
    write_demo_database(db)
    shared.chmod(0o1777)
    result = start_service(db, SVC_STUB_CONFINEMENT="auto")
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert result.stderr.strip().splitlines() == [
        f"svc-stub service: refusing to start: {shared} is writable by other users, who could "
        "plant or swap the files service.db needs there: use a folder of your own (mkdir -m 700)"
    ]


@pytest.mark.parametrize("policy", ["stdio", "gateway"])
def test_the_mcp_processes_write_nowhere_and_connect_only_to_their_backends(
    tmp_path: Path, listener: socket.socket, policy: str
) -> None:
    backend = listener.getsockname()[1]
    results = probe(
        tmp_path,
        policy,
        "SVC_MCP_CONFINEMENT",
        str(backend),
        SERVICE_API_BASE=f"http://127.0.0.1:{backend}",
    )
    assert_confined(results)
    assert results["connect to a backend"] == "ok", results


def test_switched_off_every_attempt_succeeds(tmp_path: Path) -> None:
    """The probe's attempts are real: unconfined, each one works."""
    results = probe(
        tmp_path,
        "portal",
        "SVC_STUB_CONFINEMENT",
        str(portal_data(tmp_path)),
        SVC_STUB_CONFINEMENT="off",
    )
    assert set(results.values()) == {"ok"}, results
