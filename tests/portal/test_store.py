"""The data directory: clear start-up errors, live re-reads, last good data on a broken change."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from starlette.testclient import TestClient

from server_stub.portal.store import DataError, load_snapshot
from tests.portal.conftest import PortalData


@pytest.mark.parametrize(
    ("relative", "content", "message"),
    [
        ("catalog.json", "{not json", "catalog.json: not readable JSON"),
        ("catalog.json", '{"id": "x"}', "catalog.json: must be a JSON array"),
        ("page.json", '{"title": "t"}', "page.json: cards"),
        (
            "principals.json",
            '[{"id": "a", "kind": "robot", "role": "reader"}]',
            "principals.json[0]: kind",
        ),
        ("audit/grants.jsonl", None, "audit/grants.jsonl:3: not a JSON object"),
    ],
)
def test_malformed_files_fail_with_the_place_named(
    portal_data: PortalData, relative: str, content: str | None, message: str
) -> None:
    path = portal_data.path / relative
    if content is None:  # break the third line of a trail
        lines = path.read_text().splitlines()
        lines[2] = lines[2][:-5]
        content = "\n".join(lines) + "\n"
    path.write_text(content)
    with pytest.raises(DataError) as caught:
        load_snapshot(portal_data.path)
    assert message in str(caught.value)


def test_missing_file_is_named(portal_data: PortalData) -> None:
    (portal_data.path / "page.json").unlink()
    with pytest.raises(DataError, match=r"page\.json: missing"):
        load_snapshot(portal_data.path)


def test_duplicate_surface_ids_are_refused(portal_data: PortalData) -> None:
    catalog = json.loads((portal_data.path / "catalog.json").read_text())
    (portal_data.path / "catalog.json").write_text(json.dumps([*catalog, catalog[0]]))
    with pytest.raises(DataError, match="duplicate surface id"):
        load_snapshot(portal_data.path)


@pytest.mark.e2e
def test_the_cli_reports_a_broken_directory_without_a_traceback(portal_data: PortalData) -> None:
    (portal_data.path / "audit" / "revokes.jsonl").write_text('{"id": 1}\n')
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "server_stub",
            "portal",
            "--data",
            str(portal_data.path),
            "--port",
            "1",
        ],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode == 2
    assert "audit/revokes.jsonl:1" in result.stderr
    assert "Traceback" not in result.stderr


def _bump_mtime(path: os.PathLike[str]) -> None:
    stat = os.stat(path)
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))


def test_changes_are_served_without_a_restart(client: TestClient, portal_data: PortalData) -> None:
    path = portal_data.path / "catalog.json"
    catalog = json.loads(path.read_text())
    for surface in catalog:
        surface["name"] = surface["name"] + " v2"
    path.write_text(json.dumps(catalog))
    _bump_mtime(path)
    names = [s["name"] for s in client.get("/api/catalog").json()["data"]]
    assert names
    assert all(name.endswith(" v2") for name in names)


def test_a_broken_change_keeps_the_last_good_data(
    client: TestClient, portal_data: PortalData, caplog: pytest.LogCaptureFixture
) -> None:
    before = client.get("/api/catalog").json()
    path = portal_data.path / "catalog.json"
    path.write_text('[{"id": "half-written"')
    _bump_mtime(path)
    after = client.get("/api/catalog")
    assert after.status_code == 200
    assert after.json() == before
    assert "serving the last good data" in caplog.text
    assert "catalog.json" in caplog.text
