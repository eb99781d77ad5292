"""A real `svc-stub portal` on loopback: it answers only the Host names it is configured for
(DNS rebinding), and refuses an access-proxy JWT without `iat` that is valid for too long."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import jwt
import pytest

from tests.portal.conftest import PortalData
from tests.portal.test_access_proxy import AUDIENCE, HEADER, ISSUER, SECRET, claims
from tests.support import PORT, Server, running_server

DEPLOYED_NAME = "portal.example.test"


@contextlib.contextmanager
def portal(data: Path, log: Path, **env: str) -> Iterator[Server]:
    with running_server(
        ["-m", "server_stub", "portal", "--data", str(data), "--port", PORT],
        log_path=log,
        ready_path="/health/live",
        env={
            "PORTAL_ACCESS_JWT_SECRET": SECRET,
            "PORTAL_ACCESS_JWT_ISSUER": ISSUER,
            "PORTAL_ACCESS_JWT_AUDIENCE": AUDIENCE,
            **env,
        },
    ) as server:
        yield server


@pytest.mark.e2e
def test_only_configured_host_names_are_answered(portal_data: PortalData, tmp_path: Path) -> None:
    with portal(
        portal_data.path, tmp_path / "hosts.log", PORTAL_ALLOWED_HOSTS=DEPLOYED_NAME
    ) as server:
        port = server.base_url.rsplit(":", 1)[1]

        def status(host: str) -> int:
            return httpx.get(server.base_url + "/api/page", headers={"Host": host}).status_code

        rebound = httpx.get(server.base_url + "/api/page", headers={"Host": f"evil.example:{port}"})
        assert rebound.status_code == 421
        assert rebound.json()["error"]["code"] == "misdirected_request"
        assert "PORTAL_ALLOWED_HOSTS" in rebound.json()["error"]["message"]
        assert status(f"localhost:{port}") == 200
        assert status(f"127.0.0.1:{port}") == 200
        assert status(DEPLOYED_NAME) == 200
        assert status(f"localhost:{port}.evil.example") == 421


def whoami(server: Server, assertion: str) -> httpx.Response:
    return httpx.get(server.base_url + "/api/whoami", headers={HEADER: assertion})


def assertion(**overrides: Any) -> str:
    return jwt.encode(claims(**overrides), SECRET, algorithm="HS256")


@pytest.mark.e2e
def test_a_jwt_without_iat_may_not_last_long(portal_data: PortalData, tmp_path: Path) -> None:
    now = int(time.time())
    with portal(portal_data.path, tmp_path / "jwt.log") as server:
        assert whoami(server, assertion(exp=now + 3600)).status_code == 200
        thirty_years = whoami(server, assertion(exp=now + 30 * 365 * 86400))
        assert thirty_years.status_code == 401
        assert whoami(server, assertion(exp=now + 25 * 3600)).status_code == 401
        # With `iat`, its own age rule applies instead.
        assert whoami(server, assertion(iat=now, exp=now + 25 * 3600)).status_code == 200
    with portal(
        portal_data.path, tmp_path / "jwt-week.log", PORTAL_ACCESS_JWT_MAX_LIFETIME="604800"
    ) as server:
        assert whoami(server, assertion(exp=now + 25 * 3600)).status_code == 200
