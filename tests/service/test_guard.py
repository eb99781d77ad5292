"""The brute-force guard's state machine (spec 2, sections 3, 7, 8), driven by a fake clock."""

from __future__ import annotations

import json
import logging

import pytest
from starlette.testclient import TestClient

from server_stub.service.guard import (
    FAILURE_WINDOW_SECONDS,
    LOCKOUT_SECONDS,
    BruteForceGuard,
    LoginFloodLimit,
    LoginRefused,
    SenderLimit,
)
from tests.service.conftest import (
    BEARER,
    TOKEN,
    WRONG,
    FakeClock,
    MakeService,
    ServiceUnderTest,
)


def wrong_bearer(client: TestClient) -> int:
    return client.get("/api/v1/system", headers={"Authorization": f"Bearer {WRONG}"}).status_code


def wrong_login(client: TestClient) -> int:
    return client.post("/api/v1/auth/login", json={"token": WRONG}).status_code


def good_login(client: TestClient) -> int:
    return client.post("/api/v1/auth/login", json={"token": TOKEN}).status_code


# --- the guard on its own ----------------------------------------------------------------------


def test_seven_failures_then_success_clears_the_counter() -> None:
    clock = FakeClock()
    guard = BruteForceGuard(clock)
    for _ in range(7):
        assert guard.record_failure("10.0.0.1", via="login").retry_after is None
    assert guard.failures("10.0.0.1") == 7
    guard.record_success("10.0.0.1")
    assert guard.failures("10.0.0.1") == 0
    # A cleared counter needs eight fresh failures again.
    for _ in range(7):
        assert guard.record_failure("10.0.0.1", via="login").retry_after is None
    assert guard.retry_after("10.0.0.1") is None


def test_eighth_failure_locks_and_retry_after_counts_down_to_unlock_at_exactly_15_minutes() -> None:
    clock = FakeClock()
    guard = BruteForceGuard(clock)
    for _ in range(7):
        guard.record_failure("10.0.0.1", via="authorization")
    outcome = guard.record_failure("10.0.0.1", via="authorization")
    assert outcome.failures == 8
    assert outcome.retry_after == LOCKOUT_SECONDS == 900
    assert guard.retry_after("10.0.0.1") == 900
    clock.advance(0.4)
    assert guard.retry_after("10.0.0.1") == 900  # ceil of 899.6
    clock.advance(299.6)
    assert guard.retry_after("10.0.0.1") == 600
    clock.advance(599.5)
    assert guard.retry_after("10.0.0.1") == 1
    clock.advance(0.5)  # exactly 15:00 after the lock
    assert guard.retry_after("10.0.0.1") is None
    # Unlocked means counting from zero: one more failure does not lock again.
    assert guard.record_failure("10.0.0.1", via="authorization").retry_after is None
    assert guard.failures("10.0.0.1") == 1


def test_failures_spread_over_more_than_15_minutes_never_lock() -> None:
    clock = FakeClock()
    guard = BruteForceGuard(clock)
    interval = FAILURE_WINDOW_SECONDS / 7  # eight failures span exactly 15:00: the first expired
    for _ in range(50):
        assert guard.record_failure("10.0.0.1", via="login").retry_after is None
        clock.advance(interval)
    assert guard.failures("10.0.0.1") <= 7
    assert guard.retry_after("10.0.0.1") is None


def test_eight_failures_just_inside_the_window_lock() -> None:
    clock = FakeClock()
    guard = BruteForceGuard(clock)
    for _ in range(7):
        guard.record_failure("10.0.0.1", via="login")
        clock.advance((FAILURE_WINDOW_SECONDS - 1) / 7)
    assert guard.record_failure("10.0.0.1", via="login").retry_after == LOCKOUT_SECONDS


