"""Access-proxy JWTs: verified (HS256 secret or JWKS), mapped to a principal by e-mail."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm
from starlette.testclient import TestClient

from server_stub.portal.app import create_app
from server_stub.portal.settings import PortalSettings
from tests.portal.conftest import LOCAL_URL, PortalData

SECRET = "access-proxy-secret-4Kt9Wm2Xq7Bz5Lp1Rv8Nh3"
ISSUER = "https://team.access.example.test"
AUDIENCE = "portal-aud"
HEADER = "Cf-Access-Jwt-Assertion"


def claims(**overrides: Any) -> dict[str, Any]:
    now = int(time.time())
    return {
        "iss": ISSUER,
        "aud": AUDIENCE,
        "exp": now + 300,
        "email": "Alice@Example.test",
    } | overrides


@pytest.fixture
def hs_client(portal_data: PortalData, monkeypatch: pytest.MonkeyPatch) -> TestClient:
    monkeypatch.setenv("PORTAL_ACCESS_JWT_SECRET", SECRET)
    monkeypatch.setenv("PORTAL_ACCESS_JWT_ISSUER", ISSUER)
    monkeypatch.setenv("PORTAL_ACCESS_JWT_AUDIENCE", AUDIENCE)
    return TestClient(
        base_url=LOCAL_URL,
        app=create_app(portal_data.path, access_proxy=PortalSettings().access_proxy()),
    )


def whoami(client: TestClient, assertion: str) -> Any:
    return client.get("/api/whoami", headers={HEADER: assertion})


def test_a_verified_assertion_counts_as_signed_in(hs_client: TestClient) -> None:
    response = whoami(hs_client, jwt.encode(claims(), SECRET, algorithm="HS256"))
    assert response.status_code == 200
    assert response.json()["data"] == {"id": "alice", "kind": "human", "role": "auditor"}


@pytest.mark.parametrize(
    "token",
    # Built when the test runs: `claims()` at collection would be ten minutes old by then.
    [
        pytest.param(lambda: jwt.encode(claims(), "w" * 40, algorithm="HS256"), id="wrong-key"),
        pytest.param(
            lambda: jwt.encode(claims(iss="https://evil.test"), SECRET, algorithm="HS256"),
            id="issuer",
        ),
        pytest.param(
            lambda: jwt.encode(claims(aud="other"), SECRET, algorithm="HS256"), id="audience"
        ),
        pytest.param(
            lambda: jwt.encode(claims(exp=int(time.time()) - 5), SECRET, algorithm="HS256"),
            id="expired",
        ),
        pytest.param(
            lambda: jwt.encode(claims(nbf=int(time.time()) + 600), SECRET, algorithm="HS256"),
            id="not-yet",
        ),
        pytest.param(
            lambda: jwt.encode(
                {k: v for k, v in claims().items() if k != "exp"}, SECRET, algorithm="HS256"
            ),
            id="no-exp",
        ),
        pytest.param(
            lambda: jwt.encode(claims(email="mallory@example.test"), SECRET, algorithm="HS256"),
            id="unmapped",
        ),
        pytest.param(
            lambda: jwt.encode(claims(email=None), SECRET, algorithm="HS256"), id="no-email"
        ),
        pytest.param(lambda: jwt.encode(claims(), None, algorithm="none"), id="alg-none"),
        pytest.param(lambda: "not.a.jwt", id="garbage"),
        pytest.param(lambda: "", id="empty"),
    ],
)
def test_forged_expired_or_unmapped_assertions_are_401(
    hs_client: TestClient, token: Callable[[], str]
) -> None:
    response = whoami(hs_client, token())
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "unauthorized"
    assert "alice" not in response.text.lower()


def signed(**overrides: Any) -> str:
    return jwt.encode(claims(**overrides), SECRET, algorithm="HS256")


@pytest.mark.parametrize(
    "overrides",
    [
        pytest.param({"exp": float("inf")}, id="exp-infinity"),
        pytest.param({"exp": float("nan")}, id="exp-nan"),
        pytest.param({"nbf": float("-inf")}, id="nbf-minus-infinity"),
        pytest.param({"nbf": float("nan")}, id="nbf-nan"),
        pytest.param({"iat": float("inf")}, id="iat-infinity"),
        pytest.param({"iat": float("-inf")}, id="iat-minus-infinity"),
        pytest.param({"iat": float("nan")}, id="iat-nan"),
        pytest.param({"iat": "yesterday"}, id="iat-text"),
        # Seconds from the test's own now (`iat_from_now`): a time taken at collection is ten
        # minutes old by the time a long run reaches the test, past the minute of leeway.
        pytest.param({"iat_from_now": -25 * 3600}, id="iat-older-than-24h"),
        pytest.param({"iat_from_now": 600}, id="iat-in-the-future"),
    ],
)
def test_non_finite_or_implausible_times_are_401(
    hs_client: TestClient, overrides: dict[str, Any]
) -> None:
    if "iat_from_now" in overrides:
        overrides = {"iat": int(time.time()) + overrides["iat_from_now"]}
    response = whoami(hs_client, signed(**overrides))
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "unauthorized"


def test_plausible_times_verify(hs_client: TestClient) -> None:
    now = int(time.time())
    for overrides in ({"iat": now - 23 * 3600}, {"iat": now + 30}, {"iat": now, "nbf": now - 1}):
        assert whoami(hs_client, signed(**overrides)).status_code == 200, overrides


def test_without_configuration_the_header_is_ignored(portal_data: PortalData) -> None:
    client = TestClient(base_url=LOCAL_URL, app=create_app(portal_data.path))
    assert whoami(client, jwt.encode(claims(), SECRET, algorithm="HS256")).status_code == 403


def test_jwks_file_verifies_rs256(portal_data: PortalData, tmp_path: Path) -> None:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    jwk = json.loads(RSAAlgorithm.to_jwk(key.public_key())) | {"kid": "k1", "alg": "RS256"}
    jwks_file = tmp_path / "jwks.json"
    jwks_file.write_text(json.dumps({"keys": [jwk]}))
    settings = PortalSettings(
        access_jwt_jwks_file=jwks_file, access_jwt_issuer=ISSUER, access_jwt_audience=AUDIENCE
    )
    client = TestClient(
        base_url=LOCAL_URL, app=create_app(portal_data.path, access_proxy=settings.access_proxy())
    )
    good = jwt.encode(
        claims(email="bob@example.test"), key, algorithm="RS256", headers={"kid": "k1"}
    )
    assert whoami(client, good).json()["data"]["id"] == "bob"
    unknown_kid = jwt.encode(claims(), key, algorithm="RS256", headers={"kid": "k2"})
    assert whoami(client, unknown_kid).status_code == 401
    other_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    forged = jwt.encode(claims(), other_key, algorithm="RS256", headers={"kid": "k1"})
    assert whoami(client, forged).status_code == 401
    # HS256 signed with the public key as the secret: the classic confusion attack.
    assert whoami(client, jwt.encode(claims(), "x" * 40, algorithm="HS256")).status_code == 401


def test_incomplete_configuration_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PORTAL_ACCESS_JWT_SECRET", SECRET)
    with pytest.raises(ValueError, match="issuer and an audience"):
        PortalSettings().access_proxy()
    monkeypatch.setenv("PORTAL_ACCESS_JWT_SECRET", "short")
    monkeypatch.setenv("PORTAL_ACCESS_JWT_ISSUER", ISSUER)
    monkeypatch.setenv("PORTAL_ACCESS_JWT_AUDIENCE", AUDIENCE)
    with pytest.raises(ValueError, match="at least 32"):
        PortalSettings().access_proxy()
