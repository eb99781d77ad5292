"""Who did what, from the OAuth gateway's log alone, on real processes (a real authorization server,
the real gateway, the portal stub): each access line carries the time and the request id the
portal's access line carries too; two people whose subjects are e-mails of one domain are told
apart with neither address nor domain printed; a tool name cannot forge a field; refused tokens
leave one folded line per source; a refused write reaches the official MCP client as a JSON-RPC
error naming `svc:intel`, and the session goes on."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import ec
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from tests import support_stub_data as stub_data
from tests.mcp.conftest import PortalStub
from tests.mcp.test_mcp_gateway import MCP_HEADERS
from tests.oauth.conftest import (
    AuthServer,
    auth_server,
    service_client,
    signing_key,
    start_gateway,
)
from tests.support import PORT, Server, reserved_port, running_server

ACCESS_LINE = re.compile(
    r"^svc-mcp --http: (\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ) request_id=([0-9a-f]{32}) "
    r"status=(\d+) (.*)$"
)
FIELD = re.compile(r'(\w+)=("(?:[^"\\]|\\.)*")')


@dataclass
class Stack:
    gateway: Server
    url: str
    idp: AuthServer
    key: ec.EllipticCurvePrivateKey
    portal_log: Path

    def token(self, sub: str, scope: str = "svc:read") -> str:
        now = int(time.time())
        claims = {"iss": self.idp.issuer, "aud": self.url, "sub": sub, "client_id": "team-host"}
        claims |= {"scope": scope, "iat": now, "exp": now + 600}
        return jwt.encode(claims, self.key, "ES256", headers={"kid": "k1", "typ": "at+jwt"})

    def call(self, token: str, tool: str, arguments: dict[str, Any] | None = None) -> Any:
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call"}
        body["params"] = {"name": tool, "arguments": arguments or {}}
        headers = {**MCP_HEADERS, "Authorization": f"Bearer {token}"}
        return httpx.post(self.url, json=body, headers=headers, timeout=30)


@pytest.fixture(scope="module")
def stack(idp_root: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    root = tmp_path_factory.mktemp("oauth-audit")
    data = root / "data"
    stub_data.portal_folder(data)
    session = stub_data.portal_session(data, "alice", ttl="1h")
    with reserved_port() as port:
        url = f"http://127.0.0.1:{port}/mcp"
        with (
            running_server(
                ["-m", "server_stub", "portal", "--data", str(data), "--port", PORT],
                log_path=root / "portal.log",
                ready_path="/api/page",
            ) as portal,
            auth_server(idp_root, [url], [service_client("reader", "svc:read")], "k1") as (
                idp,
                key,
            ),
            start_gateway(
                PortalStub(portal.base_url, {"auditor": session}), root / "gw.log", idp.issuer, port
            ) as gateway,
        ):
            yield Stack(gateway, url, idp, key, portal.log_path)


def access_lines(log: str) -> list[tuple[str, str, dict[str, str]]]:
    """(time, request id, fields) of each access line."""
    found = []
    for line in log.splitlines():
        if (match := ACCESS_LINE.match(line)) is not None:
            fields = {name: json.loads(value) for name, value in FIELD.findall(match.group(4))}
            found.append((match.group(1), match.group(2), fields))
    return found


def test_each_person_is_told_apart_by_time_and_request_id_without_their_address(
    stack: Stack,
) -> None:
    before = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 1))
    for person in ("alice@team.example", "bob@team.example"):
        answer = stack.call(stack.token(person), "portal_catalog")
        assert answer.status_code == 200
        assert answer.json()["result"]["isError"] is False
    log = stack.gateway.log()
    calls = [line for line in access_lines(log) if line[2].get("tool") == "portal_catalog"]
    assert len(calls) == 2, log
    (alice_at, alice_id, alice), (bob_at, bob_id, bob) = calls
    assert before <= alice_at <= bob_at
    assert re.fullmatch(r"email:[0-9a-f]{12}", alice["sub"])
    assert re.fullmatch(r"email:[0-9a-f]{12}", bob["sub"])
    assert alice["sub"] != bob["sub"]
    # The same person keeps their name.
    stack.call(stack.token("alice@team.example"), "portal_catalog")
    assert access_lines(stack.gateway.log())[-1][2]["sub"] == alice["sub"]
    for printed in ("alice", "bob", "team.example"):
        assert printed not in log
    # The portal's access line carries the id the gateway's line carries.
    portal_log = stack.portal_log.read_text()
    for request_id in (alice_id, bob_id):
        assert f'"request_id":"{request_id}"' in portal_log, (request_id, portal_log[-2000:])
    assert alice_id != bob_id


def test_a_tool_name_cannot_forge_the_caller(stack: Stack) -> None:
    forged = 'portal_catalog sub="u-admin" client_id="trusted-ci"'
    assert stack.call(stack.token("carol"), forged).status_code == 200
    (_, _, fields) = access_lines(stack.gateway.log())[-1]
    assert fields["tool"] == forged
    assert fields["sub"] == "carol"
    assert fields["client_id"] == "team-host"


def test_refused_tokens_leave_one_folded_line_per_source(stack: Stack) -> None:
    stranger, _ = signing_key("k1")
    forged = jwt.encode(
        {"iss": stack.idp.issuer, "aud": stack.url, "sub": "root", "exp": int(time.time()) + 600},
        stranger,
        "ES256",
        headers={"kid": "k1", "typ": "at+jwt"},
    )
    for _ in range(40):
        assert stack.call(forged, "portal_catalog").status_code == 401
    assert stack.call("not-even-a-jwt", "portal_catalog").status_code == 401
    refused = [line for line in stack.gateway.log().splitlines() if "token refused" in line]
    assert len(refused) == 1, refused
    assert 'source="127.0.0.1" reason="invalid_token"' in refused[0]
    assert forged not in stack.gateway.log()


def test_a_refused_write_reaches_the_official_client_naming_the_scope(stack: Stack) -> None:
    token = stack.idp.token("reader", scope="svc:read", resource=stack.url)

    async def session() -> tuple[str, bool]:
        headers = {"Authorization": f"Bearer {token}"}
        async with (
            httpx2.AsyncClient(headers=headers, timeout=30) as http,
            streamable_http_client(stack.url, http_client=http) as (read, write),
            ClientSession(read, write) as mcp,
        ):
            await mcp.initialize()
            with pytest.raises(MCPError) as refused:
                await mcp.call_tool("submit_intel", {"envelope": {}})
            after = await mcp.call_tool("portal_catalog", {})
            return str(refused.value), after.is_error

    message, failed_after = anyio.run(session)
    assert "svc:intel" in message
    assert "Server returned an error response" not in message
    assert failed_after is False  # the session goes on
    # The header a host steps up by is kept.
    answer = stack.call(token, "submit_intel", {"envelope": {}})
    assert answer.status_code == 403
    assert 'error="insufficient_scope", scope="svc:intel"' in answer.headers["WWW-Authenticate"]
    assert "svc:intel" in answer.json()["error"]["message"]
