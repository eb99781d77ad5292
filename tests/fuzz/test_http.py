"""Hostile requests to both stubs: whatever the headers, query or body, the answer is a JSON
envelope with a 2xx or 4xx status, never a 500."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from starlette.testclient import TestClient

from server_stub.service.passkeys import PREFIX
from server_stub.service.sessions import SESSION_COOKIE
from tests.fuzz.conftest import FUZZ, HEADER_TEXT, JSON_VALUES, assert_envelope
from tests.openapi.stubs import (
    PROXY_HEADER,
    SERVICE_TOKEN,
    Portal,
    Service,
    make_portal,
    make_service,
    proxy_assertion,
)

ORIGIN = "http://testserver"


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Service:
    return make_service(tmp_path_factory.mktemp("fuzz-service"))


@pytest.fixture(scope="module")
def portal(tmp_path_factory: pytest.TempPathFactory) -> Portal:
    return make_portal(tmp_path_factory.mktemp("fuzz-portal"))


def raw_headers(pairs: dict[str, str]) -> dict[bytes, bytes]:
    return {name.encode(): value.encode("latin-1") for name, value in pairs.items()}


CREDENTIAL_VALUES = st.one_of(
    HEADER_TEXT,
    st.builds(lambda t: f"Bearer {t}", HEADER_TEXT),
    st.sampled_from([SERVICE_TOKEN, f"Bearer {SERVICE_TOKEN}", f"bearer  {SERVICE_TOKEN} ", ""]),
)


@FUZZ
@given(
    authorization=st.none() | CREDENTIAL_VALUES,
    api_token=st.none() | CREDENTIAL_VALUES,
    forwarded=st.none() | HEADER_TEXT,
)
def test_service_credential_headers(
    service: Service, authorization: str | None, api_token: str | None, forwarded: str | None
) -> None:
    service.forgive()
    headers = {
        name: value
        for name, value in {
            "Authorization": authorization,
            "X-API-Token": api_token,
            "X-Forwarded-For": forwarded,
        }.items()
        if value is not None
    }
    with TestClient(service.app) as client:
        for path in ("/api/v1/system", "/api/v1/auth/status"):
            response = client.get(path, headers=raw_headers(headers))
            assert response.status_code in (200, 401, 429)
            assert_envelope(response)


PAGE_VALUES = st.one_of(
    st.text(max_size=80),
    st.integers(min_value=-(10**12), max_value=10**12).map(str),
    st.from_regex(r"\A[A-Za-z0-9_=-]{0,70}\Z"),
)


@FUZZ
@given(
    path=st.sampled_from(["/api/v1/orders", "/api/v1/fills", "/api/v1/events", "/api/v1/pnl"]),
    params=st.lists(
        st.tuples(
            st.sampled_from(["limit", "cursor", "since", "until", "symbol", "side", "x"]),
            PAGE_VALUES,
        ),
        max_size=4,
    ),
)
def test_service_query_values(service: Service, path: str, params: list[tuple[str, str]]) -> None:
    with TestClient(service.app) as client:
        response = client.get(path, params=params, headers=service.credentials["bearer"])
    assert response.status_code in (200, 400)
    assert_envelope(response)


@FUZZ
@given(
    path=st.sampled_from(["/api/catalog", "/api/audit", "/api/whoami"]),
    limit=st.none() | PAGE_VALUES,
    cursor=st.none() | PAGE_VALUES,
    authorization=st.none() | HEADER_TEXT,
    assertion=st.none()
    | HEADER_TEXT
    | st.builds(proxy_assertion, st.emails() | st.text(max_size=30)),
)
def test_portal_queries_and_credentials(
    portal: Portal,
    path: str,
    limit: str | None,
    cursor: str | None,
    authorization: str | None,
    assertion: str | None,
) -> None:
    params = {k: v for k, v in {"limit": limit, "cursor": cursor}.items() if v is not None}
    headers = {
        k: v
        for k, v in {"Authorization": authorization, PROXY_HEADER: assertion}.items()
        if v is not None
    }
    with TestClient(portal.app) as client:
        response = client.get(path, params=params, headers=raw_headers(headers))
    assert response.status_code in (200, 400, 401, 403)
    assert_envelope(response)


PASSKEY_BODIES = st.one_of(
    JSON_VALUES,
    st.fixed_dictionaries({"credential": JSON_VALUES}),
    st.fixed_dictionaries({"credential": JSON_VALUES, "label": JSON_VALUES}),
    st.fixed_dictionaries(
        {
            "credential": st.fixed_dictionaries(
                {},
                optional={
                    "id": st.text(max_size=20),
                    "rawId": st.text(max_size=20),
                    "type": st.just("public-key") | st.text(max_size=5),
                    "response": st.dictionaries(
                        st.sampled_from(
                            [
                                "clientDataJSON",
                                "authenticatorData",
                                "signature",
                                "attestationObject",
                                "userHandle",
                            ]
                        ),
                        st.from_regex(r"\A[A-Za-z0-9_-]{0,60}\Z") | JSON_VALUES,
                    ),
                },
            ),
            "label": st.text(max_size=70),
        }
    ),
)


@FUZZ
@given(
    route=st.sampled_from(["login", "register"]),
    body=PASSKEY_BODIES,
    as_text=st.booleans(),
)
def test_passkey_payloads(service: Service, route: str, body: Any, as_text: bool) -> None:
    service.forgive()
    headers = {"Origin": ORIGIN, "Content-Type": "application/json"}
    if route == "register":
        headers["Cookie"] = service.credentials["session"]["Cookie"]
    content = json.dumps(body).encode() if not as_text else str(body).encode()
    with TestClient(service.app) as client:
        response = client.post(f"{PREFIX}/{route}", content=content, headers=headers)
    assert response.status_code in (400, 401, 403, 409, 429), response.text
    assert_envelope(response)
    assert SESSION_COOKIE not in response.cookies
