"""The guard's address rules against a real `svc-stub service` process on loopback: IPv6 clients
counted per /64, and one address's share of the login budget."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.service.conftest import TOKEN, WRONG
from tests.service.test_e2e import PROXIED, client_from, remote_client, security_events, stop
from tests.support import PORT, Server, running_server

pytestmark = pytest.mark.e2e

PREFIX = "/api/v1/auth/passkey"


@contextlib.contextmanager
def service(db: Path, log: Path, *, host: str = "127.0.0.1", **env: str) -> Iterator[Server]:
    command = ["-m", "server_stub.service", "service", "--db", str(db), "--host", host]
    with running_server(
        [*command, "--port", PORT],
        log_path=log,
        ready_path="/health/live",
        env={"SERVICE_API_TOKEN": TOKEN, **env},
        host=f"[{host}]" if ":" in host else host,
    ) as server:
        yield server


def test_ipv6_clients_share_one_budget_per_64(demo_db: Path, tmp_path: Path) -> None:
    with service(demo_db, tmp_path / "v6.log", host="::1", SERVICE_TRUST_PROXY="1") as server:
        with httpx.Client(base_url=server.base_url, timeout=10) as client:

            def system(source: str, token: str) -> int:
                headers = {"X-API-Token": token, "X-Forwarded-For": source}
                return client.get("/api/v1/system", headers=headers).status_code

            # One host of 2001:db8:1:2::/64 per guess: the /64 locks on the eighth.
            guesses = [system(f"2001:db8:1:2::{n + 1:x}", WRONG) for n in range(8)]
            assert guesses == [401] * 7 + [429]
            assert system("2001:db8:1:2:ffff:ffff:ffff:fffe", TOKEN) == 429
            assert system("2001:db8:1:3::1", TOKEN) == 200
            assert client.get("/api/v1/system", headers={"X-API-Token": TOKEN}).status_code == 200
        log = stop(server)
    lockouts = [e["client"] for e in security_events(log) if e["event"] == "lockout"]
    assert lockouts == ["2001:db8:1:2::/64"]


def test_an_ipv6_loopback_peer_is_its_local_user(demo_db: Path, tmp_path: Path) -> None:
    with service(demo_db, tmp_path / "v6-peer.log", host="::1") as server:
        with httpx.Client(base_url=server.base_url, timeout=10) as client:
            wrong = {"X-API-Token": WRONG}
            assert [client.get("/api/v1/system", headers=wrong).status_code for _ in range(8)] == [
                401
            ] * 7 + [429]
        log = stop(server)
    assert [e["client"] for e in security_events(log) if e["event"] == "lockout"] == [
        "loopback:uid=0"
    ]


def test_one_flooding_address_cannot_close_logins_for_others(demo_db: Path, tmp_path: Path) -> None:
    with service(demo_db, tmp_path / "flood.log", **PROXIED) as server:
        # A name, not the address: passkey options need a host that can be an RP id.
        named = {"Host": f"localhost:{server.base_url.rsplit(':', 1)[1]}"}
        with remote_client(server, "192.0.2.2") as flooder:
            options = [
                flooder.post(f"{PREFIX}/login/options", headers=named).status_code
                for _ in range(60)
            ]
        with remote_client(server, "192.0.2.4") as garbler:
            garbage = [garbler.post("/api/v1/auth/login", json={"tok": "en"}) for _ in range(60)]
        with remote_client(server, "192.0.2.3") as honest:
            assert honest.post(f"{PREFIX}/login/options", headers=named).status_code == 200
            login = honest.post("/api/v1/auth/login", json={"token": TOKEN})
            assert login.status_code == 200
        log = stop(server)
    assert options == [200] * 10 + [429] * 50
    assert [r.status_code for r in garbage] == [400] * 7 + [429] * 53
    assert {r.json()["error"]["code"] for r in garbage[7:]} == {"locked_out"}
    assert [e["client"] for e in security_events(log) if e["event"] == "lockout"] == ["192.0.2.4"]
    assert TOKEN not in log


def test_six_addresses_asking_for_options_cannot_close_logins(
    demo_db: Path, tmp_path: Path
) -> None:
    """Options carry no credential: each address spends only its own allowance, so six of them
    at full speed leave the shared login budget untouched; the flood is logged by its size."""
    with service(demo_db, tmp_path / "options.log", **PROXIED) as server:
        named = {"Host": f"localhost:{server.base_url.rsplit(':', 1)[1]}"}
        for sender in range(6):
            with remote_client(server, f"192.0.2.{31 + sender}") as flooder:
                statuses = [
                    flooder.post(f"{PREFIX}/login/options", headers=named).status_code
                    for _ in range(11)
                ]
                assert statuses == [200] * 10 + [429]
        with remote_client(server, "192.0.2.37") as honest:
            assert honest.post("/api/v1/auth/login", json={"token": TOKEN}).status_code == 200
            assert honest.post(f"{PREFIX}/login/options", headers=named).status_code == 200
        log = stop(server)
    refused = [e for e in security_events(log) if e["event"] == "options_limit"]
    assert [e["addresses_refused"] for e in refused] == [1, 2, 3, 4, 5, 6]
    assert not [e for e in security_events(log) if e["event"] == "flood_limit"]


def test_options_with_a_host_that_names_no_relying_party_are_not_charged(
    demo_db: Path, tmp_path: Path
) -> None:
    with service(demo_db, tmp_path / "options-host.log") as server:
        named = {"Host": f"localhost:{server.base_url.rsplit(':', 1)[1]}"}
        with client_from(server, "127.0.0.38") as client:
            unnamed = [client.post(f"{PREFIX}/login/options").status_code for _ in range(12)]
            assert unnamed == [400] * 12  # 127.0.0.1 is an address: no relying party
            assert client.post(f"{PREFIX}/login/options", headers=named).status_code == 200


def test_forwarded_for_counts_only_from_a_listed_proxy(demo_db: Path, tmp_path: Path) -> None:
    with service(
        demo_db,
        tmp_path / "proxies.log",
        SERVICE_TRUST_PROXY="1",
        SERVICE_TRUSTED_PROXY_ADDRESSES="127.0.0.50, 10.0.0.0/8",
    ) as server:
        wrong = {"X-API-Token": WRONG}
        with client_from(server, "127.0.0.51") as direct:
            # Reaching the port directly, a client cannot pick a fresh bucket per guess.
            guesses = [
                direct.get(
                    "/api/v1/system", headers={**wrong, "X-Forwarded-For": f"192.0.2.{n}"}
                ).status_code
                for n in range(8)
            ]
        with client_from(server, "127.0.0.50") as proxy:
            relayed = proxy.get(
                "/api/v1/system", headers={**wrong, "X-Forwarded-For": "203.0.113.9"}
            )
        log = stop(server)
    assert guesses == [401] * 7 + [429]
    assert relayed.status_code == 401
    events = security_events(log)
    assert [e["client"] for e in events if e["event"] == "lockout"] == ["loopback:uid=0"]
    assert "203.0.113.9" in {e["client"] for e in events if e["event"] == "auth_failure"}
    assert "SERVICE_TRUSTED_PROXY_ADDRESSES" not in log


def test_proxy_trust_without_a_proxy_list_is_announced_at_start(
    demo_db: Path, tmp_path: Path
) -> None:
    with service(demo_db, tmp_path / "trust.log", SERVICE_TRUST_PROXY="1") as server:
        log = stop(server)
    assert "SERVICE_TRUST_PROXY=1 without SERVICE_TRUSTED_PROXY_ADDRESSES" in log


def test_a_basic_authorization_header_leaves_the_session_cookie_in_charge(
    demo_db: Path, tmp_path: Path
) -> None:
    """A browser behind a Basic-auth edge sends `Authorization: Basic ...` on every request."""
    with service(demo_db, tmp_path / "basic.log") as server:
        with client_from(server, "127.0.0.60") as browser:
            assert browser.post("/api/v1/auth/login", json={"token": TOKEN}).status_code == 200
            basic = {"Authorization": "Basic ZWRnZTp1c2Vy"}
            statuses = [browser.get("/api/v1/system", headers=basic).status_code for _ in range(10)]
        log = stop(server)
    assert statuses == [200] * 10
    assert not [e for e in security_events(log) if e["event"] == "auth_failure"]