def test_addresses_are_counted_separately() -> None:
    guard = BruteForceGuard(FakeClock())
    for _ in range(8):
        guard.record_failure("10.0.0.1", via="login")
    assert guard.retry_after("10.0.0.1") is not None
    assert guard.retry_after("10.0.0.2") is None
    assert guard.failures("10.0.0.2") == 0


def test_success_during_a_lockout_does_not_lift_it() -> None:
    clock = FakeClock()
    guard = BruteForceGuard(clock)
    for _ in range(8):
        guard.record_failure("10.0.0.1", via="login")
    guard.record_success("10.0.0.1")
    assert guard.retry_after("10.0.0.1") == LOCKOUT_SECONDS


def test_failure_recorded_while_locked_neither_counts_nor_extends() -> None:
    clock = FakeClock()
    guard = BruteForceGuard(clock)
    for _ in range(8):
        guard.record_failure("10.0.0.1", via="login")
    clock.advance(100)
    outcome = guard.record_failure("10.0.0.1", via="login")
    assert outcome.retry_after == LOCKOUT_SECONDS - 100
    assert guard.retry_after("10.0.0.1") == LOCKOUT_SECONDS - 100


def test_memory_bound_evicts_oldest_counting_address_before_any_locked_one() -> None:
    clock = FakeClock()
    guard = BruteForceGuard(clock, max_tracked=4)
    for _ in range(8):
        guard.record_failure("10.0.0.1", via="login")  # locked
    for address in ("10.0.0.2", "10.0.0.3", "10.0.0.4"):
        guard.record_failure(address, via="login")
        clock.advance(1)
    guard.record_failure("10.0.0.5", via="login")
    assert guard.tracked == 4
    assert guard.failures("10.0.0.2") == 0  # the oldest counting one went
    assert guard.failures("10.0.0.3") == 1
    assert guard.retry_after("10.0.0.1") is not None  # the lock stayed


def test_memory_bound_full_of_locks_drops_the_lock_closest_to_its_end() -> None:
    clock = FakeClock()
    guard = BruteForceGuard(clock, max_tracked=2)
    for address in ("10.0.0.1", "10.0.0.2"):
        for _ in range(8):
            guard.record_failure(address, via="login")
        clock.advance(1)
    guard.record_failure("10.0.0.3", via="login")
    assert guard.tracked == 2
    assert guard.retry_after("10.0.0.1") is None
    assert guard.retry_after("10.0.0.2") is not None


def test_expired_entries_are_forgotten() -> None:
    clock = FakeClock()
    guard = BruteForceGuard(clock)
    for index in range(100):
        guard.record_failure(f"10.0.1.{index}", via="login")
    for _ in range(8):
        guard.record_failure("10.0.2.1", via="login")
    clock.advance(LOCKOUT_SECONDS)
    guard.record_failure("10.0.3.1", via="login")
    assert guard.tracked == 1


def test_flood_limit_admits_60_per_rolling_minute() -> None:
    clock = FakeClock()
    flood = LoginFloodLimit(clock)
    for index in range(60):
        assert flood.admit(f"10.0.0.{index}") is None
        clock.advance(0.5)  # 60 attempts over 30 s
    # The first admitted leaves the window at 60 s.
    assert flood.admit("10.0.1.1") == LoginRefused(30, by_address=False)
    clock.advance(29.5)
    assert flood.admit("10.0.1.1") == LoginRefused(1, by_address=False)
    clock.advance(0.5)
    assert flood.admit("10.0.1.1") is None  # the first admitted (t=0) left the window
    assert flood.admit("10.0.1.1") == LoginRefused(1, by_address=False)  # t=0.5 is still in it
    clock.advance(0.5)
    assert flood.admit("10.0.1.1") is None


