"""Each person reaches the portal as themselves (issue 42.7): with OAuth on and the portal's own
access-proxy settings given to the gateway, the gateway presents every OAuth caller to the portal
as an access proxy would (a short-lived HS256 assertion naming them by their token's `email`), so
the portal's role gates and its access log see the person; the gateway's own session (here bob's,
a maintainer's) is never sent for them, nor their access token. The demo portal's alice is its
auditor and carol a reader; dave signs in with a name that is no e-mail."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx2
import jwt
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.server.auth.provider import AccessToken
from mcp.types import CallToolResult

from svc_mcp.core.backends import PORTAL, SERVICE
from svc_mcp.core.connection import Connection
from svc_mcp.serve.caller import CALLER
from svc_mcp.serve.oauth.portal_identity import NO_EMAIL, PortalIdentity
from svc_mcp.tools.table import TOOLS
from tests import support_stub_data as stub_data
from tests.mcp.conftest import PortalStub
from tests.oauth.conftest import auth_server, start_gateway
from tests.oauth.test_client_flow import MemoryStorage
from tests.oauth.test_step_up import host
from tests.support import PORT, Server, reserved_port, running_server

SECRET = "portal-access-proxy-secret-for-the-tests-0123456789"
ACCESS = {
    "PORTAL_ACCESS_JWT_SECRET": SECRET,
    "PORTAL_ACCESS_JWT_ISSUER": "https://access.team.example",
    "PORTAL_ACCESS_JWT_AUDIENCE": "svc-portal",
}
ALICE, CAROL, DAVE = "alice@example.test", "carol@example.test", "dave"


@dataclass(frozen=True)
class Stack:
    gateway: Server
    portal: Server
    url: str
    gateway_session: str


@pytest.fixture(scope="module")
def stack(idp_root: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    root = tmp_path_factory.mktemp("portal-identity")
    data = root / "data"
    stub_data.portal_folder(data)
    # The gateway's own session is a maintainer's: were it sent, whoami would say bob.
    session = stub_data.portal_session(data, "bob")
    with reserved_port() as port:
        url = f"http://127.0.0.1:{port}/mcp"
        with (
            running_server(
                ["-m", "server_stub", "portal", "--data", str(data), "--port", PORT],
                log_path=root / "portal.log",
                ready_path="/api/page",
                env=ACCESS,
            ) as portal,
            auth_server(idp_root, [url], [], "k1") as (idp, _),
        ):
            backend = PortalStub(portal.base_url, {"gateway": session})
            variables = {**backend.env("gateway"), **ACCESS}
            log = root / "gateway.log"
            with start_gateway(backend, log, idp.issuer, port, **variables) as gateway:
                yield Stack(gateway, portal, url, session)


def calls(url: str, person: str, *tools: str) -> dict[str, CallToolResult]:
    """`person` signs in through the official client's flow and calls `tools` in one session."""
    provider = host(url, person, MemoryStorage())

    async def session() -> dict[str, CallToolResult]:
        async with (
            httpx2.AsyncClient(auth=provider, timeout=60) as http,
            streamable_http_client(url, http_client=http) as (read, write),
            ClientSession(read, write) as mcp,
        ):
            await mcp.initialize()
            return {tool: await mcp.call_tool(tool, {}) for tool in tools}

    return anyio.run(session)


def portal_lines(portal: Server) -> list[dict[str, Any]]:
    return [
        json.loads(line) for line in portal.settled_log().splitlines() if line.startswith('{"ts"')
    ]


def test_each_person_meets_the_portals_role_gate_as_themselves(stack: Stack) -> None:
    before = len(portal_lines(stack.portal))
    carol = calls(stack.url, CAROL, "portal_whoami", "portal_audit")
    alice = calls(stack.url, ALICE, "portal_whoami", "portal_audit")
    assert carol["portal_whoami"].structured_content == {
        "id": "carol",
        "kind": "human",
        "role": "reader",
    }
    assert carol["portal_audit"].is_error is True
    assert carol["portal_audit"].structured_content is not None
    assert carol["portal_audit"].structured_content["kind"] == "forbidden"
    assert "by your sign-in's e-mail" in str(carol["portal_audit"].content)
    assert alice["portal_whoami"].structured_content == {
        "id": "alice",
        "kind": "human",
        "role": "auditor",
    }
    assert alice["portal_audit"].is_error is False
    # The portal's access log names each of them, and never the gateway's own session (bob).
    lines = portal_lines(stack.portal)[before:]
    seen = [(line["route"], line["status"], line.get("principal")) for line in lines]
    assert ("/api/audit", 403, "carol") in seen
    assert ("/api/audit", 200, "alice") in seen
    assert ("/api/whoami", 200, "carol") in seen
    assert all(principal != "bob" for _, _, principal in seen)
    # No e-mail in either log.
    assert CAROL not in stack.gateway.log() + stack.portal.log()
    assert ALICE not in stack.gateway.log() + stack.portal.log()


def test_a_token_without_an_email_reaches_the_portal_as_anonymous_and_says_so(
    stack: Stack,
) -> None:
    dave = calls(stack.url, DAVE, "portal_whoami", "portal_catalog")
    assert dave["portal_whoami"].is_error is True
    assert "no email claim" in str(dave["portal_whoami"].content)
    assert dave["portal_catalog"].is_error is False
    assert NO_EMAIL in str(dave["portal_catalog"].content)
    assert all(line.get("principal") != "bob" for line in portal_lines(stack.portal))


def test_the_assertion_is_short_lived_and_replaces_the_token() -> None:
    identity = PortalIdentity(
        "X-Access", "https://access.example", "svc-portal", SECRET, lambda: 1000
    )
    connection = Connection(
        service="the portal",
        base_url="http://127.0.0.1:1",
        base_url_variable="PORTAL_API_BASE",
        token="the-gateways-own-session-token",
        credential_variable="PORTAL_SESSION_TOKEN",
    )
    portal_row = next(spec for spec in TOOLS if spec.backend is PORTAL)
    service_row = next(spec for spec in TOOLS if spec.backend is SERVICE)
    person = AccessToken(token="", client_id="c", scopes=["svc:read"], claims={"email": CAROL})
    reset = CALLER.set(person)
    try:
        theirs = identity.delegate(portal_row, connection)
        service = identity.delegate(service_row, connection)
    finally:
        CALLER.reset(reset)
    headers = theirs.headers()
    assert "Authorization" not in headers
    claims = jwt.decode(
        headers["X-Access"],
        SECRET,
        algorithms=["HS256"],
        audience="svc-portal",
        issuer="https://access.example",
        options={"verify_exp": False},
    )
    assert claims["email"] == CAROL
    assert claims["exp"] - claims["iat"] <= 60
    # The data service is called with the gateway's token as before; no caller, no change.
    assert service.headers() == {"Authorization": "Bearer the-gateways-own-session-token"}
    assert identity.delegate(portal_row, connection) is connection
