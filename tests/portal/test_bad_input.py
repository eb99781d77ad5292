"""Hostile and malformed requests get a 4xx envelope, never a 500."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient

from tests.portal.conftest import ENDPOINTS, PortalData

PRINTABLE_ASCII = st.characters(min_codepoint=32, max_codepoint=126)


def assert_envelope(response_json: object, code: str) -> None:
    assert isinstance(response_json, dict)
    assert response_json["ok"] is False
    assert response_json["error"]["code"] == code
    assert isinstance(response_json["error"]["message"], str)


@pytest.mark.parametrize(
    "path", ["/", "/api", "/api/", "/api/catalog/1", "/api/nope", "/../etc/passwd", "/api/%00"]
)
def test_unknown_paths_are_404_envelopes(client: TestClient, path: str) -> None:
    response = client.get(path)
    assert response.status_code == 404
    assert_envelope(response.json(), "not_found")


def test_oversized_headers_are_431(client: TestClient) -> None:
    response = client.get("/api/catalog", headers={"X-Filler": "a" * 9000})
    assert response.status_code == 431
    assert_envelope(response.json(), "headers_too_large")


@pytest.mark.parametrize(
    "authorization",
    [
        "Bearer",
        "Bearer ",
        "Basic dXNlcjpwYXNz",
        "bearer not-a-session",
        "Bearer " + "x" * 5000,
        "Bearer pst_\u00e9\u00e9",
        "Token abc",
    ],
)
def test_garbage_bearer_tokens_are_401(client: TestClient, authorization: str) -> None:
    response = client.get("/api/catalog", headers={b"Authorization": authorization.encode()})
    assert response.status_code == 401
    assert_envelope(response.json(), "unauthorized")


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"limit": "0"}, "limit"),
        ({"limit": "1001"}, "limit"),
        ({"limit": "-1"}, "limit"),
        ({"limit": "ten"}, "limit"),
        ({"limit": "1e3"}, "limit"),
        ({"cursor": "garbage!"}, "cursor"),
        ({"cursor": "eDo1"}, "cursor"),  # "x:5": a prefix this server never issues
        ({"cursor": "A" * 200}, "cursor"),
    ],
)
def test_bad_paging_values_are_400(
    client: TestClient, portal_data: PortalData, params: dict[str, str], message: str
) -> None:
    response = client.get("/api/audit", params=params, headers=portal_data.headers("human_auditor"))
    assert response.status_code == 400
    assert_envelope(response.json(), "bad_request")
    assert message in response.json()["error"]["message"]


@settings(max_examples=150, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    path=st.sampled_from(ENDPOINTS),
    limit=st.one_of(st.none(), st.text(max_size=12)),
    cursor=st.one_of(st.none(), st.text(max_size=80)),
    authorization=st.one_of(st.none(), st.text(alphabet=PRINTABLE_ASCII, max_size=120)),
)
def test_fuzzed_requests_never_fail_with_a_5xx(
    client: TestClient,
    path: str,
    limit: str | None,
    cursor: str | None,
    authorization: str | None,
) -> None:
    params = {k: v for k, v in {"limit": limit, "cursor": cursor}.items() if v is not None}
    headers = {"Authorization": authorization} if authorization is not None else {}
    response = client.get(path, params=params, headers=headers)
    assert response.status_code < 500
    body = response.json()
    assert body["ok"] is (response.status_code == 200)
    if not body["ok"]:
        assert set(body["error"]) == {"code", "message"}
