"""A revoked session is refused on the very next request, while other clients keep the real portal
busy reading the catalog."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import httpx
import pytest

from server_stub.portal import admin
from tests.portal.conftest import PortalData
from tests.support import PORT, running_server
from tests.support_load import steady_load

pytestmark = pytest.mark.e2e

SESSIONS = 20


def issue(data: Path) -> tuple[str, str]:
    """A new session for the reader: its token and its record id."""
    token = admin.issue_session(data, "carol", timedelta(hours=1))
    trail = (data / "audit" / "sessions.jsonl").read_text().splitlines()
    record_id: str = json.loads(trail[-1])["id"]
    return token, record_id


def test_a_revoked_session_is_refused_on_the_next_request_under_load(
    portal_data: PortalData, tmp_path: Path
) -> None:
    data = portal_data.path
    sessions = [issue(data) for _ in range(SESSIONS)]
    with (
        running_server(
            ["-m", "server_stub", "portal", "--data", str(data), "--port", PORT],
            log_path=tmp_path / "portal.log",
            ready_path="/api/page",
        ) as server,
        steady_load(
            server.base_url, "/api/catalog", portal_data.headers("human_auditor")
        ) as statuses,
        httpx.Client(base_url=server.base_url, timeout=10.0) as http,
    ):
        for index, (token, record_id) in enumerate(sessions):
            bearer = {"Authorization": f"Bearer {token}"}
            assert http.get("/api/catalog", headers=bearer).status_code == 200
            if index == 0:
                revoke = [sys.executable, "-m", "server_stub", "admin", "portal", "revoke-session"]
                subprocess.run(
                    [*revoke, "--id", record_id, "--data", str(data)],
                    check=True,
                    capture_output=True,
                )
            else:
                admin.revoke_session(data, record_id)
            assert http.get("/api/catalog", headers=bearer).status_code == 401
    assert len(statuses) > SESSIONS
    assert set(statuses) == {200}
