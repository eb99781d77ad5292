"""The HTTP client and `call_tool`, against respx: the envelope, every error status, settings read
at call time, payload checks, and the data service backend."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest
import respx

from portal_tools.models import Identity
from portal_tools.tools import AUDITOR, PORTAL_TOOLS
from svc_mcp.core.backends import SERVICE
from svc_mcp.core.calls import call_tool
from svc_mcp.core.client import fetch, new_http_client
from svc_mcp.core.connection import LOCKOUT_HINT, MAX_RESPONSE_BYTES, Connection, Payload
from svc_mcp.core.errors import (
    BadRequest,
    CallError,
    Forbidden,
    LockedOut,
    Misconfigured,
    NotFound,
    RateLimited,
    ServerError,
    Unauthorized,
    Unavailable,
    Unreachable,
)
from svc_mcp.core.results import ToolResult
from svc_mcp.core.toolspec import ToolSpec

BASE = "https://portal.test"
TOKEN = "session-token-0123456789abcdef"
WHOAMI = next(spec for spec in PORTAL_TOOLS if spec.name == "portal_whoami")
SESSIONS = next(spec for spec in PORTAL_TOOLS if spec.name == "portal_sessions")
ALICE = {"id": "alice", "kind": "human", "role": "auditor"}


def portal_connection(token: str | None = TOKEN) -> Connection:
    return Connection(
        service="the portal",
        base_url=BASE,
        base_url_variable="PORTAL_API_BASE",
        token=token,
        credential_variable="PORTAL_SESSION_TOKEN",
    )


def fetch_once(token: str | None = TOKEN, query: dict[str, str] | None = None) -> Payload:
    async def go() -> Payload:
        async with new_http_client() as http:
            return await fetch(
                http, portal_connection(token), "GET", "/api/x", query=query or {}, needs=AUDITOR
            )

    return asyncio.run(go())


def call_once(spec: ToolSpec, **arguments: object) -> ToolResult:
    async def go() -> ToolResult:
        async with new_http_client() as http:
            return await call_tool(spec, arguments, http)

    return asyncio.run(go())


def error(code: str, message: str) -> dict[str, Any]:
    return {"ok": False, "error": {"code": code, "message": message}}


def test_the_envelope_is_unwrapped_with_its_cursor() -> None:
    with respx.mock:
        route = respx.get(f"{BASE}/api/x", params={"limit": "2"}).respond(
            json={"ok": True, "data": [{"a": 1}], "next_cursor": "bzoy"}
        )
        assert fetch_once(query={"limit": "2"}) == Payload([{"a": 1}], "bzoy")
        assert route.calls.last.request.headers["Authorization"] == f"Bearer {TOKEN}"
        respx.get(f"{BASE}/api/x").respond(json={"ok": True, "data": {"b": 2}})
        assert fetch_once(token=None) == Payload({"b": 2}, None)
        assert "Authorization" not in respx.calls.last.request.headers


ERRORS = [
    pytest.param(
        401,
        error("unauthorized", "the session token is unknown or revoked"),
        {},
        TOKEN,
        Unauthorized,
        "refused the token in PORTAL_SESSION_TOKEN",
        id="401 with a token",
    ),
    pytest.param(
        401,
        error("unauthorized", "a token is required"),
        {},
        None,
        Unauthorized,
        "needs a token for GET /api/x (unauthorized: a token is required); set PORTAL_SESSION_TOKEN",
        id="401 without a token",
    ),
    pytest.param(
        403,
        error("forbidden", "the caller is reader"),
        {},
        TOKEN,
        Forbidden,
        "GET /api/x needs the auditor role with a human session; the token in "
        "PORTAL_SESSION_TOKEN belongs to an identity without it",
        id="403 with a token",
    ),
    pytest.param(
        403,
        error("forbidden", "the caller is anonymous"),
        {},
        None,
        Forbidden,
        "no token is set: set PORTAL_SESSION_TOKEN",
        id="403 without a token",
    ),
    pytest.param(
        404,
        error("not_found", "no such resource: /api/x"),
        {},
        TOKEN,
        NotFound,
        "check that PORTAL_API_BASE points at the portal",
        id="404",
    ),
    pytest.param(
        400,
        error("bad_request", "limit must be a whole number"),
        {},
        TOKEN,
        BadRequest,
        "HTTP 400 (bad_request: limit must be a whole number)",
        id="400",
    ),
    pytest.param(
        405,
        error("method_not_allowed", "POST is not allowed"),
        {"Allow": "GET, HEAD"},
        TOKEN,
        BadRequest,
        "HTTP 405",
        id="405",
    ),
    pytest.param(
        429,
        error("locked_out", "too many failed credentials"),
        {"Retry-After": "840"},
        TOKEN,
        LockedOut,
        "retry after 840 seconds; not retried automatically",
        id="429 locked out",
    ),
    pytest.param(
        429,
        error("locked_out", "too many failed credentials"),
        {},
        TOKEN,
        LockedOut,
        "retry later",
        id="429 without Retry-After",
    ),
    pytest.param(
        429,
        error("rate_limited", "login flood"),
        {"Retry-After": "12"},
        TOKEN,
        RateLimited,
        "rate limiting requests: retry after 12 seconds",
        id="429 rate limited",
    ),
    pytest.param(
        500,
        error("internal_error", "the server failed"),
        {},
        TOKEN,
        ServerError,
        "failed to answer GET /api/x: HTTP 500",
        id="500",
    ),
    pytest.param(
        503,
        error("unavailable", "data directory unreadable"),
        {"Retry-After": "7"},
        TOKEN,
        Unavailable,
        "HTTP 503 (unavailable: data directory unreadable); retry after 7 seconds",
        id="503",
    ),
    pytest.param(
        502, "<html>bad gateway</html>", {}, TOKEN, Unavailable, "no error envelope", id="502 html"
    ),
    pytest.param(
        200, {"data": [1]}, {}, TOKEN, ServerError, "without the documented envelope", id="no ok"
    ),
    pytest.param(
        200,
        {"ok": True, "data": [], "next_cursor": 5},
        {},
        TOKEN,
        ServerError,
        "without the documented envelope",
        id="bad cursor",
    ),
]


@pytest.mark.parametrize(("status", "body", "headers", "token", "kind", "says"), ERRORS)
def test_each_failure_is_typed_and_says_what_to_do(
    status: int,
    body: object,
    headers: dict[str, str],
    token: str | None,
    kind: type[CallError],
    says: str,
) -> None:
    with respx.mock:
        if isinstance(body, str):
            route = respx.get(f"{BASE}/api/x").respond(status, text=body, headers=headers)
        else:
            route = respx.get(f"{BASE}/api/x").respond(status, json=body, headers=headers)
        with pytest.raises(kind) as raised:
            fetch_once(token)
    assert route.call_count == 1, "nothing is retried"
    assert says in str(raised.value)
    assert "\n" not in str(raised.value)
    assert TOKEN not in str(raised.value)
    if isinstance(raised.value, LockedOut | RateLimited | Unavailable):
        assert raised.value.retry_after == (int(headers["Retry-After"]) if headers else None)
    if isinstance(raised.value, LockedOut):
        # The locked caller's token was not checked: the hint names the lockout, not the token.
        assert raised.value.hint == LOCKOUT_HINT
        assert "not checked" in str(raised.value)


def test_a_token_echoed_by_the_server_is_scrubbed() -> None:
    with respx.mock:
        respx.get(f"{BASE}/api/x").respond(
            401, json=error("unauthorized", f"unknown token {TOKEN}")
        )
        with pytest.raises(Unauthorized) as raised:
            fetch_once()
    assert TOKEN not in str(raised.value)
    assert "unknown token [redacted]" in str(raised.value)
    assert TOKEN not in repr(portal_connection())


def test_an_oversized_answer_is_refused() -> None:
    huge = b'{"ok": true, "data": "' + b"x" * (MAX_RESPONSE_BYTES + 1) + b'"}'
    with respx.mock:
        respx.get(f"{BASE}/api/x").respond(200, content=huge)
        with pytest.raises(ServerError, match="more than 16 MiB"):
            fetch_once()


@pytest.mark.parametrize(
    ("failure", "says"),
    [
        (httpx.ConnectError("[Errno 111] Connection refused"), "Connection refused"),
        (httpx.ConnectTimeout("timed out"), "the connection timed out"),
        (httpx.ReadTimeout("timed out"), "no answer within 10 s"),
    ],
    ids=["refused", "connect timeout", "read timeout"],
)
def test_no_answer_names_the_base_url_tried(failure: Exception, says: str) -> None:
    with respx.mock:
        respx.get(f"{BASE}/api/x").mock(side_effect=failure)
        with pytest.raises(Unreachable) as raised:
            fetch_once()
    assert raised.value.base_url == BASE
    message = str(raised.value)
    assert message.startswith(f"cannot reach the portal at {BASE} (")
    assert says in message
    assert "PORTAL_API_BASE sets the address" in message


def test_settings_are_read_at_each_call(monkeypatch: pytest.MonkeyPatch) -> None:
    """One client, three calls: whatever the environment holds at each call is used."""
    monkeypatch.setenv("PORTAL_API_BASE", BASE)

    async def three_calls() -> list[str | None]:
        seen = []
        async with new_http_client() as http:
            for token in ("token-one", "token-two", ""):
                monkeypatch.setenv("PORTAL_SESSION_TOKEN", token)
                await call_tool(WHOAMI, {}, http)
                seen.append(respx.calls.last.request.headers.get("Authorization"))
        return seen

    with respx.mock:
        respx.get(f"{BASE}/api/whoami").respond(json={"ok": True, "data": ALICE})
        seen = asyncio.run(three_calls())
    assert seen == ["Bearer token-one", "Bearer token-two", None]


def test_arguments_become_query_parameters(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PORTAL_API_BASE", BASE + "/")
    monkeypatch.delenv("PORTAL_SESSION_TOKEN", raising=False)
    with respx.mock:
        route = respx.get(f"{BASE}/api/sessions").respond(json={"ok": True, "data": []})
        assert call_once(SESSIONS, limit=5, cursor="abc") == ToolResult([], None)
        assert call_once(SESSIONS, limit=None, cursor=None) == ToolResult([], None)
    assert [dict(call.request.url.params) for call in route.calls] == [
        {"limit": "5", "cursor": "abc"},
        {},
    ]


def test_a_base_url_that_is_no_url_is_misconfigured(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PORTAL_API_BASE", "portal.example:8081")
    with pytest.raises(Misconfigured) as raised:
        call_once(WHOAMI)
    assert str(raised.value) == "PORTAL_API_BASE must be an http:// or https:// URL with a host"


@pytest.mark.parametrize(
    ("data", "says"),
    [
        ({"id": "alice", "kind": "human"}, "role: Field required"),
        ({**ALICE, "role": "superuser"}, "role: Input should be"),
        ({**ALICE, "tokenHash": "ab" * 32}, "secret-looking fields ['tokenHash']"),
        ({**ALICE, "apiKey": "ab" * 32}, "secret-looking fields ['apiKey']"),
        ({**ALICE, "sessionCookie": "ab" * 32}, "secret-looking fields ['sessionCookie']"),
        ([ALICE], "Input should be a valid dictionary"),
    ],
    ids=["missing field", "unknown role", "secret field", "key field", "cookie field", "list"],
)
def test_a_payload_that_breaks_the_contract_is_refused(
    monkeypatch: pytest.MonkeyPatch, data: object, says: str
) -> None:
    monkeypatch.setenv("PORTAL_API_BASE", BASE)
    with respx.mock:
        respx.get(f"{BASE}/api/whoami").respond(json={"ok": True, "data": data})
        with pytest.raises(ServerError) as raised:
            call_once(WHOAMI)
    message = str(raised.value)
    assert message.startswith("the portal answered GET /api/whoami with a payload that does not")
    assert says in message
    assert "ab" * 32 not in message


def test_secret_fields_inside_audit_records_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    audit = next(spec for spec in PORTAL_TOOLS if spec.name == "portal_audit")
    event = {"at": "2026-11-21T09:30:00Z", "trail": "sessions", "record": {"tokenHash": "x"}}
    monkeypatch.setenv("PORTAL_API_BASE", BASE)
    with respx.mock:
        respx.get(f"{BASE}/api/audit").respond(json={"ok": True, "data": [event]})
        with pytest.raises(ServerError, match="tokenHash"):
            call_once(audit)


def test_structured_content_is_always_an_object() -> None:
    assert ToolResult(ALICE).structured() == ALICE
    assert ToolResult([ALICE]).structured() == {"result": [ALICE]}
    assert ToolResult([ALICE], "c").structured() == {"result": [ALICE], "next_cursor": "c"}


SERVICE_WHOAMI = ToolSpec(
    name="get_identity",
    title="A data service row",
    description="A row on the data service backend, as the analytics rows will be.",
    method="GET",
    path="/api/v1/identity",
    params=(),
    returns=lambda: Identity,
    many=False,
    backend=SERVICE,
    access="a token",
    cli=("identity",),
)


@pytest.mark.parametrize(
    ("variables", "sent"),
    [
        ({"SERVICE_API_TOKEN": "service-token", "DASHBOARD_API_TOKEN": "dash"}, "service-token"),
        ({"DASHBOARD_API_TOKEN": "dashboard-token"}, "dashboard-token"),
        ({"SERVICE_API_TOKEN": "", "DASHBOARD_API_TOKEN": "dashboard-token"}, "dashboard-token"),
        ({}, None),
    ],
    ids=["service token first", "dashboard fallback", "empty falls back", "none"],
)
def test_service_rows_use_the_service_settings(
    monkeypatch: pytest.MonkeyPatch, variables: dict[str, str], sent: str | None
) -> None:
    for name in ("SERVICE_API_BASE", "SERVICE_API_TOKEN", "DASHBOARD_API_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    with respx.mock:
        route = respx.get("http://127.0.0.1:8080/api/v1/identity").respond(
            json={"ok": True, "data": ALICE}
        )
        assert call_once(SERVICE_WHOAMI) == ToolResult(ALICE)
    expected = f"Bearer {sent}" if sent else None
    assert route.calls.last.request.headers.get("Authorization") == expected


def test_a_service_401_names_both_token_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SERVICE_API_BASE", "https://service.test")
    monkeypatch.delenv("SERVICE_API_TOKEN", raising=False)
    monkeypatch.delenv("DASHBOARD_API_TOKEN", raising=False)
    with respx.mock:
        respx.get("https://service.test/api/v1/identity").respond(
            401, json=error("unauthorized", "token required")
        )
        with pytest.raises(Unauthorized) as raised:
            call_once(SERVICE_WHOAMI)
    assert str(raised.value) == (
        "the data service needs a token for GET /api/v1/identity (unauthorized: token required); "
        "set SERVICE_API_TOKEN (or DASHBOARD_API_TOKEN)"
    )
