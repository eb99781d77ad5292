"""The portal server never writes: not a byte of the data directory, not a file opened for writing."""

from __future__ import annotations

import hashlib
import tempfile
from pathlib import Path

from starlette.testclient import TestClient

from server_stub.portal.app import create_app
from tests.portal.conftest import CALLERS, ENDPOINTS, LOCAL_URL, PortalData
from tests.write_audit import recording_writes


def tree_digest(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def test_the_recorder_catches_a_write() -> None:
    with recording_writes() as writes, tempfile.TemporaryFile("w+b"):
        pass
    assert writes


def test_requests_open_nothing_for_writing(portal_data: PortalData) -> None:
    before = tree_digest(portal_data.path)
    with recording_writes() as writes:
        client = TestClient(
            base_url=LOCAL_URL, app=create_app(portal_data.path), raise_server_exceptions=False
        )
        for path in ENDPOINTS:
            for caller in CALLERS:
                for method in ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"]:
                    client.request(method, path, headers=portal_data.headers(caller))
                client.get(path, params={"limit": 3, "cursor": "bad"})
    assert writes == []
    assert tree_digest(portal_data.path) == before
