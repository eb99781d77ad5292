"""Against a real `svc-stub service` process on loopback (python -m server_stub.service)."""

from __future__ import annotations

import json
import socket
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.service.conftest import TOKEN, WRONG
from tests.service.test_routes import DATA_ROUTES
from tests.support import PORT, ROOT, Server, running_server

pytestmark = pytest.mark.e2e

SESSION_DB_TABLES = ("system_state", "positions", "orders", "fills", "risk_limits", "events")


def start(db: Path, log: Path, **env: str) -> Iterator[Server]:
    with running_server(
        ["-m", "server_stub.service", "service", "--db", str(db), "--port", PORT],
        log_path=log,
        ready_path="/health/live",
        env={"SERVICE_API_TOKEN": TOKEN, **env},
    ) as server:
        yield server


@pytest.fixture
def server(demo_db: Path, tmp_path: Path) -> Iterator[Server]:
    yield from start(demo_db, tmp_path / "server.log")


def client_from(server: Server, source: str) -> httpx.Client:
    return httpx.Client(
        base_url=server.base_url,
        transport=httpx.HTTPTransport(local_address=source),
        timeout=10.0,
    )


PROXIED = {"SERVICE_TRUST_PROXY": "1", "SERVICE_TRUSTED_PROXY_ADDRESSES": "127.0.0.1"}
"""A service behind a proxy on 127.0.0.1: how a test plays many remote addresses, since every
loopback address of one local user is one client."""


def remote_client(server: Server, address: str) -> httpx.Client:
    """A client at the remote `address`, relayed by the proxy on 127.0.0.1 (`PROXIED`)."""
    return httpx.Client(
        base_url=server.base_url,
        transport=httpx.HTTPTransport(local_address="127.0.0.1"),
        headers={"X-Forwarded-For": address},
        timeout=10.0,
    )


def stop(server: Server) -> str:
    server.process.terminate()
    server.process.wait(timeout=10)
    return server.log()


def security_events(log: str) -> list[dict[str, object]]:
    events = []
    for line in log.splitlines():
        if line.startswith("{") and '"event"' in line:
            events.append(json.loads(line))
    return events


def test_brute_force_locks_exactly_the_addresses_that_crossed_the_line(
    demo_db: Path, tmp_path: Path
) -> None:
    for server in start(demo_db, tmp_path / "addresses.log", **PROXIED):
        _lock_exactly_the_addresses_that_crossed_the_line(server)


def _lock_exactly_the_addresses_that_crossed_the_line(server: Server) -> None:
    wrong = {"Authorization": f"Bearer {WRONG}"}
    right = {"X-API-Token": TOKEN}
    plan = {
        "192.0.2.2": 8,  # crosses the line on the 8th
        "192.0.2.3": 7,  # stays just below it
        "192.0.2.4": 15,  # crosses it and keeps trying
        "192.0.2.5": 0,  # only missing credentials
        "192.0.2.6": 7,  # then logs in, which clears the counter, then 7 more
    }
    statuses: dict[str, list[int]] = {}
    for source, failures in plan.items():
        with remote_client(server, source) as client:
            statuses[source] = [
                client.get("/api/v1/orders", headers=wrong).status_code for _ in range(failures)
            ]
            if source == "192.0.2.5":
                statuses[source] = [client.get("/api/v1/system").status_code for _ in range(40)]
            if source == "192.0.2.6":
                assert client.post("/api/v1/auth/login", json={"token": TOKEN}).status_code == 200
                statuses[source] += [
                    client.post("/api/v1/auth/login", json={"token": WRONG}).status_code
                    for _ in range(7)
                ]
    assert statuses["192.0.2.2"] == [401] * 7 + [429]
    assert statuses["192.0.2.3"] == [401] * 7
    assert statuses["192.0.2.4"] == [401] * 7 + [429] * 8
    assert statuses["192.0.2.5"] == [401] * 40
    assert statuses["192.0.2.6"] == [401] * 14

    for source in ("192.0.2.1", "192.0.2.3", "192.0.2.5", "192.0.2.6", "192.0.2.7"):
        with remote_client(server, source) as client:
            assert client.get("/api/v1/system", headers=right).status_code == 200, source
    for source in ("192.0.2.2", "192.0.2.4"):
        with remote_client(server, source) as client:
            response = client.get("/api/v1/system", headers=right)
            assert response.status_code == 429, source
            assert 880 <= int(response.headers["Retry-After"]) <= 900
            assert response.json()["error"]["code"] == "locked_out"
            assert client.get("/health/ready").status_code == 200

    log = stop(server)
    lockouts = [e["client"] for e in security_events(log) if e["event"] == "lockout"]
    assert sorted(lockouts) == ["192.0.2.2", "192.0.2.4"]
    failures = [e for e in security_events(log) if e["event"] == "auth_failure"]
    assert {e["client"] for e in failures} == {"192.0.2.2", "192.0.2.3", "192.0.2.4", "192.0.2.6"}
    assert TOKEN not in log
    assert WRONG not in log


