"""Token login, the svc_session cookie, logout, and the same-origin rule for cookie POSTs."""

from __future__ import annotations

from http.cookies import SimpleCookie

from server_stub.service.sessions import SESSION_LIFETIME_SECONDS, SessionStore
from tests.service.conftest import BEARER, TOKEN, WRONG, FakeClock, MakeService, ServiceUnderTest

SAME_ORIGIN = {"Origin": "http://testserver"}


def parse_set_cookie(header: str) -> tuple[str, dict[str, str]]:
    cookie: SimpleCookie = SimpleCookie()
    cookie.load(header)
    morsel = cookie["svc_session"]
    flags = {key: str(morsel[key]) for key in morsel if morsel[key] != ""}
    return morsel.value, flags


def test_login_sets_a_hardened_session_cookie(service: ServiceUnderTest) -> None:
    client = service.client()
    response = client.post("/api/v1/auth/login", json={"token": TOKEN})
    assert response.status_code == 200
    assert response.json() == {
        "ok": True,
        "data": {
            "auth_required": True,
            "authenticated": True,
            "session_expires_in": SESSION_LIFETIME_SECONDS,
        },
    }
    header = response.headers["set-cookie"]
    session_id, flags = parse_set_cookie(header)
    assert len(session_id) >= 43  # token_urlsafe(32): 256 random bits
    assert "HttpOnly" in header
    assert "SameSite=strict" in header
    assert flags["path"] == "/"
    assert flags["max-age"] == str(SESSION_LIFETIME_SECONDS)
    assert "secure" not in header.lower()  # plain http: a Secure cookie would never come back
    assert TOKEN not in response.text
    assert session_id not in response.text


def test_cookie_is_secure_on_https(service: ServiceUnderTest) -> None:
    response = service.client(https=True).post("/api/v1/auth/login", json={"token": TOKEN})
    assert response.status_code == 200
    assert "; Secure" in response.headers["set-cookie"]


def test_cookie_is_secure_behind_a_tls_edge_with_the_configured_origin(
    make_service: MakeService,
) -> None:
    service = make_service(webauthn_origin="https://svc.example.org")
    response = service.client().post(
        "/api/v1/auth/login", json={"token": TOKEN}, headers={"Origin": "https://svc.example.org"}
    )
    assert response.status_code == 200
    assert "; Secure" in response.headers["set-cookie"]


def test_the_session_cookie_authenticates_data_routes(service: ServiceUnderTest) -> None:
    client = service.client()
    assert client.get("/api/v1/auth/status").json()["data"]["authenticated"] is False
    client.post("/api/v1/auth/login", json={"token": TOKEN})
    assert client.get("/api/v1/system").status_code == 200
    assert client.get("/api/v1/auth/status").json()["data"] == {
        "auth_required": True,
        "authenticated": True,
    }


def test_each_login_issues_a_new_id_and_ends_the_previous_one(service: ServiceUnderTest) -> None:
    client = service.client()
    client.post("/api/v1/auth/login", json={"token": TOKEN})
    first = client.cookies["svc_session"]
    client.post("/api/v1/auth/login", json={"token": TOKEN})
    second = client.cookies["svc_session"]
    assert first != second
    old = service.client()
    old.cookies.set("svc_session", first)
    assert old.get("/api/v1/system").status_code == 401
    assert client.get("/api/v1/system").status_code == 200
    assert len(service.auth.sessions) == 1


def test_logout_ends_the_session_and_clears_the_cookie(service: ServiceUnderTest) -> None:
    client = service.client()
    client.post("/api/v1/auth/login", json={"token": TOKEN})
    session_id = client.cookies["svc_session"]
    response = client.post("/api/v1/auth/logout", headers=SAME_ORIGIN)
    assert response.status_code == 200
    assert response.json() == {"ok": True, "data": {"authenticated": False}}
    cleared = response.headers["set-cookie"]
    assert cleared.startswith('svc_session="";') or cleared.startswith("svc_session=;")
    assert "Max-Age=0" in cleared
    assert "HttpOnly" in cleared
    replay = service.client()
    replay.cookies.set("svc_session", session_id)
    assert replay.get("/api/v1/system").status_code == 401
    assert len(service.auth.sessions) == 0


