"""The `Host` allow-list: a DNS-rebinding page (another name pointed at 127.0.0.1) reads nothing."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from starlette.testclient import TestClient

from server_stub.hosts import host_name
from server_stub.service.app import create_app
from server_stub.service.settings import ServiceSettings, StartupRefused, load_settings
from tests.service.conftest import BEARER, TOKEN
from tests.service.test_e2e_guard import service

FOREIGN = ["attacker.example", "attacker.example:8080", "127.0.0.1.attacker.example", "localhos"]
LOOPBACK = ["localhost", "LocalHost:8080", "localhost.", "127.0.0.1", "127.0.0.1:1", "127.9.8.7"]
LOOPBACK += ["[::1]", "[::1]:8080"]


def client_for(db: Path, *, bound_host: str | None = None, **settings: str) -> TestClient:
    configured = ServiceSettings(api_token=TOKEN, db_path=db, **settings)  # type: ignore[arg-type]
    return TestClient(create_app(configured, bound_host=bound_host))


def system(client: TestClient, host: str) -> httpx.Response:
    return client.get("/api/v1/system", headers={**BEARER, "Host": host})


def test_only_loopback_names_are_answered_by_default(demo_db: Path) -> None:
    client = client_for(demo_db)
    for host in LOOPBACK:
        assert system(client, host).status_code == 200, host
    for host in [*FOREIGN, "testserver", "[::2]", "-", "a/b", "x:y"]:
        response = system(client, host)
        assert response.status_code == 421, host
        assert response.json()["ok"] is False
        assert response.json()["error"]["code"] == "misdirected_request"
        assert host not in response.text
    # Every route, the page and the login too; only the health probes answer any name.
    for path in ("/", "/openapi.json", "/api/v1/auth/status"):
        assert client.get(path, headers={"Host": "attacker.example"}).status_code == 421
    login = client.post(
        "/api/v1/auth/login", json={"token": TOKEN}, headers={"Host": "attacker.example"}
    )
    assert login.status_code == 421
    assert "set-cookie" not in login.headers
    for path in ("/health/live", "/health/ready"):
        assert client.get(path, headers={"Host": "203.0.113.5"}).status_code == 200


def test_configured_names_and_the_bound_address_are_answered(demo_db: Path) -> None:
    client = client_for(
        demo_db,
        bound_host="192.0.2.10",
        allowed_hosts="svc.example.com, Dash.Example.org",
        webauthn_origin="https://passkeys.example.net:8443",
    )
    for host in [
        "svc.example.com",
        "dash.example.org:443",
        "passkeys.example.net:8443",
        "192.0.2.10:8080",
    ]:
        assert system(client, host).status_code == 200, host
    for host in ["example.com", "evil.svc.example.com.attacker.example", "192.0.2.11"]:
        assert system(client, host).status_code == 421, host
    v6 = client_for(demo_db, bound_host="2001:db8::7")
    assert system(v6, "[2001:db8::7]:8080").status_code == 200
    assert system(v6, "[2001:db8::8]").status_code == 421
    wildcard = client_for(demo_db, bound_host="0.0.0.0")
    assert system(wildcard, "0.0.0.0").status_code == 421
    assert system(wildcard, "localhost").status_code == 200


def test_host_names_are_parsed_strictly() -> None:
    assert host_name("[::1]:8080") == "::1"
    assert host_name("LOCALHOST.:80") == "localhost"
    for bad in ("", "[::1", "[::1]x", "a:b", "a b", "a/b", "user@host", ":80"):
        assert host_name(bad) is None, bad


def test_a_malformed_allowed_hosts_value_stops_start_up(monkeypatch: pytest.MonkeyPatch) -> None:
    for bad in ("svc.example.com, https://svc.example.com/", "2001:db8::5", "a b"):
        monkeypatch.setenv("SERVICE_ALLOWED_HOSTS", bad)
        with pytest.raises(StartupRefused, match=r"SERVICE_ALLOWED_HOSTS: .*IPv6 in brackets"):
            load_settings()
    monkeypatch.setenv("SERVICE_ALLOWED_HOSTS", " svc.example.com ,, [2001:db8::5] ")
    assert load_settings().allowed_host_names == ["svc.example.com", "[2001:db8::5]"]


@pytest.mark.e2e
def test_a_rebinding_page_reads_nothing_from_a_real_process(demo_db: Path, tmp_path: Path) -> None:
    env = {"SERVICE_ALLOWED_HOSTS": "svc.example.test"}
    with (
        service(demo_db, tmp_path / "hosts.log", **env) as server,
        httpx.Client(base_url=server.base_url, headers=BEARER, timeout=10) as http,
    ):
        rebound = http.get("/api/v1/system", headers={"Host": "attacker.example:8080"})
        assert rebound.status_code == 421
        assert rebound.json()["error"]["code"] == "misdirected_request"
        assert http.get("/api/v1/system").status_code == 200  # Host: 127.0.0.1:PORT
        named = http.get("/api/v1/system", headers={"Host": "svc.example.test"})
        assert named.status_code == 200
        probe = http.get("/health/ready", headers={"Host": "10.0.0.7:8080"})
        assert probe.status_code == 200