def test_no_secret_in_any_response_or_in_the_log(server: Server) -> None:
    secrets_seen: list[str] = [TOKEN]
    bodies: list[str] = []
    with client_from(server, "127.0.0.1") as client:
        login = client.post(
            "/api/v1/auth/login", json={"token": TOKEN}, headers={"Origin": server.base_url}
        )
        assert login.status_code == 200
        session_id = client.cookies["svc_session"]
        secrets_seen.append(session_id)
        bodies.append(login.text)
        probes = [
            ("GET", "/health/live", {}),
            ("GET", "/health/ready", {}),
            ("GET", "/api/v1/auth/status", {}),
            ("GET", "/", {}),
            ("GET", "/static/shell.js", {}),
            ("GET", f"/api/v1/system?token={TOKEN}", {"Authorization": f"Bearer {TOKEN}"}),
            ("GET", "/api/v1/orders?limit=0", {"X-API-Token": TOKEN}),
            ("POST", "/api/v1/system", {"X-API-Token": TOKEN}),
            ("GET", "/api/v1/system", {"X-API-Token": TOKEN + "x"}),
            ("GET", "/api/v1/system", {"Authorization": f"Basic {TOKEN}"}),
            ("GET", "/api/v1/nope", {"X-API-Token": TOKEN}),
        ]
        for method, path, headers in probes:
            response = client.request(method, path, headers=headers)
            bodies.append(response.text)
            bodies.append(json.dumps(dict(response.headers)))
        for path in DATA_ROUTES:
            response = client.get(path)  # by session cookie
            assert response.status_code == 200
            bodies.append(response.text)
            bodies.append(json.dumps(dict(response.headers)))
        # A token pasted into a path: neither the 404 message nor the log may keep it.
        pasted = client.get(f"/api/v1/{TOKEN}")
        assert pasted.status_code == 404
        bodies.append(pasted.text)
        wrong_login = client.post("/api/v1/auth/login", json={"token": TOKEN[:-1] + "!"})
        bodies.append(wrong_login.text)
        logout = client.post("/api/v1/auth/logout", headers={"Origin": server.base_url})
        assert logout.status_code == 200
        bodies.append(logout.text)
    log = stop(server)
    assert '"event":"login"' in log
    assert '"event":"logout"' in log
    for secret in secrets_seen:
        for text in bodies:
            assert secret not in text
        assert secret not in log
    assert TOKEN[:-1] not in log


def test_local_admin_changes_state_and_no_http_request_can(
    server: Server, demo_db: Path, tmp_path: Path
) -> None:
    def state() -> dict[str, list[tuple[object, ...]]]:
        # Read-only: a read-write connection closing last would remove the WAL files the
        # confined service cannot make again (a read-only one can never checkpoint).
        with sqlite3.connect(f"file:{demo_db}?mode=ro", uri=True) as connection:
            return {
                table: connection.execute(f"SELECT * FROM {table}").fetchall()  # noqa: S608
                for table in SESSION_DB_TABLES
            }

    before = state()
    with client_from(server, "127.0.0.1") as client:
        assert client.post("/api/v1/auth/login", json={"token": TOKEN}).status_code == 200
        auth = {"Authorization": f"Bearer {TOKEN}", "Origin": server.base_url}
        paths = [
            "/api/v1/system",
            "/api/v1/system/pause",
            "/api/v1/pause",
            "/api/v1/resume",
            "/api/v1/flatten",
            "/api/v1/admin/pause",
            "/api/v1/admin/service/flatten",
            "/admin/pause",
            "/api/v1/orders",
            "/api/v1/positions",
            "/api/v1/positions/AAPL",
            "/api/v1/risk",
            "/api/v1/auth/login",
        ]
        bodies = [
            {"mode": "paused"},
            {"action": "flatten"},
            {"symbol": "AAPL", "side": "buy", "quantity": 100, "type": "market"},
        ]
        tricks = [
            {},
            {"X-HTTP-Method-Override": "POST"},
            {"X-HTTP-Method-Override": "DELETE"},
            {"X-Admin": "1"},
            {"X-Forwarded-For": "127.0.0.1"},
        ]
        for path in paths:
            for method in ("POST", "PUT", "PATCH", "DELETE"):
                for trick in tricks:
                    for body in bodies:
                        response = client.request(
                            method, path, json=body, headers={**auth, **trick}
                        )
                        # Malformed login bodies count as failures: the address is soon
                        # rate-limited, then locked out.
                        refusals = (
                            (400, 404, 405, 429) if path.endswith("/login") else (400, 404, 405)
                        )
                        assert response.status_code in refusals, (method, path, trick)
            for trick in tricks:
                for query in ("?action=pause", "?mode=paused", "?flatten=1", ""):
                    response = client.get(path + query, headers={**auth, **trick})
                    assert response.status_code in (200, 400, 404, 405)
    # The tricks above locked this local user out (malformed login bodies count as failures);
    # the lockout lives in the process, the state in the database: a fresh process reads it.
    stop(server)
    assert state() == before
    for fresh in start(demo_db, tmp_path / "fresh.log"):
        _admin_changes_what_http_reads(fresh, demo_db, auth)