def test_one_address_gets_10_of_the_60_logins_a_minute() -> None:
    clock = FakeClock()
    flood = LoginFloodLimit(clock)
    for _ in range(10):
        assert flood.admit("10.0.0.1") is None
        clock.advance(1)
    assert flood.admit("10.0.0.1") == LoginRefused(50, by_address=True)
    for index in range(50):  # the other 50 remain for everyone else
        assert flood.admit(f"10.0.1.{index}") is None
    assert flood.admit("10.0.2.1") == LoginRefused(50, by_address=False)
    clock.advance(50)
    assert flood.admit("10.0.0.1") is None


# --- the guard behind HTTP -----------------------------------------------------------------------


def test_both_header_kinds_and_wrong_logins_count(service: ServiceUnderTest) -> None:
    client = service.client()
    assert wrong_bearer(client) == 401
    assert client.get("/api/v1/system", headers={"X-API-Token": WRONG}).status_code == 401
    assert wrong_login(client) == 401
    assert service.auth.guard.failures("198.51.100.7") == 3


def test_another_authorization_scheme_is_no_credential(service: ServiceUnderTest) -> None:
    """Basic (from a Basic-auth edge in front of the browser) is not ours: it is passed over for
    the token header or the cookie, and never counted."""
    client = service.client()
    basic = {"Authorization": "Basic Zm9vOmJhcg=="}
    response = client.get("/api/v1/orders", headers=basic)
    assert response.status_code == 401
    assert response.json()["error"]["message"].startswith("authentication required")
    assert client.get("/api/v1/system", headers={**basic, "X-API-Token": TOKEN}).status_code == 200
    assert service.auth.guard.failures("198.51.100.7") == 0


def test_missing_credentials_never_count(service: ServiceUnderTest) -> None:
    client = service.client()
    stale_cookie = service.client()
    stale_cookie.cookies.set("svc_session", "expired-or-unknown")
    for _ in range(30):
        assert client.get("/api/v1/system").status_code == 401
        assert client.get("/api/v1/auth/status").status_code == 200
        assert client.get("/api/v1/events", headers={"Authorization": ""}).status_code == 401
        assert client.get("/api/v1/events", headers={"X-API-Token": " "}).status_code == 401
        assert stale_cookie.get("/api/v1/positions").status_code == 401
    assert service.auth.guard.failures("198.51.100.7") == 0
    assert client.get("/api/v1/system", headers=BEARER).status_code == 200


def test_eighth_failure_gives_429_with_retry_after_on_every_credential_route(
    service: ServiceUnderTest,
) -> None:
    client = service.client()
    for _ in range(7):
        assert wrong_bearer(client) == 401
    response = client.get("/api/v1/system", headers={"X-API-Token": WRONG})
    assert response.status_code == 429
    assert response.headers["Retry-After"] == "900"
    assert response.json()["error"]["code"] == "locked_out"
    service.clock.advance(60.2)
    for path in ("/api/v1/system", "/api/v1/orders", "/api/v1/intel"):
        locked = client.get(path, headers=BEARER)  # even the right token is not checked
        assert locked.status_code == 429
        assert locked.headers["Retry-After"] == "840"
        assert locked.json() == {
            "ok": False,
            "error": {
                "code": "locked_out",
                "message": "too many failed credentials from this address; retry after 840 seconds",
            },
        }
    assert client.get("/api/v1/system").status_code == 429
    login = client.post("/api/v1/auth/login", json={"token": TOKEN})
    assert login.status_code == 429
    assert "set-cookie" not in login.headers
    # Open routes stay open.
    assert client.get("/health/live").status_code == 200
    assert client.get("/health/ready").status_code == 200
    assert client.get("/api/v1/auth/status").json()["data"] == {
        "auth_required": True,
        "authenticated": False,
    }
    assert client.get("/api/v1/auth/status", headers=BEARER).status_code == 429


def test_lockout_ends_at_exactly_15_minutes_over_http(service: ServiceUnderTest) -> None:
    client = service.client()
    for _ in range(8):
        wrong_login(client)
    service.clock.advance(LOCKOUT_SECONDS - 0.001)
    still = client.get("/api/v1/system", headers=BEARER)
    assert (still.status_code, still.headers["Retry-After"]) == (429, "1")
    service.clock.advance(0.001)
    assert client.get("/api/v1/system", headers=BEARER).status_code == 200


