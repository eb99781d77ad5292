"""Both stubs in process, with credentials of every kind, for the OpenAPI and fuzz tests."""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import jwt
from starlette.applications import Starlette
from starlette.testclient import TestClient

from server_stub.portal import admin
from server_stub.portal.app import create_app as create_portal
from server_stub.portal.auth import AccessProxyConfig
from server_stub.portal.demo_data import write_demo_data
from server_stub.service.app import create_app as create_service
from server_stub.service.auth import Authenticator
from server_stub.service.demo_data import write_demo_database
from server_stub.service.guard import BruteForceGuard, LoginFloodLimit
from server_stub.service.sessions import SESSION_COOKIE
from server_stub.service.settings import ServiceSettings

SERVICE_TOKEN = "svc-openapi-token-7d1e8a6c3b5d0e4f9c2b"
INTEL_SECRET = "openapi-intel-key-5Rw8Kd2Qz7Lm4Nx9Bv3Ct6Hj"
PROXY_SECRET = "openapi-proxy-secret-8Gf3Pq6Ws1Ye9Ua4Io7Zx2"
PROXY_ISSUER = "https://team.access.example.test"
PROXY_AUDIENCE = "portal-aud"
PROXY_HEADER = "Cf-Access-Jwt-Assertion"
PORTAL_ROLES = {"reader": "carol", "maintainer": "bob", "auditor": "alice"}

Headers = dict[str, str]


@dataclass(frozen=True)
class Portal:
    app: Starlette
    access_proxy: AccessProxyConfig
    credentials: dict[str, Headers]
    """Caller name -> headers; "anonymous" sends none."""


@dataclass(frozen=True)
class Service:
    app: Starlette
    credentials: dict[str, Headers]

    @property
    def auth(self) -> Authenticator:
        authenticator = self.app.state.authenticator
        assert isinstance(authenticator, Authenticator)
        return authenticator

    def forgive(self) -> None:
        """A fresh guard and flood limit: generated wrong tokens must not lock every later case."""
        self.auth.guard = BruteForceGuard()
        self.auth.flood = LoginFloodLimit()


def proxy_assertion(email: str, **claims: object) -> str:
    payload = {
        "iss": PROXY_ISSUER,
        "aud": PROXY_AUDIENCE,
        "exp": int(time.time()) + 3600,
        "email": email,
    }
    return jwt.encode({**payload, **claims}, PROXY_SECRET, algorithm="HS256")


def make_portal(directory: Path) -> Portal:
    data = directory / "portal"
    write_demo_data(data)
    access_proxy = AccessProxyConfig(
        header=PROXY_HEADER, issuer=PROXY_ISSUER, audience=PROXY_AUDIENCE, secret=PROXY_SECRET
    )
    credentials: dict[str, Headers] = {"anonymous": {}}
    for role, subject in PORTAL_ROLES.items():
        token = admin.issue_session(data, subject, timedelta(days=3650))
        credentials[role] = {"Authorization": f"Bearer {token}"}
    credentials["proxy"] = {PROXY_HEADER: proxy_assertion("alice@example.test")}
    return Portal(
        create_portal(data, access_proxy=access_proxy, allowed_hosts=["testserver"]),
        access_proxy,
        credentials,
    )


def make_service(directory: Path, *, token: str = SERVICE_TOKEN) -> Service:
    db = directory / "service.db"
    write_demo_database(db)
    settings = ServiceSettings(
        api_token=token,  # type: ignore[arg-type]
        db_path=db,
        intel_hmac=INTEL_SECRET,  # type: ignore[arg-type]
        allowed_hosts="testserver",  # the test client's Host
    )
    app = create_service(settings)
    credentials: dict[str, Headers] = {"anonymous": {}}
    if token:
        with TestClient(app) as client:
            login = client.post("/api/v1/auth/login", json={"token": token})
            assert login.status_code == 200, login.text
            session = login.cookies[SESSION_COOKIE]
        credentials |= {
            "bearer": {"Authorization": f"Bearer {token}"},
            "x-api-token": {"X-API-Token": token},
            "session": {"Cookie": f"{SESSION_COOKIE}={session}"},
        }
    return Service(app, credentials)
