"""Session, credential and role records, and the local admin commands that change them."""

from __future__ import annotations

import stat
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from server_stub.portal import admin
from server_stub.portal.app import create_app
from server_stub.portal.demo_data import write_demo_data
from tests.portal.conftest import LOCAL_URL, PortalData

CLOCK_START = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)


def auditor_list(client: TestClient, portal_data: PortalData, path: str) -> list[dict[str, object]]:
    response = client.get(
        path, params={"limit": 1000}, headers=portal_data.headers("human_auditor")
    )
    assert response.status_code == 200
    data: list[dict[str, object]] = response.json()["data"]
    return data


def test_session_records_carry_spec_fields_and_revoked_at(
    client: TestClient, portal_data: PortalData
) -> None:
    sessions = auditor_list(client, portal_data, "/api/sessions")
    revoked = [s for s in sessions if "revokedAt" in s]
    active = [s for s in sessions if "revokedAt" not in s]
    assert revoked
    assert active
    for record in active:
        assert set(record) == {"id", "subject", "createdAt", "expiresAt"}
    for record in revoked:
        assert set(record) == {"id", "subject", "createdAt", "expiresAt", "revokedAt"}


def test_credential_records_carry_spec_fields(client: TestClient, portal_data: PortalData) -> None:
    credentials = auditor_list(client, portal_data, "/api/credentials")
    fields = {"id", "subject", "credentialRef", "issuer", "issuedAt"}
    assert any("revokedAt" in c for c in credentials)
    for record in credentials:
        assert set(record) - {"revokedAt"} == fields
    revokes = auditor_list(client, portal_data, "/api/credential-revokes")
    revoked_ids = {r["credentialId"] for r in revokes}
    assert revoked_ids == {c["id"] for c in credentials if "revokedAt" in c}


def test_a_revoked_session_stops_working(portal_data: PortalData) -> None:
    token = admin.issue_session(portal_data.path, "carol", timedelta(hours=1))
    client = TestClient(base_url=LOCAL_URL, app=create_app(portal_data.path))
    headers = {"Authorization": f"Bearer {token}"}
    assert client.get("/api/whoami", headers=headers).status_code == 200
    session_id = auditor_list(client, portal_data, "/api/sessions")[-1]["id"]
    assert isinstance(session_id, str)
    admin.revoke_session(portal_data.path, session_id)
    response = client.get("/api/whoami", headers=headers)
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "unauthorized"
    last = auditor_list(client, portal_data, "/api/sessions")[-1]
    assert last["id"] == session_id
    assert "revokedAt" in last
    with pytest.raises(admin.AdminError, match="already revoked"):
        admin.revoke_session(portal_data.path, session_id)


def test_a_session_expires_by_the_injected_clock(portal_data: PortalData) -> None:
    token = admin.issue_session(portal_data.path, "bob", timedelta(minutes=30), now=CLOCK_START)
    now = [CLOCK_START.timestamp() + 29 * 60]
    client = TestClient(base_url=LOCAL_URL, app=create_app(portal_data.path, clock=lambda: now[0]))
    headers = {"Authorization": f"Bearer {token}"}
    assert client.get("/api/whoami", headers=headers).status_code == 200
    now[0] = CLOCK_START.timestamp() + 30 * 60
    assert client.get("/api/whoami", headers=headers).status_code == 401


def test_grant_and_revoke_change_the_role_and_leave_records(
    client: TestClient, portal_data: PortalData
) -> None:
    token = admin.issue_session(portal_data.path, "carol", timedelta(hours=1))
    headers = {"Authorization": f"Bearer {token}"}
    assert client.get("/api/sessions", headers=headers).status_code == 403
    admin.grant(portal_data.path, "carol", "auditor", by="alice")
    assert client.get("/api/sessions", headers=headers).status_code == 200
    assert auditor_list(client, portal_data, "/api/grants")[-1]["subject"] == "carol"
    admin.revoke(portal_data.path, "carol", "auditor", by="alice", reason="test")
    assert client.get("/api/sessions", headers=headers).status_code == 403
    assert client.get("/api/whoami", headers=headers).json()["data"]["role"] == "reader"
    last = auditor_list(client, portal_data, "/api/revokes")[-1]
    assert last["subject"] == "carol"
    assert last["role"] == "auditor"


def test_revoked_credential_gets_revoked_at(client: TestClient, portal_data: PortalData) -> None:
    credential_id, secret = admin.issue_credential(portal_data.path, "deploy-bot", "ci-issuer")
    admin.revoke_credential(portal_data.path, credential_id, by="alice", reason="rotated")
    credentials = auditor_list(client, portal_data, "/api/credentials")
    record = next(c for c in credentials if c["id"] == credential_id)
    assert "revokedAt" in record
    assert (
        secret
        not in client.get("/api/credentials", headers=portal_data.headers("human_auditor")).text
    )


def test_admin_refuses_unknown_subjects(portal_data: PortalData) -> None:
    with pytest.raises(admin.AdminError, match="no principal"):
        admin.issue_session(portal_data.path, "mallory", timedelta(hours=1))
    with pytest.raises(admin.AdminError, match="give --kind"):
        admin.grant(portal_data.path, "mallory", "auditor", by="alice")


@pytest.mark.e2e
def test_admin_cli_prints_the_token_once_and_stores_only_its_hash(portal_data: PortalData) -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "server_stub",
            "admin",
            "portal",
            "issue-session",
            "--data",
            str(portal_data.path),
            "--subject",
            "alice",
            "--ttl",
            "2h",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    token = result.stdout.strip()
    assert token.startswith("pst_")
    assert len(token) > 40
    stored = (portal_data.path / "audit" / "sessions.jsonl").read_text()
    assert token not in stored
    client = TestClient(base_url=LOCAL_URL, app=create_app(portal_data.path))
    whoami = client.get("/api/whoami", headers={"Authorization": f"Bearer {token}"}).json()
    assert whoami["data"] == {"id": "alice", "kind": "human", "role": "auditor"}


@pytest.mark.e2e
def test_admin_cli_reports_a_bad_ttl_without_a_traceback(portal_data: PortalData) -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "server_stub",
            "admin",
            "portal",
            "issue-session",
            "--data",
            str(portal_data.path),
            "--subject",
            "alice",
            "--ttl",
            "forever",
        ],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 2
    assert "not a duration" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.e2e
def test_audit_trails_are_written_for_owner_and_group_only(tmp_path: Path) -> None:
    data = tmp_path / "data"
    write_demo_data(data)
    trails = sorted((data / "audit").iterdir())
    assert trails
    for trail in trails:
        assert stat.S_IMODE(trail.stat().st_mode) == 0o640, trail.name
    (data / "audit" / "sessions.jsonl").unlink()
    (data / "audit" / "grants.jsonl").chmod(0o644)
    write_demo_data(data)  # a re-run tightens what it rewrites
    assert stat.S_IMODE((data / "audit" / "grants.jsonl").stat().st_mode) == 0o640
    (data / "audit" / "sessions.jsonl").unlink()
    issue = [sys.executable, "-m", "server_stub", "admin", "portal", "issue-session"]
    subprocess.run(
        [*issue, "--data", str(data), "--subject", "alice"],
        check=True,
        capture_output=True,
    )
    assert stat.S_IMODE((data / "audit" / "sessions.jsonl").stat().st_mode) == 0o640