def test_failures_during_lockout_do_not_extend_it(service: ServiceUnderTest) -> None:
    client = service.client()
    for _ in range(8):
        wrong_bearer(client)
    for _ in range(100):
        service.clock.advance(5)
        assert wrong_bearer(client) == 429
    service.clock.advance(LOCKOUT_SECONDS - 500)
    assert client.get("/api/v1/system", headers=BEARER).status_code == 200
    assert service.auth.guard.failures("198.51.100.7") == 0


def test_seven_failures_then_successful_login_clears(service: ServiceUnderTest) -> None:
    client = service.client()
    for _ in range(7):
        assert wrong_login(client) == 401
    assert good_login(client) == 200
    for _ in range(7):
        assert wrong_bearer(client) == 401
    assert client.get("/api/v1/system", headers=BEARER).status_code == 200


def test_successful_header_request_does_not_clear_the_counter(service: ServiceUnderTest) -> None:
    # Otherwise an attacker sharing a NAT address with a polling script would never lock.
    client = service.client()
    for _ in range(7):
        wrong_bearer(client)
    assert client.get("/api/v1/system", headers=BEARER).status_code == 200
    assert wrong_bearer(client) == 429


def test_successful_login_during_lockout_does_not_lift_it(service: ServiceUnderTest) -> None:
    client = service.client()
    for _ in range(8):
        wrong_login(client)
    assert good_login(client) == 429
    service.clock.advance(LOCKOUT_SECONDS)
    assert good_login(client) == 200


def test_global_login_flood_limit(service: ServiceUnderTest) -> None:
    # 60 login POSTs from 60 addresses within the minute: none is locked, the 61st is refused.
    for index in range(60):
        assert wrong_login(service.client(f"203.0.113.{index}")) == 401
        service.clock.advance(0.5)
    response = service.client("192.0.2.200").post("/api/v1/auth/login", json={"token": TOKEN})
    assert response.status_code == 429
    assert response.json()["error"]["code"] == "rate_limited"
    assert response.headers["Retry-After"] == "30"
    # Data routes are not login POSTs: the flood limit does not touch them.
    assert service.client("192.0.2.200").get("/api/v1/system", headers=BEARER).status_code == 200
    service.clock.advance(30)
    assert good_login(service.client("192.0.2.200")) == 200


def test_auth_disabled_means_no_guard(make_service: MakeService) -> None:
    service = make_service(token="")
    client = service.client()
    for _ in range(100):
        assert (
            client.get("/api/v1/system", headers={"Authorization": f"Bearer {WRONG}"}).status_code
            == 200
        )
        assert client.post("/api/v1/auth/login", json={"token": WRONG}).status_code == 200
    assert service.auth.guard.tracked == 0
    assert client.get("/api/v1/auth/status").json()["data"] == {
        "auth_required": False,
        "authenticated": True,
    }


def test_security_events_are_json_lines_without_secrets(
    service: ServiceUnderTest, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="server_stub.security")
    client = service.client()
    assert good_login(client) == 200
    session_id = client.cookies["svc_session"]
    for _ in range(8):
        wrong_bearer(client)
    service.clock.advance(LOCKOUT_SECONDS)
    client.get("/api/v1/system", headers=BEARER)
    for index in range(61):
        service.client(f"203.0.113.{index}").post("/api/v1/auth/login", json={"token": WRONG})
    client.cookies.set("svc_session", session_id)
    client.post("/api/v1/auth/logout", headers={"Origin": "http://testserver"})
    records = [r for r in caplog.records if r.name == "server_stub.security"]
    events = [json.loads(r.getMessage()) for r in records]
    kinds = [e["event"] for e in events]
    for kind in ("login", "auth_failure", "lockout", "unlock", "flood_limit", "logout"):
        assert kind in kinds
    assert all(e["client"] and e["reason"] for e in events)
    lockout = next(e for e in events if e["event"] == "lockout")
    assert lockout["client"] == "198.51.100.7"
    text = "\n".join(r.getMessage() for r in records)
    assert TOKEN not in text
    assert WRONG not in text
    assert session_id not in text


