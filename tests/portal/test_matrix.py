"""Every endpoint x every method x every caller: status code and envelope (spec 1, sections 4, 7)."""

from __future__ import annotations

import pytest
from starlette.testclient import TestClient

from tests.portal.conftest import AUDITOR_ONLY, CALLERS, ENDPOINTS, PortalData

WRITE_METHODS = ["POST", "PUT", "PATCH", "DELETE"]


def expected_get_status(path: str, caller: str) -> int:
    if path in AUDITOR_ONLY:
        return 200 if caller == "human_auditor" else 403
    if path == "/api/whoami":
        return 403 if caller == "anonymous" else 200
    return 200


@pytest.mark.parametrize("caller", list(CALLERS))
@pytest.mark.parametrize("path", ENDPOINTS)
def test_get(client: TestClient, portal_data: PortalData, path: str, caller: str) -> None:
    response = client.get(path, headers=portal_data.headers(caller))
    expected = expected_get_status(path, caller)
    assert response.status_code == expected
    body = response.json()
    if expected == 200:
        assert body["ok"] is True
        assert isinstance(body["data"], list | dict)
        assert set(body) <= {"ok", "data", "next_cursor"}
    else:
        assert body == {
            "ok": False,
            "error": {"code": "forbidden", "message": body["error"]["message"]},
        }
        assert body["error"]["message"]
    assert response.headers["cache-control"] == "no-store"


@pytest.mark.parametrize("method", WRITE_METHODS)
@pytest.mark.parametrize("caller", list(CALLERS))
@pytest.mark.parametrize("path", ENDPOINTS)
def test_every_other_method_is_405(
    client: TestClient, portal_data: PortalData, path: str, caller: str, method: str
) -> None:
    response = client.request(
        method, path, headers=portal_data.headers(caller), content=b'{"x": 1}'
    )
    assert response.status_code == 405
    assert response.headers["allow"] == "GET, HEAD"
    body = response.json()
    assert body["ok"] is False
    assert body["error"]["code"] == "method_not_allowed"
    assert method in body["error"]["message"]


@pytest.mark.parametrize("path", ENDPOINTS)
def test_head_answers_like_get_without_a_body(
    client: TestClient, portal_data: PortalData, path: str
) -> None:
    response = client.head(path, headers=portal_data.headers("human_auditor"))
    assert response.status_code == 200
    assert response.content == b""


def test_auditor_refusal_names_the_role_needed(client: TestClient, portal_data: PortalData) -> None:
    response = client.get("/api/sessions", headers=portal_data.headers("service_auditor"))
    message = response.json()["error"]["message"]
    assert "auditor role with a human session" in message


def test_whoami_returns_exactly_id_kind_role(client: TestClient, portal_data: PortalData) -> None:
    for caller, subject in CALLERS.items():
        if subject is None:
            continue
        data = client.get("/api/whoami", headers=portal_data.headers(caller)).json()["data"]
        assert set(data) == {"id", "kind", "role"}
        assert data["id"] == subject
    auditor = client.get("/api/whoami", headers=portal_data.headers("service_auditor")).json()
    assert auditor["data"] == {"id": "audit-bot", "kind": "service", "role": "auditor"}