def _admin_changes_what_http_reads(server: Server, demo_db: Path, auth: dict[str, str]) -> None:
    with client_from(server, "127.0.0.9") as client:
        assert client.get("/api/v1/system", headers=auth).json()["data"]["mode"] == "running"

    def admin(action: str) -> str:
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "server_stub.service",
                "admin",
                "service",
                action,
                "--db",
                str(demo_db),
                "--reason",
                "e2e test",
            ],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=ROOT,
            check=False,
        )
        assert result.returncode == 0, result.stderr
        return result.stdout

    with client_from(server, "127.0.0.9") as client:
        headers = {"X-API-Token": TOKEN}

        def system() -> dict[str, object]:
            data = client.get("/api/v1/system", headers=headers).json()["data"]
            assert isinstance(data, dict)
            return data

        assert "paused" in admin("pause")
        assert system()["mode"] == "paused"
        assert system()["trading_enabled"] is False
        assert "already paused" in admin("pause")
        assert "resumed" in admin("resume")
        assert system()["mode"] == "running"
        assert "flattened" in admin("flatten")
        assert system()["open_positions"] == 0
        assert system()["mode"] == "paused"
        kinds = [
            e["kind"]
            for e in client.get("/api/v1/events?limit=20", headers=headers).json()["data"]
            if e["source"] == "admin"
        ]
        assert kinds[0] == "positions_flattened"
        assert {"system_paused", "system_resumed", "position_closed"} <= set(kinds)


def test_bad_input_over_the_wire_gets_4xx_envelopes(server: Server) -> None:
    host, port = server.base_url.removeprefix("http://").split(":")

    def raw(request: bytes) -> tuple[int, dict[str, object]]:
        with socket.create_connection((host, int(port)), timeout=10) as sock:
            sock.sendall(request)
            data = b""
            while b"\r\n\r\n" not in data:
                data += sock.recv(65536)
            head, _, rest = data.partition(b"\r\n\r\n")
            length = next(
                int(line.split(b":", 1)[1])
                for line in head.split(b"\r\n")
                if line.lower().startswith(b"content-length:")
            )
            while len(rest) < length:
                rest += sock.recv(65536)
            return int(head.split(b" ")[1]), json.loads(rest[:length])

    chunk = b"a" * 16384
    chunked = b"".join(b"%x\r\n%s\r\n" % (len(chunk), chunk) for _ in range(6)) + b"0\r\n\r\n"
    status, body = raw(
        b"POST /api/v1/auth/login HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
        b"Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n" + chunked
    )
    assert (status, body["error"]) == (
        413,
        {"code": "payload_too_large", "message": body["error"]["message"]},
    )  # type: ignore[index]
    status, body = raw(
        b"POST /api/v1/auth/login HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
        b"Content-Length: 5\r\nConnection: close\r\n\r\n{tok}"
    )
    assert status == 400
    assert body["ok"] is False
    with client_from(server, "127.0.0.9") as client:
        headers = {"X-API-Token": TOKEN}
        for path in ("/api/v1/orders?limit=-5", "/api/v1/fills?cursor=%FF", "/api/v1/pnl?since=x"):
            response = client.get(path, headers=headers)
            assert response.status_code == 400
            assert response.json()["ok"] is False
        huge = client.post(
            "/api/v1/auth/login",
            content=b"{" + b" " * 70_000 + b"}",
            headers={"Content-Type": "application/json"},
        )
        assert huge.status_code == 413
        assert huge.json()["error"]["code"] == "payload_too_large"
        tall = client.get("/api/v1/system", headers={**headers, "X-Pad": "p" * 9000})
        assert tall.status_code == 431
    log = stop(server)
    assert "Traceback" not in log


