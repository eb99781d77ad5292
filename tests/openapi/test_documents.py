"""The OpenAPI documents are true to the routes: every route documented, nothing else."""

from __future__ import annotations

from typing import Any

from starlette.applications import Starlette
from starlette.routing import Route
from starlette.testclient import TestClient

from server_stub.portal.app import ENDPOINTS
from server_stub.portal.openapi import PORTAL_ROUTES
from tests.openapi.conftest import WORKDIR
from tests.openapi.stubs import INTEL_SECRET, PROXY_SECRET, SERVICE_TOKEN, make_portal, make_service

PORTAL = make_portal(WORKDIR / "documents-portal")
SERVICE = make_service(WORKDIR / "documents-service")
OPEN_SERVICE = make_service(WORKDIR / "documents-open-service", token="")


def routed(app: Starlette) -> set[tuple[str, str]]:
    """(METHOD, path template) of every route; HEAD comes with GET and is not listed."""
    pairs = set()
    for route in app.routes:
        assert isinstance(route, Route), route
        pairs |= {(method, route.path) for method in route.methods or () if method != "HEAD"}
    return pairs


def documented(document: dict[str, Any]) -> set[tuple[str, str]]:
    return {(method.upper(), path) for path, item in document["paths"].items() for method in item}


def served(app: Starlette, **headers: str) -> dict[str, Any]:
    response = TestClient(app).get("/openapi.json", headers=headers)
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    document: dict[str, Any] = response.json()
    assert document["openapi"].startswith("3.1")
    return document


def test_every_route_is_documented_and_nothing_else() -> None:
    for app in (PORTAL.app, SERVICE.app, OPEN_SERVICE.app):
        assert documented(served(app)) == routed(app)


def test_the_portal_table_covers_every_endpoint() -> None:
    assert set(PORTAL_ROUTES) == set(ENDPOINTS)


def test_the_documents_are_open_and_hold_no_secrets() -> None:
    for app in (PORTAL.app, SERVICE.app):
        text = TestClient(app).get("/openapi.json", headers={"Authorization": "Bearer junk"}).text
        for secret in (SERVICE_TOKEN, INTEL_SECRET, PROXY_SECRET):
            assert secret not in text


def test_anonymous_gates_are_documented_as_403_not_401_only() -> None:
    paths = served(PORTAL.app)["paths"]
    for path, (gate, *_) in PORTAL_ROUTES.items():
        responses = paths[path]["get"]["responses"]
        assert ("403" in responses) is (gate != "anyone"), path


def test_every_failure_status_uses_the_failure_envelope() -> None:
    for app in (PORTAL.app, SERVICE.app):
        for item in served(app)["paths"].values():
            for operation in item.values():
                for status, response in operation["responses"].items():
                    if int(status) >= 400:
                        schema = response["content"]["application/json"]["schema"]
                        assert schema == {"$ref": "#/components/schemas/Failure"}


def test_security_follows_the_configuration() -> None:
    assert set(served(PORTAL.app)["components"]["securitySchemes"]) == {"session", "accessProxy"}
    assert served(SERVICE.app)["security"] == [{"bearer": []}, {"apiToken": []}, {"session": []}]
    assert served(OPEN_SERVICE.app)["security"] == [{}]