def test_repeated_failures_from_one_address_write_a_bounded_number_of_lines(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="server_stub.security")
    clock = FakeClock()
    guard = BruteForceGuard(clock, max_failures=10_000)
    for _ in range(10_000):
        guard.record_failure("203.0.113.9", via="login")
        clock.advance(0.01)
    clock.advance(FAILURE_WINDOW_SECONDS)
    guard.record_failure("203.0.113.10", via="login")  # the next event writes what was left out
    events = [
        json.loads(r.getMessage()) for r in caplog.records if r.name == "server_stub.security"
    ]
    mine = [e for e in events if e["client"] == "203.0.113.9"]
    assert [(e["event"], e["reason"]) for e in mine] == [
        ("auth_failure", "wrong_credential"),  # the first failure, always
        ("lockout", "too_many_failures"),  # the lockout, always
        ("auth_failure", "repeated"),
        ("unlock", "lockout_expired"),
    ]
    assert mine[0]["failures"] == 1
    assert mine[1]["failures"] == 10_000
    assert mine[2]["repeats"] == 9_999


def test_with_the_default_limits_one_address_adds_few_lines_per_window(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="server_stub.security")
    clock = FakeClock()
    guard = BruteForceGuard(clock)
    counted = 0
    while counted < 10_000:  # as fast as the guard counts them: every lockout waited out
        if guard.retry_after("203.0.113.9") is None:
            guard.record_failure("203.0.113.9", via="authorization")
            counted += 1
        clock.advance(1)
    lines = [r for r in caplog.records if r.name == "server_stub.security"]
    lockouts = sum('"event":"lockout"' in r.getMessage() for r in lines)
    assert lockouts == 10_000 // 8
    # Every lockout, and per 15-minute window one failure line, one summary and one unlock.
    assert len(lines) <= lockouts * 4
    assert len(lines) < 10_000 // 2


def test_the_options_allowance_is_each_senders_own_and_its_memory_bounded() -> None:
    clock = FakeClock()
    limit = SenderLimit(clock, per_address=2, window_seconds=60, max_tracked=3)
    assert [limit.admit("10.0.0.1") for _ in range(2)] == [None, None]
    assert limit.admit("10.0.0.1") == LoginRefused(60, by_address=True)
    assert limit.admit("10.0.0.2") is None  # another sender is not affected
    for index in range(10):
        limit.admit(f"10.0.1.{index}")
    assert limit.tracked == 3
    clock.advance(60)
    assert limit.admit("10.0.0.1") is None


def test_the_guard_knows_whether_a_loopback_key_is_locked() -> None:
    """While no loopback key is locked, a loopback peer's owner need not be asked on each request."""
    clock = FakeClock()
    guard = BruteForceGuard(clock, max_failures=2, max_tracked=2)

    def lock(key: str) -> None:
        for _ in range(2):
            guard.record_failure(key, via="authorization")

    lock("203.0.113.1")
    assert guard.has_locks
    assert not guard.has_loopback_locks
    lock("loopback:uid=4242")
    assert guard.has_loopback_locks
    clock.advance(LOCKOUT_SECONDS)
    assert guard.retry_after("loopback:uid=4242") is None
    assert not guard.has_loopback_locks
    lock("loopback")
    assert guard.has_loopback_locks
    # A full table of locks gives up the one closest to its end: the loopback one goes too.
    lock("203.0.113.2")
    lock("203.0.113.3")
    assert guard.retry_after("loopback") is None
    assert not guard.has_loopback_locks
