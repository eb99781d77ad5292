"""Strangers cannot evict a pending passkey login (issue 31.5), against a real `svc-stub service`
behind a proxy on 127.0.0.1 (so each `X-Forwarded-For` is a remote address of its own): 300
addresses asking for login options as fast as they may do not cost a victim its challenge, the
flood is in the security log, and a login over a missing challenge is no failed credential."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx

from tests.e2e import e2e_fixture
from tests.service.authenticator import SoftwareAuthenticator
from tests.service.conftest import TOKEN
from tests.service.test_e2e import PROXIED, remote_client, security_events, stop
from tests.service.test_e2e_guard import PREFIX, service
from tests.support import Server

STRANGERS = [f"10.20.{n // 100}.{n % 100 + 1}" for n in range(300)]
OPTIONS_EACH = 4
"""300 addresses x 4 options: more than the 1,024 challenges the table holds."""


@e2e_fixture()
def flooded_service(demo_db: Path, tmp_path: Path) -> Iterator[Server]:
    with service(demo_db, tmp_path / "flood.log", **PROXIED) as server:
        yield server


def browser(server: Server, address: str) -> httpx.Client:
    """A browser on the dashboard's own origin at a remote `address`."""
    port = server.base_url.rsplit(":", 1)[1]
    client = remote_client(server, address)
    client.headers.update({"Host": f"localhost:{port}", "Origin": f"http://localhost:{port}"})
    return client


def login_options(client: httpx.Client) -> dict[str, Any]:
    response = client.post(f"{PREFIX}/login/options")
    assert response.status_code == 200, response.text
    data: dict[str, Any] = response.json()["data"]
    return data


def test_an_options_flood_keeps_a_pending_login_and_is_logged(flooded_service: Server) -> None:
    server = flooded_service
    origin = f"http://localhost:{server.base_url.rsplit(':', 1)[1]}"
    key = SoftwareAuthenticator()
    with browser(server, "192.0.2.99") as operator:
        assert operator.post("/api/v1/auth/login", json={"token": TOKEN}).status_code == 200
        creation = operator.post(f"{PREFIX}/register/options").json()["data"]
        body = {"label": "laptop", "credential": key.attest(creation, origin)}
        assert operator.post(f"{PREFIX}/register", json=body).status_code == 201

    with browser(server, "198.51.100.1") as victim, browser(server, "10.0.0.1") as flood:
        pending = login_options(victim)
        statuses = [
            flood.post(f"{PREFIX}/login/options", headers={"X-Forwarded-For": stranger}).status_code
            for stranger in STRANGERS
            for _ in range(OPTIONS_EACH)
        ]
        answer = victim.post(f"{PREFIX}/login", json={"credential": key.assertion(pending, origin)})
        assert answer.status_code == 200, answer.text
        assert "svc_session" in victim.cookies
    log = stop(server)
    assert statuses.count(200) >= 1024
    events = security_events(log)
    floods = [e for e in events if e["event"] == "challenge_flood"]
    assert floods
    assert {e["reason"] for e in floods} == {"challenge_table_full"}
    assert {e["client"] for e in floods} <= set(STRANGERS)
    assert not [e for e in events if e["event"] == "auth_failure"]


def test_a_login_over_a_missing_challenge_is_not_a_failure(flooded_service: Server) -> None:
    server = flooded_service
    origin = f"http://localhost:{server.base_url.rsplit(':', 1)[1]}"
    key = SoftwareAuthenticator()
    with browser(server, "198.51.100.2") as client:
        made_up = {"challenge": "AAAAAAAAAAAAAAAAAAAAAA", "rpId": "localhost"}
        statuses = [
            client.post(
                f"{PREFIX}/login", json={"credential": key.assertion(made_up, origin)}
            ).status_code
            for _ in range(9)
        ]
        # Nine tries, more than the lockout's eight: never counted, never locked.
        assert client.post("/api/v1/auth/login", json={"token": TOKEN}).status_code == 200
    log = stop(server)
    assert statuses == [400] * 9
    assert not [e for e in security_events(log) if e["event"] in ("auth_failure", "lockout")]