def test_cookie_post_needs_a_same_origin_origin(service: ServiceUnderTest) -> None:
    client = service.client()
    client.post("/api/v1/auth/login", json={"token": TOKEN})
    for headers in (
        {},
        {"Origin": "https://evil.example"},
        {"Origin": "http://testserver.evil.example"},
        {"Origin": "http://testserver:8080"},
        {"Origin": "https://testserver"},
        {"Origin": "null"},
        {"Origin": "not a url"},
    ):
        response = client.post("/api/v1/auth/logout", headers=headers)
        assert response.status_code == 403, headers
        assert response.json()["error"]["code"] == "forbidden"
    # The session survived every refused attempt.
    assert client.get("/api/v1/system").status_code == 200
    assert (
        client.post("/api/v1/auth/logout", headers={"Origin": "HTTP://TestServer:80"}).status_code
        == 200
    )


def test_logout_without_a_session_is_harmless(service: ServiceUnderTest) -> None:
    response = service.client().post("/api/v1/auth/logout")
    assert response.status_code == 200
    assert response.json()["data"] == {"authenticated": False}


def test_login_from_a_foreign_page_is_refused_and_not_counted(service: ServiceUnderTest) -> None:
    client = service.client()
    for _ in range(20):
        response = client.post(
            "/api/v1/auth/login", json={"token": WRONG}, headers={"Origin": "https://evil.example"}
        )
        assert response.status_code == 403
    assert service.auth.guard.failures("198.51.100.7") == 0
    # Scripts send no Origin; the page itself sends its own.
    assert client.post("/api/v1/auth/login", json={"token": TOKEN}).status_code == 200
    assert (
        client.post("/api/v1/auth/login", json={"token": TOKEN}, headers=SAME_ORIGIN).status_code
        == 200
    )


def test_login_needs_a_json_body(service: ServiceUnderTest) -> None:
    client = service.client()
    form = client.post(
        "/api/v1/auth/login",
        content=f"token={TOKEN}".encode(),
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )
    assert form.status_code == 415
    text = client.post(
        "/api/v1/auth/login", content=b'{"token": "x"}', headers={"Content-Type": "text/plain"}
    )
    assert text.status_code == 415
    assert service.auth.guard.failures("198.51.100.7") == 0


def test_header_credentials_need_no_origin_and_do_not_create_sessions(
    service: ServiceUnderTest,
) -> None:
    response = service.client().get("/api/v1/system", headers=BEARER)
    assert response.status_code == 200
    assert "set-cookie" not in response.headers
    assert len(service.auth.sessions) == 0


def test_sessions_expire_after_their_lifetime(service: ServiceUnderTest) -> None:
    client = service.client()
    client.post("/api/v1/auth/login", json={"token": TOKEN})
    service.clock.advance(SESSION_LIFETIME_SECONDS - 1)
    assert client.get("/api/v1/system").status_code == 200
    service.clock.advance(1)
    assert client.get("/api/v1/system").status_code == 401


def test_session_store_is_bounded_and_keeps_only_digests() -> None:
    clock = FakeClock()
    store = SessionStore(clock, max_sessions=3)
    ids = [store.create() for _ in range(5)]
    assert len(store) == 3
    assert not store.is_valid(ids[0])
    assert not store.is_valid(ids[1])
    assert all(store.is_valid(session_id) for session_id in ids[2:])
    assert all(session_id.encode() not in repr(vars(store)).encode() for session_id in ids)
    assert not store.is_valid("x" * 10_000)
    assert not store.is_valid("")


def test_injected_empty_stores_are_used(make_service: MakeService) -> None:
    from server_stub.service.auth import Authenticator
    from server_stub.service.guard import BruteForceGuard

    service = make_service()
    clock = FakeClock()
    sessions = SessionStore(clock)
    guard = BruteForceGuard(clock)
    authenticator = Authenticator(service.settings, sessions=sessions, guard=guard)
    assert authenticator.sessions is sessions
    assert authenticator.guard is guard
