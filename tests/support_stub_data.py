"""The stubs' demo data as the test fixtures set it up: written in the test's process by the
functions `svc-stub demo-data` and `svc-stub admin portal issue-session` call, which saves a
Python start each (about half a second of CPU; the commands themselves are run by
tests/service/test_demo_and_admin.py, tests/portal/test_records_and_admin.py and the README's
tests)."""

from __future__ import annotations

from pathlib import Path

from server_stub.duration import parse_duration
from server_stub.portal import admin
from server_stub.portal.demo_data import write_demo_data
from server_stub.service.demo_data import write_demo_database


def portal_folder(folder: Path) -> Path:
    """`svc-stub demo-data portal FOLDER`."""
    write_demo_data(folder)
    return folder


def service_db(db: Path) -> Path:
    """`svc-stub demo-data service --db DB`."""
    write_demo_database(db)
    return db


def portal_session(folder: Path, subject: str, ttl: str = "8h") -> str:
    """`svc-stub admin portal issue-session --subject SUBJECT --ttl TTL --data FOLDER`: the
    session's bearer token."""
    return admin.issue_session(folder, subject, parse_duration(ttl))
