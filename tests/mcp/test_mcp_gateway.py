"""The real `svc-mcp --http` gateway: DNS-rebinding protection, the bind policy, the bearer token."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import AbstractContextManager
from pathlib import Path

import httpx
import httpx2
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from svc_mcp.tools.table import TOOLS
from tests.mcp.conftest import SVC_MCP, PortalStub, process_env, run_commands
from tests.support import PORT, Server, reserved_port, running_server

GATEWAY_TOKEN = "gateway-token-for-the-tests-0123456789"
ALLOWED_NAME = "mcp.internal.test"
MCP_HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "gateway-test", "version": "1"},
    },
}


def start_gateway(
    portal: PortalStub, log_path: Path, *extra_args: str, token: str | None = None
) -> AbstractContextManager[Server]:
    # running_server reserves the port on every address, as `--host 0.0.0.0` needs.
    variables = portal.env("auditor")
    if token is not None:
        variables["SVC_MCP_GATEWAY_TOKEN"] = token
    return running_server(
        ["-m", "svc_mcp", "--http", "--port", PORT, *extra_args],
        log_path=log_path,
        ready_path="/mcp",
        env=process_env(variables),
    )


@pytest.fixture(scope="module")
def loopback_url(portal: PortalStub, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    log = tmp_path_factory.mktemp("gateway") / "loopback.log"
    with start_gateway(portal, log, "--no-auth", "--allowed-host", ALLOWED_NAME) as server:
        yield server.base_url + "/mcp"


@pytest.fixture(scope="module")
def remote_url(portal: PortalStub, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Bound to every interface with --allow-remote and a gateway token; reached on loopback."""
    log = tmp_path_factory.mktemp("gateway") / "remote.log"
    with start_gateway(
        portal, log, "--host", "0.0.0.0", "--allow-remote", token=GATEWAY_TOKEN
    ) as server:
        yield server.base_url + "/mcp"


def initialize(url: str, **headers: str) -> httpx.Response:
    return httpx.post(url, json=INITIALIZE, headers={**MCP_HEADERS, **headers})


def test_a_foreign_host_is_misdirected(loopback_url: str) -> None:
    assert initialize(loopback_url, Host="evil.example").status_code == 421
    assert initialize(loopback_url, Host="evil.example:8765").status_code == 421
    # Only digits may follow the colon: the SDK's `localhost:*` pattern is a prefix match.
    assert initialize(loopback_url, Host="localhost:evil.example").status_code == 421
    assert initialize(loopback_url, Host="127.0.0.1:80@evil.example").status_code == 421


def test_a_foreign_origin_is_forbidden(loopback_url: str) -> None:
    assert initialize(loopback_url, Origin="http://evil.example").status_code == 403
    assert initialize(loopback_url, Origin="http://localhost:evil.example").status_code == 403
    assert initialize(loopback_url, Origin="http://localhost:1.evil.example").status_code == 403


def test_loopback_hosts_and_origins_are_served(loopback_url: str) -> None:
    port = httpx.URL(loopback_url).port
    assert initialize(loopback_url).status_code == 200
    response = initialize(loopback_url, Host=f"localhost:{port}", Origin=f"http://localhost:{port}")
    assert response.status_code == 200


def test_an_allowed_host_name_is_served(loopback_url: str) -> None:
    port = httpx.URL(loopback_url).port
    named = initialize(
        loopback_url, Host=f"{ALLOWED_NAME}:{port}", Origin=f"https://{ALLOWED_NAME}"
    )
    assert named.status_code == 200
    assert initialize(loopback_url, Host=f"other.{ALLOWED_NAME}:{port}").status_code == 421


@pytest.mark.parametrize(
    ("args", "token", "says"),
    [
        (["--host", "0.0.0.0"], None, "refusing to bind 0.0.0.0"),
        (["--host", "0.0.0.0"], GATEWAY_TOKEN, "pass --allow-remote"),
        (["--host", "0.0.0.0", "--allow-remote"], None, "--allow-remote needs SVC_MCP_GATEWAY"),
        (["--host", "0.0.0.0", "--allow-remote"], "too-short", "at least 32 characters"),
        (["--host", "127.0.0.1"], "too-short", "at least 32 characters"),
    ],
    ids=["no flag no token", "token no flag", "flag no token", "short token", "short on loopback"],
)
def test_an_unsafe_bind_is_refused(
    portal: PortalStub, args: list[str], token: str | None, says: str
) -> None:
    variables = portal.env()
    if token is not None:
        variables["SVC_MCP_GATEWAY_TOKEN"] = token
    with reserved_port() as port:
        [done] = run_commands([([SVC_MCP, "--http", "--port", str(port), *args], variables)])
        assert done.returncode == 2
        assert done.stderr.startswith("svc-mcp: usage: ")
        assert says in done.stderr
        if token is not None:
            assert token not in done.stderr


def test_serving_options_need_http(portal: PortalStub) -> None:
    [done] = run_commands([([SVC_MCP, "--host", "0.0.0.0", "tools"], portal.env())])
    assert done.returncode == 2
    assert "need --http" in done.stderr


INVALID_TOKEN = (
    'Bearer error="invalid_token", '
    'error_description="the gateway token is not the one this gateway expects"'
)


@pytest.mark.parametrize(
    ("authorization", "challenge"),
    [
        (None, "Bearer"),
        ("Bearer wrong-token-0123456789-0123456789", INVALID_TOKEN),
        (f"Basic {GATEWAY_TOKEN}", "Bearer"),
        ("Bearer", "Bearer"),
    ],
    ids=["none", "wrong token", "wrong scheme", "empty"],
)
def test_without_the_gateway_token_the_answer_is_401(
    remote_url: str, authorization: str | None, challenge: str
) -> None:
    headers = {"Authorization": authorization} if authorization else {}
    response = initialize(remote_url, **headers)
    assert response.status_code == 401
    # RFC 6750: a wrong token is `invalid_token`; none at all gets the bare challenge.
    assert response.headers["WWW-Authenticate"] == challenge
    assert "set SVC_MCP_GATEWAY_TOKEN in the client" in response.json()["message"]
    assert GATEWAY_TOKEN not in response.text
    other_path = httpx.get(remote_url.removesuffix("/mcp") + "/anything")
    assert other_path.status_code == 401


def test_a_repeated_authorization_header_is_refused(remote_url: str) -> None:
    """Which of two would count is a guess a proxy in front may make the other way."""
    headers = [
        *MCP_HEADERS.items(),
        ("Authorization", f"Bearer {GATEWAY_TOKEN}"),
        ("Authorization", "Bearer wrong-token-0123456789-0123456789"),
    ]
    response = httpx.post(remote_url, json=INITIALIZE, headers=headers)
    assert response.status_code == 400
    assert "Authorization header is repeated" in response.json()["message"]


def test_with_the_gateway_token_mcp_works_and_rebinding_is_still_refused(
    remote_url: str,
) -> None:
    bearer = f"Bearer {GATEWAY_TOKEN}"
    assert initialize(remote_url, Authorization=bearer, Host="evil.example").status_code == 421
    names, identity = asyncio.run(_whoami_over(remote_url, bearer))
    assert names == [spec.name for spec in TOOLS]
    assert identity == {"id": "alice", "kind": "human", "role": "auditor"}


async def _whoami_over(url: str, authorization: str) -> tuple[list[str], object]:
    async with (
        httpx2.AsyncClient(headers={"Authorization": authorization}) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        tools = await session.list_tools()
        result = await session.call_tool("portal_whoami", {})
        return [tool.name for tool in tools.tools], result.structured_content