def test_trusted_proxy_mode_uses_the_forwarded_address_not_uvicorns(
    demo_db: Path, tmp_path: Path
) -> None:
    for proxied in start(demo_db, tmp_path / "proxy.log", SERVICE_TRUST_PROXY="1"):
        with client_from(proxied, "127.0.0.1") as proxy:
            for _ in range(8):
                proxy.get(
                    "/api/v1/system",
                    headers={"X-API-Token": WRONG, "X-Forwarded-For": "6.6.6.6, 203.0.113.9"},
                )
            locked = proxy.get(
                "/api/v1/system", headers={"X-API-Token": TOKEN, "X-Forwarded-For": "203.0.113.9"}
            )
            assert locked.status_code == 429
            other = proxy.get(
                "/api/v1/system", headers={"X-API-Token": TOKEN, "X-Forwarded-For": "203.0.113.10"}
            )
            assert other.status_code == 200
            assert proxy.get("/api/v1/system", headers={"X-API-Token": TOKEN}).status_code == 200
        log = stop(proxied)
        assert [e["client"] for e in security_events(log) if e["event"] == "lockout"] == [
            "203.0.113.9"
        ]


def test_without_proxy_trust_a_forwarded_header_changes_nothing(server: Server) -> None:
    with client_from(server, "127.0.0.8") as client:
        for index in range(8):
            client.get(
                "/api/v1/system",
                headers={"X-API-Token": WRONG, "X-Forwarded-For": f"127.0.0.{20 + index}"},
            )
    with client_from(server, "127.0.0.8") as client:
        response = client.get(
            "/api/v1/system", headers={"X-API-Token": TOKEN, "X-Forwarded-For": "127.0.0.9"}
        )
        assert response.status_code == 429
    log = stop(server)
    assert [e["client"] for e in security_events(log) if e["event"] == "lockout"] == [
        "loopback:uid=0"
    ]


def test_an_admin_command_beside_a_fresh_service_leaves_it_its_wal_files(
    server: Server, demo_db: Path
) -> None:
    """Before its first request the service holds no connection, so the admin command's would be
    the last to close, and SQLite would remove `<db>-wal` and `<db>-shm`, which the confined
    service may use but never make again (it answered 503 from then on)."""
    done = subprocess.run(
        [
            *(sys.executable, "-m", "server_stub.service", "admin", "service", "pause"),
            *("--db", str(demo_db), "--reason", "beside a fresh service"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert demo_db.with_name(demo_db.name + "-wal").exists()
    assert demo_db.with_name(demo_db.name + "-shm").exists()
    auth = {"Authorization": f"Bearer {TOKEN}"}
    with client_from(server, "127.0.0.1") as client:
        answer = client.get("/api/v1/system", headers=auth)
    assert answer.status_code == 200, answer.text
    assert answer.json()["data"]["mode"] == "paused"


def test_a_second_service_on_the_same_file_leaves_the_first_its_wal_files(
    server: Server, demo_db: Path, tmp_path: Path
) -> None:
    """A second service's start-up (switching to WAL, then closing) found the first holding no
    connection before its first request, so its close was the last and SQLite removed
    `<db>-wal` and `<db>-shm`; the second made them again, and the first, confined to the old
    files, answered 503 from then on (two stubs on one file: the benchmarks, a small deployment)."""
    auth = {"Authorization": f"Bearer {TOKEN}"}
    wal = demo_db.with_name(demo_db.name + "-wal")
    first_wal = wal.stat().st_ino
    for second in start(demo_db, tmp_path / "second.log"):
        assert wal.stat().st_ino == first_wal
        for each in (server, second, server):
            with client_from(each, "127.0.0.1") as client:
                answer = client.get("/api/v1/system", headers=auth)
            assert answer.status_code == 200, answer.text
