"""Inside each confined process, every write form outside what it may write fails with a
permission error, a file in HOME cannot be read, and a TCP connect to a loopback port outside its
backends is refused. The probe applies the processes' own policies (tests/confinement/probe.py);
with the confinement switched off the same attempts succeed, so these tests see the difference."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

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


def probe(tmp_path: Path, policy: str, setting: str, *extra: str, **env: str) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir()
    canary = home / "canary"
    canary.write_text("not for svc-mcp")
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
            cwd=ROOT,
            env={**os.environ, "HOME": str(home), setting: "require", **env},
            capture_output=True,
            text=True,
            timeout=60,
        )
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


def test_the_data_service_writes_only_beside_its_database(tmp_path: Path) -> None:
    db_folder = tmp_path / "db"
    db_folder.mkdir()
    prepare(db_folder)
    results = probe(tmp_path, "service", "SVC_STUB_CONFINEMENT", str(db_folder / "service.db"))
    assert_confined(results)
    # What SQLite and the passkey store do there: create, write, truncate, rename, remove.
    for form in ("open for writing", "create", "truncate", "mkdir", "rename", "unlink"):
        assert results[f"beside the database: {form}"] == "ok", results
    # A symlink could point anywhere; a hard link can only name a file it may already write.
    assert results["beside the database: symlink"] == "EACCES", results


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
