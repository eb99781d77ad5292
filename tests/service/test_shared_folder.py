"""A database in a folder other users can write is refused at start, confined or not: they could
plant or swap the files the service writes beside it (docs/security.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from server_stub.service.demo_data import write_demo_database
from tests.service.test_passkey_parts import start_service

pytestmark = pytest.mark.e2e


@pytest.mark.parametrize("setting", ["off", "auto"])
@pytest.mark.parametrize("mode", ["0775", "1777"])
def test_a_database_in_a_folder_others_can_write_is_refused_confined_or_not(
    tmp_path: Path, setting: str, mode: str
) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    db = shared / "service.db"
    write_demo_database(db)
    shared.chmod(int(mode, 8))
    result = start_service(db, SVC_STUB_CONFINEMENT=setting)
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip().splitlines() == [
        f"svc-stub service: refusing to start: {shared} is writable by other users, who could "
        "plant or swap the files service.db needs there: use a folder of your own (mkdir -m 700)"
    ]
    assert sorted(path.name for path in shared.iterdir()) == ["service.db"]  # nothing made there
