"""schemathesis over both stubs, in process: no 5xx, no undocumented status, no response that
breaks its schema. A share of the cases carries a valid credential of each kind, so the gated
routes are exercised past their gates; the rest carry whatever schemathesis generates (random
bearer tokens, API tokens, cookies and JWTs included)."""

from __future__ import annotations

import schemathesis
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from schemathesis import Case
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from tests.openapi.conftest import WORKDIR
from tests.openapi.stubs import PORTAL_ROLES, make_portal, make_service

CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]
BOUNDED = settings(
    max_examples=25,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
)
CREDENTIAL_HEADERS = {"authorization", "x-api-token", "cookie", "cf-access-jwt-assertion"}

PORTAL = make_portal(WORKDIR / "portal")
SERVICE = make_service(WORKDIR / "service")
portal_schema = schemathesis.openapi.from_asgi("/openapi.json", PORTAL.app)
service_schema = schemathesis.openapi.from_asgi("/openapi.json", SERVICE.app)


def call_as(case: Case, headers: dict[str, str] | None) -> None:
    """Calls as this caller (None: with what was generated) and validates the answer."""
    if headers is not None:
        kept = {
            k: v for k, v in (case.headers or {}).items() if k.lower() not in CREDENTIAL_HEADERS
        }
        case.headers = {**kept, **headers}
        case.cookies = {}
    response = case.call()
    case.validate_response(response, checks=CHECKS)
    media_type = (response.headers.get("content-type") or [""])[0]
    if media_type.startswith("application/json"):
        body = response.json()
        if isinstance(body, dict) and "ok" in body:
            assert body["ok"] is (response.status_code < 400)


@portal_schema.given(caller=st.sampled_from(["generated", "anonymous", "proxy", *PORTAL_ROLES]))
@portal_schema.parametrize()
@BOUNDED
def test_portal_conforms(case: Case, caller: str) -> None:
    call_as(case, None if caller == "generated" else PORTAL.credentials[caller])


@service_schema.given(caller=st.sampled_from(["generated", *SERVICE.credentials]))
@service_schema.parametrize()
@BOUNDED
def test_service_conforms(case: Case, caller: str) -> None:
    SERVICE.forgive()
    call_as(case, None if caller == "generated" else SERVICE.credentials[caller])
