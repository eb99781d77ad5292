"""A wrong or missing gateway token, as the official MCP client (the one docs/gateway.md shows)
reports it: the gateway's 401 carries a JSON-RPC error, which the SDK raises as the message
(without it, only "Server returned an error response"); docs/hosts.md's table says the same."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import httpx2
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from tests.mcp.conftest import PortalStub
from tests.mcp.test_mcp_gateway import GATEWAY_TOKEN, start_gateway
from tests.support import ROOT

pytestmark = pytest.mark.e2e

HOSTS_PAGE = (ROOT / "docs" / "hosts.md").read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def url(portal: PortalStub, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    log = tmp_path_factory.mktemp("gateway") / "gateway.log"
    with start_gateway(portal, log, token=GATEWAY_TOKEN) as server:
        yield server.base_url + "/mcp"


def raised(url: str, headers: dict[str, str]) -> MCPError:
    async def connect() -> None:
        async with (
            httpx2.AsyncClient(headers=headers) as http,
            streamable_http_client(url, http_client=http) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()

    with pytest.raises(BaseException) as caught:  # noqa: PT011 - unwrapped below
        asyncio.run(connect())
    error: BaseException = caught.value
    while isinstance(error, BaseExceptionGroup):
        error = error.exceptions[0]
    assert isinstance(error, MCPError), repr(error)
    return error


def test_a_wrong_token_names_the_variable_in_the_clients_error(url: str) -> None:
    error = raised(url, {"Authorization": "Bearer wrong-token-0123456789-0123456789"})
    said = str(error)
    assert said.startswith("unauthorized: the gateway token is not the one this gateway expects")
    assert "set SVC_MCP_GATEWAY_TOKEN in the client" in said
    assert GATEWAY_TOKEN not in said
    assert f"`MCPError: {said}`" in HOSTS_PAGE


def test_a_missing_token_says_one_is_needed(url: str) -> None:
    said = str(raised(url, {}))
    assert said.startswith("unauthorized: this gateway needs a bearer token: set SVC_MCP_GATEWAY")
    assert "a missing token: `unauthorized: this gateway needs a bearer token: ...`" in HOSTS_PAGE
