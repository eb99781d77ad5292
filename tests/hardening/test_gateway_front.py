"""The gateway's front door on a real `svc-mcp --http` with a token, over loopback.

- Security round four, finding 6: `POST /mcp/` with a foreign `Host` was answered 307 to
  `http://<that host>/mcp`. The Host is now checked before anything else, and nothing redirects.
- Faults, finding 2: half-open connections from 127.0.0.1 (where every tunnel user arrives too)
  made the gateway answer a client with the right token 503 `too_many_connections`. At a cap the
  oldest connection that never sent a request now makes way.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.e2e import e2e_fixture
from tests.hardening.raw_http import closed_by_server, connect
from tests.hardening.test_gateway_auth import INITIALIZE, MCP_HEADERS, NOWHERE
from tests.mcp.conftest import process_env
from tests.support import PORT, Server, running_server

TOKEN = "front-door-test-token-7Hq2LxW9vR4mZk8P"
PER_ADDRESS = 4
TOTAL = 6
LIMITS = {
    "SVC_HTTP_HEAD_TIMEOUT": "10",
    "SVC_HTTP_MAX_CONNECTIONS_PER_ADDRESS": str(PER_ADDRESS),
    "SVC_HTTP_MAX_CONNECTIONS": str(TOTAL),
}


@e2e_fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    root: Path = tmp_path_factory.mktemp("gateway")
    with running_server(
        ["-m", "svc_mcp", "--http", "--port", PORT],
        log_path=root / "server.log",
        ready_path="/mcp",
        env=process_env(
            {
                **NOWHERE,
                **LIMITS,
                "SVC_MCP_GATEWAY_TOKEN": TOKEN,
                "XDG_STATE_HOME": str(root / "state"),
            }
        ),
    ) as started:
        yield started


@pytest.mark.parametrize("token", [TOKEN, None], ids=["with-token", "without-token"])
@pytest.mark.parametrize("path", ["/mcp/", "/mcp", "/"])
def test_a_foreign_host_is_refused_and_never_redirected(
    gateway: Server, token: str | None, path: str
) -> None:
    headers = {**MCP_HEADERS, "Host": "evil.example"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    answer = httpx.post(gateway.base_url + path, json=INITIALIZE, headers=headers, timeout=10)
    assert answer.status_code in (400, 421), answer.status_code
    assert "evil.example" not in answer.headers.get("location", "")
    assert "evil.example" not in answer.text


def test_a_trailing_slash_is_not_redirected_for_a_good_host_either(gateway: Server) -> None:
    headers = {**MCP_HEADERS, "Authorization": f"Bearer {TOKEN}"}
    answer = httpx.post(gateway.base_url + "/mcp/", json=INITIALIZE, headers=headers, timeout=10)
    assert answer.status_code == 404
    assert "location" not in answer.headers


def test_half_open_connections_make_way_for_a_client_with_the_token(gateway: Server) -> None:
    # The address's share and the server's total, all held by connections that send nothing.
    held: list[socket.socket] = [connect(gateway, "127.0.0.1") for _ in range(PER_ADDRESS)]
    held += [connect(gateway, "127.0.0.62") for _ in range(TOTAL - PER_ADDRESS)]
    try:
        answer = httpx.post(
            gateway.base_url + "/mcp",
            json=INITIALIZE,
            headers={**MCP_HEADERS, "Authorization": f"Bearer {TOKEN}"},
            timeout=10,
        )
        assert answer.status_code == 200, answer.text
        assert answer.json()["result"]["serverInfo"]
        # The oldest silent connection from that address made way, told why.
        closed, told = closed_by_server(held[0], within=5)
        assert closed
        assert told.startswith(b"HTTP/1.1 503 ")
        assert b"too_many_connections" in told
    finally:
        for sock in held:
            sock.close()
