"""Passkey registration, login and management against the ASGI app, with a software authenticator.

Every bad login assertion must be a counted guard failure; a good one clears the counter and sets
`svc_session` like the token login does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from httpx import Response
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient

from server_stub.service.challenges import CHALLENGE_TTL_SECONDS
from server_stub.service.guard import MAX_FAILURES
from server_stub.service.passkey_store import MAX_PASSKEYS, PasskeyStore
from server_stub.service.passkeys import PREFIX, PasskeyRoutes
from tests.service.authenticator import SoftwareAuthenticator
from tests.service.conftest import BEARER, PEER, TOKEN, MakeService, ServiceUnderTest

ORIGIN = "http://testserver"
RP_ID = "testserver"


def signed_in(service: ServiceUnderTest, peer: str = PEER) -> TestClient:
    """A browser-like client with a token session and a same-origin Origin on every request."""
    client = service.client(peer)
    client.headers["Origin"] = ORIGIN
    assert client.post("/api/v1/auth/login", json={"token": TOKEN}).status_code == 200
    return client


def options(client: TestClient, ceremony: str) -> dict[str, Any]:
    response = client.post(f"{PREFIX}/{ceremony}/options")
    assert response.status_code == 200, response.text
    data: dict[str, Any] = response.json()["data"]
    return data


def register(
    client: TestClient, authenticator: SoftwareAuthenticator, label: str = "laptop", **bend: Any
) -> Response:
    credential = authenticator.attest(
        options(client, "register"), bend.pop("origin", ORIGIN), **bend
    )
    return client.post(f"{PREFIX}/register", json={"label": label, "credential": credential})


def login(client: TestClient, authenticator: SoftwareAuthenticator, **bend: Any) -> Response:
    credential = authenticator.assertion(
        options(client, "login"), bend.pop("origin", ORIGIN), **bend
    )
    return client.post(f"{PREFIX}/login", json={"credential": credential})


def passkeys(service: ServiceUnderTest) -> PasskeyStore:
    routes = service.app.state.passkeys
    assert isinstance(routes, PasskeyRoutes)
    assert routes.store is not None
    return routes.store


@pytest.fixture
def registered(service: ServiceUnderTest) -> SoftwareAuthenticator:
    authenticator = SoftwareAuthenticator()
    response = register(signed_in(service, "192.0.2.99"), authenticator)
    assert response.status_code == 201, response.text
    return authenticator


# --- the good path -------------------------------------------------------------------------------


def test_register_then_login_sets_a_session_like_the_token_login(
    service: ServiceUnderTest,
) -> None:
    operator = signed_in(service)
    creation = options(operator, "register")
    assert creation["rp"] == {"id": RP_ID, "name": "svc dashboard"}
    assert creation["authenticatorSelection"]["residentKey"] == "required"
    assert creation["attestation"] == "none"
    assert creation["timeout"] == CHALLENGE_TTL_SECONDS * 1000
    authenticator = SoftwareAuthenticator()
    credential = authenticator.attest(creation, ORIGIN)
    response = operator.post(
        f"{PREFIX}/register", json={"label": " laptop ", "credential": credential}
    )
    assert response.status_code == 201, response.text
    listing = response.json()["data"]
    assert listing["id"] == authenticator.id
    assert listing["label"] == "laptop"
    assert listing["rp_id"] == RP_ID
    assert listing["created_at"].endswith("Z")
    assert listing["last_used_at"] is None
    assert set(listing) == {"id", "label", "rp_id", "created_at", "last_used_at"}

    browser = service.client()
    browser.headers["Origin"] = ORIGIN
    assert browser.get("/api/v1/system").status_code == 401
    request_options = options(browser, "login")
    assert request_options["rpId"] == RP_ID
    assert request_options["allowCredentials"] == []
    response = browser.post(
        f"{PREFIX}/login", json={"credential": authenticator.assertion(request_options, ORIGIN)}
    )
    assert response.status_code == 200, response.text
    assert response.json()["data"] == {
        "auth_required": True,
        "authenticated": True,
        "session_expires_in": 43200,
    }
    cookie = response.headers["set-cookie"]
    assert cookie.startswith("svc_session=")
    assert "HttpOnly" in cookie
    assert "SameSite=strict" in cookie or "samesite=strict" in cookie.lower()
    assert browser.get("/api/v1/system").status_code == 200

    (stored,) = passkeys(service).passkeys()
    assert stored.sign_count == authenticator.sign_count == 1
    assert stored.last_used_at is not None


def test_an_authenticator_without_a_counter_may_keep_reporting_zero(
    service: ServiceUnderTest,
) -> None:
    authenticator = SoftwareAuthenticator(counts=False)
    assert register(signed_in(service), authenticator).status_code == 201
    for _ in range(3):
        assert login(service.client(), authenticator).status_code == 200
    assert passkeys(service).passkeys()[0].sign_count == 0


def test_the_counter_must_grow_once_it_is_nonzero(
    service: ServiceUnderTest, registered: SoftwareAuthenticator
) -> None:
    client = service.client()
    assert login(client, registered, counter=5).status_code == 200
    assert login(client, registered, counter=5).status_code == 401
    assert login(client, registered, counter=3).status_code == 401
    assert login(client, registered, counter=0).status_code == 401
    assert service.auth.guard.failures(PEER) == 3
    assert login(client, registered, counter=6).status_code == 200
    assert service.auth.guard.failures(PEER) == 0


# --- bad login assertions: a counted failure, unless the challenge is missing -------------------

BadLogin = Callable[[ServiceUnderTest, TestClient, SoftwareAuthenticator], Response]


def _replayed(
    service: ServiceUnderTest, client: TestClient, key: SoftwareAuthenticator
) -> Response:
    credential = key.assertion(options(client, "login"), ORIGIN)
    assert client.post(f"{PREFIX}/login", json={"credential": credential}).status_code == 200
    client.cookies.clear()
    return client.post(f"{PREFIX}/login", json={"credential": credential})


def _expired(service: ServiceUnderTest, client: TestClient, key: SoftwareAuthenticator) -> Response:
    request_options = options(client, "login")
    service.clock.advance(CHALLENGE_TTL_SECONDS)
    return client.post(
        f"{PREFIX}/login", json={"credential": key.assertion(request_options, ORIGIN)}
    )


def _registration_challenge(
    service: ServiceUnderTest, client: TestClient, key: SoftwareAuthenticator
) -> Response:
    creation = options(signed_in(service, "192.0.2.98"), "register")
    forged = key.assertion({"challenge": creation["challenge"], "rpId": RP_ID}, ORIGIN)
    return client.post(f"{PREFIX}/login", json={"credential": forged})


def _made_up_challenge(
    service: ServiceUnderTest, client: TestClient, key: SoftwareAuthenticator
) -> Response:
    forged = key.assertion({"challenge": "AAAAAAAAAAAAAAAAAAAAAA", "rpId": RP_ID}, ORIGIN)
    return client.post(f"{PREFIX}/login", json={"credential": forged})


MISSING_CHALLENGES: dict[str, BadLogin] = {
    "replayed challenge": _replayed,
    "expired challenge": _expired,
    "challenge of a registration": _registration_challenge,
    "made-up challenge": _made_up_challenge,
}
BAD_LOGINS: dict[str, BadLogin] = {
    "wrong origin": lambda _, c, k: login(c, k, origin="http://evil.example"),
    "wrong RP id": lambda _, c, k: login(c, k, rp_id="evil.example"),
    "unknown credential": lambda _, c, k: login(c, SoftwareAuthenticator()),
    "bad signature": lambda _, c, k: login(c, k, corrupt_signature=True),
    "user presence missing": lambda _, c, k: login(c, k, user_present=False),
    "counter regression": lambda _, c, k: login(c, k, counter=k.sign_count),
}


@pytest.mark.parametrize("case", BAD_LOGINS)
def test_a_bad_assertion_is_a_counted_failure_and_a_good_login_clears_it(
    service: ServiceUnderTest, registered: SoftwareAuthenticator, case: str
) -> None:
    client = service.client()
    client.headers["Origin"] = ORIGIN
    assert login(client, registered).status_code == 200  # the counter is nonzero from here on
    client.cookies.clear()
    response = BAD_LOGINS[case](service, client, registered)
    assert response.status_code == 401, response.text
    assert response.json()["error"]["code"] == "unauthorized"
    assert "passkey was not accepted" in response.json()["error"]["message"]
    assert "set-cookie" not in response.headers
    assert service.auth.guard.failures(PEER) == 1
    assert client.get("/api/v1/system").status_code == 401
    assert login(client, registered).status_code == 200
    assert service.auth.guard.failures(PEER) == 0


@pytest.mark.parametrize("case", MISSING_CHALLENGES)
def test_a_missing_challenge_is_refused_and_not_counted(
    service: ServiceUnderTest, registered: SoftwareAuthenticator, case: str
) -> None:
    """Unknown, expired, used or another ceremony's: nothing presented could have verified, and a
    flood may have cost the holder its challenge, so it is no failed credential."""
    client = service.client()
    client.headers["Origin"] = ORIGIN
    assert login(client, registered).status_code == 200
    client.cookies.clear()
    response = MISSING_CHALLENGES[case](service, client, registered)
    assert response.status_code == 400, response.text
    assert "challenge is unknown, expired or already used" in response.json()["error"]["message"]
    assert "set-cookie" not in response.headers
    assert service.auth.guard.failures(PEER) == 0
    assert login(client, registered).status_code == 200


def test_bad_assertions_lock_the_address_like_wrong_tokens(
    service: ServiceUnderTest, registered: SoftwareAuthenticator
) -> None:
    client = service.client()
    statuses = []
    for _ in range(MAX_FAILURES):
        statuses.append(login(client, registered, corrupt_signature=True).status_code)
        # Options and assertion are two of the address's 10 login POSTs a minute.
        service.clock.advance(15)
    assert statuses == [401] * (MAX_FAILURES - 1) + [429]
    # Locked: neither options nor a good assertion get through, and nothing is counted.
    locked = client.post(f"{PREFIX}/login/options")
    assert locked.status_code == 429
    assert locked.json()["error"]["code"] == "locked_out"
    assert int(locked.headers["Retry-After"]) > 0
    # Another address is not affected.
    assert login(service.client("203.0.113.5"), registered).status_code == 200


def test_passkey_logins_spend_the_login_flood_budget_and_their_options_do_not(
    service: ServiceUnderTest, registered: SoftwareAuthenticator
) -> None:
    # The fixture's token login, then 59 passkey logins: 60 login POSTs; the options asked for
    # on the way are charged to their senders only.
    for index in range(59):
        assert login(service.client(f"10.1.0.{index}"), registered).status_code == 200
    assert service.client("10.2.0.1").post(f"{PREFIX}/login/options").status_code == 200
    refused = login(service.client("10.2.0.2"), registered)
    assert refused.status_code == 429
    assert refused.json()["error"]["code"] == "rate_limited"


def test_options_from_many_addresses_leave_logins_open(service: ServiceUnderTest) -> None:
    """Six addresses asking for options as fast as they may spend only their own allowance."""
    for sender in range(6):
        client = service.client(f"10.3.0.{sender}")
        for _ in range(10):
            assert client.post(f"{PREFIX}/login/options").status_code == 200
        refused = client.post(f"{PREFIX}/login/options")
        assert refused.status_code == 429
        assert "from this address" in refused.json()["error"]["message"]
    login = service.client("10.4.0.1").post("/api/v1/auth/login", json={"token": TOKEN})
    assert login.status_code == 200


def test_options_with_a_host_that_names_no_relying_party_cost_nothing(
    service: ServiceUnderTest,
) -> None:
    """An address is no relying party: 400, checked before the sender is charged."""
    client = service.client("10.5.0.1")
    for _ in range(12):
        refused = client.post(f"{PREFIX}/login/options", headers={"Host": "127.0.0.1:8080"})
        assert refused.status_code == 400
        assert "passkeys need a host name" in refused.json()["error"]["message"]
    assert client.post(f"{PREFIX}/login/options").status_code == 200


@pytest.mark.parametrize(
    ("body", "content_type"),
    [
        (b"{}", "application/json"),
        (b'{"credential": "x"}', "application/json"),
        (b'{"credential": {}}', "application/json"),
        (b'{"credential": {"id": "a", "rawId": "a", "type": "public-key"}}', "application/json"),
        (b"[]", "application/json"),
        (b"not json", "application/json"),
    ],
)
def test_malformed_login_bodies_are_refused_and_counted(
    service: ServiceUnderTest, body: bytes, content_type: str
) -> None:
    response = service.client().post(
        f"{PREFIX}/login", content=body, headers={"Content-Type": content_type}
    )
    assert response.status_code == 400, response.text
    assert service.auth.guard.failures(PEER) == 1


def test_a_login_body_of_another_media_type_is_415_and_not_counted(
    service: ServiceUnderTest,
) -> None:
    response = service.client().post(
        f"{PREFIX}/login", content=b'{"credential": {}}', headers={"Content-Type": "text/plain"}
    )
    assert response.status_code == 415
    assert service.auth.guard.failures(PEER) == 0


def test_login_from_a_foreign_page_is_refused_without_counting(
    service: ServiceUnderTest, registered: SoftwareAuthenticator
) -> None:
    client = service.client()
    client.headers["Origin"] = "https://evil.example"
    assert client.post(f"{PREFIX}/login/options").status_code == 403
    assert service.auth.guard.failures(PEER) == 0


# --- registration --------------------------------------------------------------------------------


def test_registration_needs_a_session_and_a_same_origin_page(
    service: ServiceUnderTest,
) -> None:
    anonymous = service.client()
    assert anonymous.post(f"{PREFIX}/register/options").status_code == 401
    scripted = service.client().post(f"{PREFIX}/register/options", headers=BEARER)
    assert scripted.status_code == 403
    assert "browser session" in scripted.json()["error"]["message"]
    operator = signed_in(service)
    del operator.headers["Origin"]
    for origin in (None, "https://evil.example"):
        headers = {"Origin": origin} if origin else {}
        assert operator.post(f"{PREFIX}/register/options", headers=headers).status_code == 403
    assert service.auth.guard.failures(PEER) == 0


@pytest.mark.parametrize(
    ("bend", "message"),
    [
        ({"origin": "http://evil.example"}, "origin"),
        ({"rp_id": "evil.example"}, "RP ID"),
        ({"user_present": False}, "User presence"),
    ],
)
def test_a_bad_registration_is_refused_and_not_counted(
    service: ServiceUnderTest, bend: dict[str, Any], message: str
) -> None:
    response = register(signed_in(service), SoftwareAuthenticator(), **bend)
    assert response.status_code == 400, response.text
    assert message in response.json()["error"]["message"]
    assert len(passkeys(service)) == 0
    assert service.auth.guard.failures(PEER) == 0


def test_a_registration_challenge_is_single_use_and_expires(service: ServiceUnderTest) -> None:
    operator = signed_in(service)
    authenticator = SoftwareAuthenticator()
    credential = authenticator.attest(options(operator, "register"), ORIGIN)
    body = {"label": "", "credential": credential}
    first = operator.post(f"{PREFIX}/register", json=body)
    assert first.status_code == 201
    assert first.json()["data"]["label"] == "Passkey 1"
    replay = operator.post(f"{PREFIX}/register", json=body)
    assert replay.status_code == 400
    assert "challenge" in replay.json()["error"]["message"]
    late = authenticator.attest(options(operator, "register"), ORIGIN)
    service.clock.advance(CHALLENGE_TTL_SECONDS)
    assert (
        operator.post(f"{PREFIX}/register", json={"label": "", "credential": late}).status_code
        == 400
    )


def test_the_same_passkey_is_not_registered_twice_and_the_list_is_bounded(
    service: ServiceUnderTest, registered: SoftwareAuthenticator
) -> None:
    operator = signed_in(service)
    again = register(operator, registered)
    assert again.status_code == 409
    assert options(operator, "register")["excludeCredentials"] == [
        {"id": registered.id, "type": "public-key"}
    ]
    for index in range(MAX_PASSKEYS - 1):
        assert register(operator, SoftwareAuthenticator(), label=f"key {index}").status_code == 201
    full = operator.post(f"{PREFIX}/register/options")
    assert full.status_code == 409
    assert "delete one" in full.json()["error"]["message"]


@pytest.mark.parametrize("label", ["x" * 65, "tab\there", 7])
def test_bad_labels_are_refused(service: ServiceUnderTest, label: object) -> None:
    operator = signed_in(service)
    credential = SoftwareAuthenticator().attest(options(operator, "register"), ORIGIN)
    response = operator.post(f"{PREFIX}/register", json={"label": label, "credential": credential})
    assert response.status_code == 400


# --- listing and deleting ------------------------------------------------------------------------


def test_list_and_delete_passkeys(
    service: ServiceUnderTest, registered: SoftwareAuthenticator
) -> None:
    operator = signed_in(service)
    assert service.client().get(f"{PREFIX}/credentials").status_code == 401
    listed = operator.get(f"{PREFIX}/credentials").json()["data"]
    assert [item["id"] for item in listed] == [registered.id]
    assert "public_key" not in listed[0]
    assert service.client().get(f"{PREFIX}/credentials", headers=BEARER).status_code == 200

    path = f"{PREFIX}/credentials/{registered.id}"
    del operator.headers["Origin"]
    assert operator.delete(path).status_code == 403  # cookie write without a same-origin Origin
    assert operator.delete(path, headers={"Origin": ORIGIN}).json()["data"] == {
        "deleted": registered.id
    }
    assert operator.delete(path, headers={"Origin": ORIGIN}).status_code == 404
    assert operator.get(f"{PREFIX}/credentials").json()["data"] == []
    # A deleted passkey is an unknown credential: refused and counted.
    assert login(service.client("203.0.113.9"), registered).status_code == 401
    assert service.auth.guard.failures("203.0.113.9") == 1


def test_passkey_routes_with_auth_disabled(make_service: MakeService) -> None:
    client = make_service(token="").client()
    for method, path in [
        ("POST", f"{PREFIX}/login/options"),
        ("POST", f"{PREFIX}/register/options"),
        ("GET", f"{PREFIX}/credentials"),
    ]:
        response = client.request(method, path)
        assert response.status_code == 409
        assert "auth is disabled" in response.json()["error"]["message"]


def test_methods_and_unknown_query_parameters(service: ServiceUnderTest) -> None:
    client = service.client()
    response = client.get(f"{PREFIX}/login")
    assert response.status_code == 405
    assert response.headers["Allow"] == "POST"
    assert client.post(f"{PREFIX}/login/options?x=1").status_code == 400


# --- the relying party ---------------------------------------------------------------------------


def test_the_relying_party_follows_the_host_header(service: ServiceUnderTest) -> None:
    client = service.client()
    answer = client.post(f"{PREFIX}/login/options", headers={"Host": "LocalHost:8123"})
    assert answer.json()["data"]["rpId"] == "localhost"
    by_address = client.post(f"{PREFIX}/login/options", headers={"Host": "127.0.0.1:8123"})
    assert by_address.status_code == 400
    assert "not an IP address" in by_address.json()["error"]["message"]


def test_configured_origin_wins_over_the_host_header(make_service: MakeService) -> None:
    service = make_service(webauthn_origin="https://svc.example.com")
    registered = SoftwareAuthenticator()
    operator = service.client(https=True)
    operator.headers["Origin"] = "https://svc.example.com"
    assert operator.post("/api/v1/auth/login", json={"token": TOKEN}).status_code == 200
    creation = options(operator, "register")
    assert creation["rp"]["id"] == "svc.example.com"
    assert register(operator, registered, origin="https://svc.example.com").status_code == 201
    client = service.client()
    assert login(client, registered, origin=ORIGIN).status_code == 401
    assert login(client, registered, origin="https://svc.example.com").status_code == 200


# --- robustness ----------------------------------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4)
    ),
    max_leaves=12,
)
base64ish = st.text(alphabet="ABCDEFabcdef0123456789-_=+/", max_size=60)


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    credential=st.fixed_dictionaries(
        {
            "id": base64ish,
            "rawId": base64ish,
            "type": st.sampled_from(["public-key", "other"]),
            "response": st.fixed_dictionaries(
                {
                    "clientDataJSON": base64ish,
                    "authenticatorData": base64ish,
                    "signature": base64ish,
                    "userHandle": st.none() | base64ish,
                }
            ),
        }
    )
    | json_values
)
def test_random_login_credentials_never_cause_a_5xx(
    make_service: MakeService, credential: object
) -> None:
    service = make_service()
    response = service.client().post(f"{PREFIX}/login", json={"credential": credential})
    assert response.status_code in (400, 401), response.text


# --- challenges belong to the browser that asked (issue 15) -------------------------------------


def test_a_login_challenge_is_usable_only_by_the_browser_that_asked(
    service: ServiceUnderTest, registered: SoftwareAuthenticator
) -> None:
    asker, other = service.client("203.0.113.7"), service.client(PEER)
    answer = asker.post(f"{PREFIX}/login/options")
    assert answer.status_code == 200
    cookie = answer.headers["set-cookie"]
    assert cookie.startswith("svc_passkey_login=")
    for attribute in (
        "HttpOnly",
        "Max-Age=300",
        "Path=/api/v1/auth/passkey/login",
        "SameSite=strict",
    ):
        assert attribute in cookie
    # Signed over the asker's challenge, but sent by another browser (with its own nonce, or none).
    stolen = registered.assertion(answer.json()["data"], ORIGIN)
    other.post(f"{PREFIX}/login/options")
    refused = other.post(f"{PREFIX}/login", json={"credential": stolen})
    assert refused.status_code == 401
    assert service.auth.guard.failures(PEER) == 1
    assert "svc_session" not in other.cookies
    # The refused attempt used the challenge up: the asker starts again, and then it works.
    assert asker.post(f"{PREFIX}/login", json={"credential": stolen}).status_code == 400
    signed_in_by_passkey = login(asker, registered)
    assert signed_in_by_passkey.status_code == 200
    assert 'svc_passkey_login=""' in signed_in_by_passkey.headers["set-cookie"]


def test_a_login_without_the_nonce_cookie_is_refused(
    service: ServiceUnderTest, registered: SoftwareAuthenticator
) -> None:
    client = service.client()
    credential = registered.assertion(options(client, "login"), ORIGIN)
    client.cookies.clear()
    assert client.post(f"{PREFIX}/login", json={"credential": credential}).status_code == 401


def test_a_registration_challenge_belongs_to_the_session_that_asked(
    service: ServiceUnderTest,
) -> None:
    first, second = signed_in(service, "192.0.2.1"), signed_in(service, "192.0.2.2")
    authenticator = SoftwareAuthenticator()
    credential = authenticator.attest(options(first, "register"), ORIGIN)
    body = {"label": "laptop", "credential": credential}
    refused = second.post(f"{PREFIX}/register", json=body)
    assert refused.status_code == 400
    assert "challenge is unknown, expired or already used" in refused.json()["error"]["message"]
    # The other session's attempt did not touch the asker's challenge.
    assert first.post(f"{PREFIX}/register", json=body).status_code == 201
    assert len(passkeys(service)) == 1
