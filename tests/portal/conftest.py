"""Fixtures for the portal stub: a demo data directory, sessions per role, and an in-process app."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from server_stub.portal import admin
from server_stub.portal.app import create_app
from server_stub.portal.demo_data import write_demo_data

ENDPOINTS = [
    "/api/catalog",
    "/api/mcp",
    "/api/web",
    "/api/cli",
    "/api/page",
    "/api/audit",
    "/api/gateway-audit",
    "/api/grants",
    "/api/revokes",
    "/api/whoami",
    "/api/sessions",
    "/api/credentials",
    "/api/credential-revokes",
]
AUDITOR_ONLY = {
    "/api/audit",
    "/api/gateway-audit",
    "/api/grants",
    "/api/revokes",
    "/api/sessions",
    "/api/credentials",
    "/api/credential-revokes",
}
# Callers of the matrix: name -> principal id (None = anonymous).
CALLERS = {
    "anonymous": None,
    "reader": "carol",
    "maintainer": "bob",
    "human_auditor": "alice",
    "service_auditor": "audit-bot",
}

LOCAL_URL = "http://localhost"
"""Where the in-process test clients send requests: a name the portal answers for (any other
`Host` gets 421, server_stub/hosts.py)."""


@dataclass(frozen=True)
class PortalData:
    path: Path
    tokens: dict[str, str]  # caller name -> bearer token (no entry for anonymous)

    def headers(self, caller: str) -> dict[str, str]:
        token = self.tokens.get(caller)
        return {"Authorization": f"Bearer {token}"} if token else {}


@pytest.fixture(scope="session")
def _demo_template(tmp_path_factory: pytest.TempPathFactory) -> PortalData:
    path = tmp_path_factory.mktemp("portal-template") / "data"
    write_demo_data(path)
    tokens = {
        name: admin.issue_session(path, subject, timedelta(days=3650))
        for name, subject in CALLERS.items()
        if subject is not None
    }
    return PortalData(path=path, tokens=tokens)


@pytest.fixture
def portal_data(_demo_template: PortalData, tmp_path: Path) -> PortalData:
    """A private copy of the demo data set, with a long-lived session per caller."""
    path = tmp_path / "data"
    shutil.copytree(_demo_template.path, path)
    return PortalData(path=path, tokens=_demo_template.tokens)


@pytest.fixture
def client(portal_data: PortalData) -> Iterator[TestClient]:
    with TestClient(
        base_url=LOCAL_URL, app=create_app(portal_data.path), raise_server_exceptions=False
    ) as test_client:
        yield test_client
